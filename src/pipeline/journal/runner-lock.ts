/**
 * One runner per out dir. Two runners on one out dir would both find the same files fresh and submit
 * them twice, so the journal records the runner holding each out dir (a `runner_locks` row written in
 * a `BEGIN IMMEDIATE` transaction, which serialises the check and the claim across processes).
 *
 * A lock whose holder is gone (killed with -9, machine rebooted) is taken over: the holder is alive
 * only when a process with its pid exists and, where /proc tells, started at the recorded time (so a
 * recycled pid does not hold the lock forever). The journal is on a local disk (network filesystems
 * are refused), so the holder ran on this machine; a row from another host name is treated as stale.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { JOURNAL_TEXTS } from './texts.ts';

/** Who holds an out dir. */
export interface LockHolder {
  pid: number;
  /** Start time of the process (field 22 of /proc/<pid>/stat), when known. */
  procStart: string | null;
  host: string;
  /** ms since the epoch */
  acquiredAt: number;
}

/** Another live runner holds the out dir. */
export class JournalLockedError extends Error {
  override name = 'JournalLockedError';
  readonly code = 'journal_locked';
  constructor(
    readonly outDir: string,
    readonly holder: LockHolder,
  ) {
    super(JOURNAL_TEXTS.locked(outDir, holder.pid, new Date(holder.acquiredAt).toISOString()));
  }
}

/**
 * The start time of process `pid` in clock ticks since boot (field 22 of /proc/<pid>/stat), or null
 * where /proc is not there. The command name (field 2) may hold spaces and parentheses, so fields are
 * counted from the last ')'.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null; // field 22 is the 20th after the command name
  } catch {
    return null;
  }
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * True when the recorded holder still runs on this machine.
 *
 * @param thisHost - this machine's host name
 */
export function isHolderAlive(holder: LockHolder, thisHost: string = hostname()): boolean {
  if (holder.host !== thisHost) return false;
  if (!pidExists(holder.pid)) return false;
  if (holder.procStart === null) return true;
  const now = processStartTime(holder.pid);
  return now === null || now === holder.procStart;
}

interface LockRow {
  pid: number;
  proc_start: string | null;
  host: string;
  acquired_at: number;
  token: string;
}

/**
 * Claims `outDir` for this process.
 *
 * @returns the lock's token (pass it to releaseRunnerLock)
 * @throws JournalLockedError when a live runner holds it
 */
export function acquireRunnerLock(db: Database.Database, outDir: string, now: number): string {
  const token = randomUUID();
  const select = db.prepare<[string], LockRow>(
    'SELECT pid, proc_start, host, acquired_at, token FROM runner_locks WHERE out_dir = ?',
  );
  const upsert = db.prepare(
    `INSERT INTO runner_locks (out_dir, pid, proc_start, host, acquired_at, token) VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT(out_dir) DO UPDATE SET pid = excluded.pid, proc_start = excluded.proc_start,
       host = excluded.host, acquired_at = excluded.acquired_at, token = excluded.token`,
  );
  db.transaction(() => {
    const row = select.get(outDir);
    if (row) {
      const holder: LockHolder = {
        pid: row.pid,
        procStart: row.proc_start,
        host: row.host,
        acquiredAt: row.acquired_at,
      };
      if (isHolderAlive(holder)) throw new JournalLockedError(outDir, holder);
    }
    upsert.run(outDir, process.pid, processStartTime(process.pid), hostname(), now, token);
  }).immediate();
  return token;
}

/** Releases the lock taken with `token` (a lock since taken over by another runner is left alone). */
export function releaseRunnerLock(db: Database.Database, outDir: string, token: string): void {
  db.prepare('DELETE FROM runner_locks WHERE out_dir = ? AND token = ?').run(outDir, token);
}

/** The holder of `outDir`'s lock, alive or not, or null. */
export function lockHolder(db: Database.Database, outDir: string): LockHolder | null {
  const row = db
    .prepare<[string], LockRow>(
      'SELECT pid, proc_start, host, acquired_at, token FROM runner_locks WHERE out_dir = ?',
    )
    .get(outDir);
  return row
    ? { pid: row.pid, procStart: row.proc_start, host: row.host, acquiredAt: row.acquired_at }
    : null;
}
