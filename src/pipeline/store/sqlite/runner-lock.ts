/**
 * One runner per out dir. Two runners on one out dir would both find the same files fresh and submit
 * them twice, so a runner holds the out dir's lock for as long as its journal is open.
 *
 * The lock is `<out>/.genpipe/runner.lock` (in the out dir wherever the journal is), held with an
 * operating-system file lock: the file is opened as a SQLite database with a busy timeout of 0,
 * `locking_mode = EXCLUSIVE`, and a `BEGIN EXCLUSIVE` transaction is kept open on it until the journal
 * closes. Nothing is ever written to it (it stays empty). A second opener gets SQLITE_BUSY at once. The
 * lock is SQLite's POSIX advisory lock (fcntl), which the kernel drops when the holding process dies
 * (killed with -9 included), before the process becomes a zombie — so no pid is ever judged alive or
 * dead: a zombie, a recycled pid, or a runner in another pid namespace or container on the same volume
 * all decide nothing, and a lock file left behind holds nothing.
 *
 * POSIX locks belong to the process, and closing any descriptor of the file drops them: nothing in the
 * process may open runner.lock other than through SQLite (which keeps its descriptors open while one
 * of its connections holds a lock, so a refused second Journal in the same process drops nothing).
 *
 * Who holds the lock is information only, for the refusal's message: the holder writes its pid, host
 * and start time into the journal's `runner_locks` row. Taking the file lock and writing the row, and
 * failing to take it and reading the row, each happen inside one `BEGIN IMMEDIATE` transaction of the
 * journal, so a refused runner reads the row of the runner that holds the lock, never an older one
 * (unless the holder keeps its journal in another file, in which case the message says so).
 */
import { randomUUID } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { runNow } from '../step.ts';
import type { LockHolder } from '../store.ts';
import { lockHolder } from '../tables.ts';
import { JOURNAL_TEXTS } from '../texts.ts';
import { JOURNAL_FILE } from './journal-file.ts';
import { JournalFileError } from './schema.ts';
import { LOCK_SQL, PRAGMAS, SQLITE_PLANS } from './sqlite-plans.ts';
import { SqliteSql } from './sqlite-sql.ts';

export type { LockHolder };

/** Another runner holds the out dir. */
export class JournalLockedError extends Error {
  override name = 'JournalLockedError';
  readonly code = 'journal_locked';
  /**
   * @param holder - the holder as this journal records it; null when it keeps its journal elsewhere
   * @param journalPath - this runner's journal file
   */
  constructor(
    readonly outDir: string,
    readonly holder: LockHolder | null,
    journalPath: string,
  ) {
    super(
      holder
        ? JOURNAL_TEXTS.locked(
            outDir,
            holder.pid,
            new Date(holder.acquiredAt).toISOString(),
            holder.host === hostname() ? null : holder.host,
          )
        : JOURNAL_TEXTS.lockedElsewhere(outDir, journalPath),
    );
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

/** The runner lock file of an out dir: `<out>/.genpipe/runner.lock`. */
export function runnerLockPath(outDir: string): string {
  return join(outDir, JOURNAL_FILE.dirName, JOURNAL_FILE.lockFileName);
}

/** A held runner lock (give it back to releaseRunnerLock). */
export interface RunnerLock {
  /** The lock file. */
  path: string;
  /** The connection whose open transaction holds the file lock. */
  file: Database.Database;
  /** Identifies this runner's `runner_locks` row. */
  token: string;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A lock file that is not a (possibly empty) SQLite file. */
function isForeignFile(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT';
}

function lockFileError(path: string, err: unknown): JournalFileError {
  return new JournalFileError(
    isForeignFile(err)
      ? JOURNAL_TEXTS.notALockFile(path, describe(err))
      : JOURNAL_TEXTS.lockUnavailable(path, describe(err)),
  );
}

/**
 * Opens the lock file (creating it and its folder). SQLite opens a file it may not write read-only,
 * without a word, and a read-only connection cannot hold an exclusive lock (its `BEGIN EXCLUSIVE` holds
 * only a shared one, which any number of runners share): such a file is refused.
 */
function openLockFile(path: string): Database.Database {
  let file: Database.Database | null = null;
  try {
    mkdirSync(dirname(path), { recursive: true });
    file = new Database(path);
    accessSync(path, constants.W_OK);
    file.pragma(PRAGMAS.lockFile.noWait);
    return file;
  } catch (err) {
    file?.close();
    throw lockFileError(path, err);
  }
}

/**
 * Takes the lock on `file` without waiting (kept until the connection closes or the process dies).
 *
 * @returns false when another connection, in this process or any other, holds it
 */
function tryLock(file: Database.Database, path: string): boolean {
  try {
    file.pragma(PRAGMAS.lockFile.exclusive);
    // Nothing is written: no rollback journal file either. Reads the file, so it may find it locked.
    file.pragma(PRAGMAS.lockFile.memoryJournal);
    file.exec(PRAGMAS.lockFile.begin);
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'SQLITE_BUSY') return false;
    throw lockFileError(path, err);
  }
}

/**
 * Claims `outDir` for this process: takes `<outDir>/.genpipe/runner.lock` and records this process as
 * its holder in `journal`.
 *
 * @param journalPath - the journal's file (named in the refusal when the holder's row is not in it)
 * @returns the held lock (pass it to releaseRunnerLock)
 * @throws JournalLockedError when another runner holds it
 * @throws JournalFileError when the lock file cannot be made or is not a lock file
 */
export function acquireRunnerLock(
  journal: Database.Database,
  journalPath: string,
  outDir: string,
  now: number,
): RunnerLock {
  const path = runnerLockPath(outDir);
  const file = openLockFile(path);
  const token = randomUUID();
  const upsert = journal.prepare(LOCK_SQL.upsert);
  try {
    journal
      .transaction(() => {
        if (!tryLock(file, path)) {
          throw new JournalLockedError(
            outDir,
            runNow(lockHolder(new SqliteSql(journal), SQLITE_PLANS.statements.table, outDir)),
            journalPath,
          );
        }
        upsert.run(outDir, process.pid, processStartTime(process.pid), hostname(), now, token);
      })
      .immediate();
  } catch (err) {
    file.close();
    throw err;
  }
  return { path, file, token };
}

/** Forgets this runner's row (a row since written by another runner is left alone) and drops the lock. */
export function releaseRunnerLock(journal: Database.Database, outDir: string, lock: RunnerLock): void {
  try {
    journal.prepare(LOCK_SQL.release).run(outDir, lock.token);
  } finally {
    lock.file.close();
  }
}

/**
 * Whether a runner holds `outDir` right now, for what status and a dry run say (information only: it
 * decides nothing). A read-only connection reads the lock file with a busy timeout of 0: the shared
 * lock that read needs is refused while a runner holds its exclusive one, and is dropped at once.
 *
 * @returns true (held), false (free: a runner recorded as holding it is gone), null (no lock file,
 *   or it could not be read)
 */
export function runnerLockHeld(outDir: string): boolean | null {
  const path = runnerLockPath(outDir);
  if (!existsSync(path)) return null;
  let file: Database.Database | null = null;
  try {
    file = new Database(path, { readonly: true, fileMustExist: true });
    file.pragma(PRAGMAS.lockFile.noWait);
    file.prepare(LOCK_SQL.probe).get();
    return false;
  } catch (err) {
    return (err as { code?: unknown }).code === 'SQLITE_BUSY' ? true : null;
  } finally {
    file?.close();
  }
}
