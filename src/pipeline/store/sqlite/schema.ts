/**
 * The journal's SQLite schema and connection settings.
 *
 * - `items`: one row per (out dir, input, content hash, recipe hash) attempt at the work; the active
 *   row of an input has `superseded_at` NULL (at most one per out dir and input). It holds the
 *   serialised Item (JSON) plus indexed columns for the keys, the state machine and the service ids,
 *   and (since version 2) `place`: the row's out folder relative to the out dir (see item-place.ts).
 * - `shared_references`: the batch's shared reference uploads (service, name, content hash → file_id),
 *   so a resumed batch reuses them.
 * - `batches`: one row per run or watch session (started_at, finished_at, input dir, out dir, options).
 * - `content_hashes`: a cache of content hashes by file identity, so an unchanged 5 GB video is not
 *   read again on every run.
 * - `runner_locks`: who holds an out dir's runner lock, for the refusal's message (the lock itself is
 *   a file lock on `<out>/.genpipe/runner.lock`; see runner-lock.ts).
 *
 * - `quota_states` (since version 3): what the clients of one key learned of its quota at a service
 *   (the job ceiling, the request window), keyed by service and key fingerprint (never the key).
 * - `job_durations` (since version 4): what the latest ended jobs of each kind (type, model,
 *   resolution, duration) at a service showed of their length, for the poll loop's first reads.
 *
 * Versions: 1 is SCHEMA_V1; each later version is one step of MIGRATIONS (both in sqlite-plans.ts, with
 * all of the journal's SQL), applied in order in one transaction, so a journal written by an older
 * genpipe opens (and is brought up to date) and a new journal is made the same way.
 *
 * Connection: `journal_mode = WAL` (readers never block the writer; a commit is one append), and
 * `synchronous = FULL` (every commit is fsynced before it returns, so a committed write survives a
 * power cut, not only a killed process).
 */
import type Database from 'better-sqlite3';
import { JOURNAL_TEXTS } from '../texts.ts';
import { JOURNAL_FILE } from './journal-file.ts';
import { MIGRATIONS, PRAGMAS, SCHEMA_V1 } from './sqlite-plans.ts';

/** The journal file cannot be used (not WAL-capable, or written by a newer genpipe). */
export class JournalFileError extends Error {
  override name = 'JournalFileError';
  readonly code = 'journal_file';
}

/**
 * How durable a journal's writes are when their promises resolve. FULL (genpipe's): on disk, as SQLite's
 * `synchronous = FULL` makes them, but synced off the event loop (wal-sync.ts). NORMAL exists for the
 * bench's baseline: committed, not synced (a power cut may lose the last ones).
 */
export type SynchronousMode = 'FULL' | 'NORMAL';

/**
 * Sets the connection up: busy timeout, WAL, `synchronous = NORMAL` (a commit does not fsync on the
 * event loop: the journal syncs the WAL itself, wal-sync.ts) and foreign keys.
 *
 * @throws JournalFileError when the file cannot be put in WAL mode
 */
export function applyPragmas(db: Database.Database, path: string): void {
  db.pragma(PRAGMAS.busyTimeout(JOURNAL_FILE.busyTimeoutMs));
  const mode = String(db.pragma(PRAGMAS.wal, { simple: true }));
  if (mode.toLowerCase() !== 'wal') throw new JournalFileError(JOURNAL_TEXTS.notWal(path, mode));
  db.pragma(PRAGMAS.synchronous('NORMAL'));
  db.pragma(PRAGMAS.foreignKeys);
  db.pragma(PRAGMAS.cacheSize(JOURNAL_FILE.cacheKiB));
}

/**
 * Creates the tables of a new journal, or brings an older one up to date (see MIGRATIONS), in one
 * transaction.
 *
 * @throws JournalFileError when the journal was written by a newer genpipe
 */
export function migrate(db: Database.Database, path: string): void {
  const versionNow = (): number => Number(db.pragma(PRAGMAS.userVersion, { simple: true }));
  if (versionNow() === JOURNAL_FILE.schemaVersion) return;
  // Read again under the write lock: two processes opening a new (or older) journal at the same moment
  // must not both run the same migration.
  db.transaction(() => {
    const version = versionNow();
    if (version > JOURNAL_FILE.schemaVersion)
      throw new JournalFileError(JOURNAL_TEXTS.newerSchema(path, version));
    if (version === JOURNAL_FILE.schemaVersion) return;
    if (version === 0) db.exec(SCHEMA_V1);
    for (let v = Math.max(1, version); v < JOURNAL_FILE.schemaVersion; v++) {
      const step = MIGRATIONS[v];
      if (step === undefined) throw new Error(`no migration of the journal from version ${v}`);
      db.exec(step);
    }
    db.pragma(PRAGMAS.setUserVersion(JOURNAL_FILE.schemaVersion));
  }).immediate();
}
