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
 * Versions: 1 is SCHEMA_V1; each later version is one step of MIGRATIONS, applied in order in one
 * transaction, so a journal written by an older genpipe opens (and is brought up to date) and a new
 * journal is made the same way.
 *
 * Connection: `journal_mode = WAL` (readers never block the writer; a commit is one append), and
 * `synchronous = FULL` (every commit is fsynced before it returns, so a committed write survives a
 * power cut, not only a killed process).
 */
import type Database from 'better-sqlite3';
import { JOURNAL_CHOICES, JOURNAL_TEXTS } from './texts.ts';

/** The schema of version 1. */
export const SCHEMA_V1 = `
CREATE TABLE IF NOT EXISTS batches (
  id INTEGER PRIMARY KEY,
  started_at INTEGER NOT NULL,
  finished_at INTEGER,
  status TEXT NOT NULL DEFAULT 'running',
  input_dir TEXT NOT NULL,
  out_dir TEXT NOT NULL,
  service TEXT,
  options TEXT NOT NULL DEFAULT '{}',
  pid INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS items (
  id INTEGER PRIMARY KEY,
  out_dir TEXT NOT NULL,
  input TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  recipe_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  live_state TEXT NOT NULL,
  phase TEXT NOT NULL,
  reason TEXT,
  failed_at TEXT,
  upload_file_id TEXT,
  generation_id TEXT,
  request_id TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  outcome_unknown INTEGER NOT NULL DEFAULT 0,
  item TEXT NOT NULL,
  outputs TEXT,
  uploaded_at INTEGER,
  batch_id INTEGER REFERENCES batches(id),
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  superseded_at INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS items_active ON items(out_dir, input) WHERE superseded_at IS NULL;
CREATE INDEX IF NOT EXISTS items_key ON items(content_hash, recipe_hash);
CREATE INDEX IF NOT EXISTS items_phase ON items(out_dir, phase) WHERE superseded_at IS NULL;
CREATE INDEX IF NOT EXISTS items_generation ON items(generation_id) WHERE generation_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_request ON items(request_id) WHERE request_id IS NOT NULL;

CREATE TABLE IF NOT EXISTS shared_references (
  service TEXT NOT NULL,
  name TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  file_id TEXT NOT NULL,
  uploaded_at INTEGER NOT NULL,
  batch_id INTEGER REFERENCES batches(id),
  PRIMARY KEY (service, name, content_hash)
);

CREATE TABLE IF NOT EXISTS content_hashes (
  path TEXT PRIMARY KEY,
  dev TEXT NOT NULL,
  ino TEXT NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns TEXT NOT NULL,
  ctime_ns TEXT NOT NULL,
  hash TEXT NOT NULL,
  hashed_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS runner_locks (
  out_dir TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  proc_start TEXT,
  host TEXT NOT NULL,
  acquired_at INTEGER NOT NULL,
  token TEXT NOT NULL
);
`;

/**
 * The steps from one schema version to the next: MIGRATIONS[v] turns version v into v + 1.
 * - 1 → 2: `items.place`, the out folder of the row (rows of version 1 used their input path, so that
 *   is what they get).
 */
export const MIGRATIONS: Readonly<Record<number, string>> = {
  1: `
ALTER TABLE items ADD COLUMN place TEXT;
UPDATE items SET place = input;
CREATE INDEX IF NOT EXISTS items_place ON items(out_dir, place);
`,
};

/** The journal file cannot be used (not WAL-capable, or written by a newer genpipe). */
export class JournalFileError extends Error {
  override name = 'JournalFileError';
  readonly code = 'journal_file';
}

/** The synchronous setting of a connection. FULL is genpipe's; NORMAL exists for the bench's baseline. */
export type SynchronousMode = 'FULL' | 'NORMAL';

/**
 * Sets the connection up: busy timeout, WAL, the synchronous mode and foreign keys.
 *
 * @throws JournalFileError when the file cannot be put in WAL mode
 */
export function applyPragmas(
  db: Database.Database,
  path: string,
  synchronous: SynchronousMode = 'FULL',
): void {
  db.pragma(`busy_timeout = ${JOURNAL_CHOICES.busyTimeoutMs}`);
  const mode = String(db.pragma('journal_mode = WAL', { simple: true }));
  if (mode.toLowerCase() !== 'wal') throw new JournalFileError(JOURNAL_TEXTS.notWal(path, mode));
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma('foreign_keys = ON');
}

/**
 * Creates the tables of a new journal, or brings an older one up to date (see MIGRATIONS), in one
 * transaction.
 *
 * @throws JournalFileError when the journal was written by a newer genpipe
 */
export function migrate(db: Database.Database, path: string): void {
  const versionNow = (): number => Number(db.pragma('user_version', { simple: true }));
  if (versionNow() === JOURNAL_CHOICES.schemaVersion) return;
  // Read again under the write lock: two processes opening a new (or older) journal at the same moment
  // must not both run the same migration.
  db.transaction(() => {
    const version = versionNow();
    if (version > JOURNAL_CHOICES.schemaVersion)
      throw new JournalFileError(JOURNAL_TEXTS.newerSchema(path, version));
    if (version === JOURNAL_CHOICES.schemaVersion) return;
    if (version === 0) db.exec(SCHEMA_V1);
    for (let v = Math.max(1, version); v < JOURNAL_CHOICES.schemaVersion; v++) {
      const step = MIGRATIONS[v];
      if (step === undefined) throw new Error(`no migration of the journal from version ${v}`);
      db.exec(step);
    }
    db.pragma(`user_version = ${JOURNAL_CHOICES.schemaVersion}`);
  }).immediate();
}
