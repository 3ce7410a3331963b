/**
 * Every SQL text of the SQLite journal, in one place: the schema and its migrations, the connection's
 * pragmas, and each statement the journal's parts prepare (items, batches, shared references, the
 * content-hash cache, quota state, the runner lock). The parts hold no SQL of their own; this module
 * holds nothing but text. The statements both stores run are written once, in ../store/statements.ts.
 */
import type { DialectPlans } from '../store/backend.ts';
import { statementsOf } from '../store/statements.ts';

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
 * - 2 → 3: `quota_states`, the quota a key's clients learned at a service (see store/store.ts).
 * - 3 → 4: `job_durations`, what the latest ended jobs of each kind showed of their length.
 */
export const MIGRATIONS: Readonly<Record<number, string>> = {
  1: `
ALTER TABLE items ADD COLUMN place TEXT;
UPDATE items SET place = input;
CREATE INDEX IF NOT EXISTS items_place ON items(out_dir, place);
`,
  2: `
CREATE TABLE IF NOT EXISTS quota_states (
  service TEXT NOT NULL,
  key_fingerprint TEXT NOT NULL,
  job_ceiling INTEGER,
  request_limit INTEGER,
  window_ms INTEGER,
  blocked_until INTEGER,
  recent_requests TEXT NOT NULL DEFAULT '[]',
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (service, key_fingerprint)
);
`,
  3: `
CREATE TABLE IF NOT EXISTS job_durations (
  id INTEGER PRIMARY KEY,
  service TEXT NOT NULL,
  kind TEXT NOT NULL,
  running_at_ms INTEGER NOT NULL,
  done_by_ms INTEGER NOT NULL,
  recorded_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS job_durations_kind ON job_durations(service, kind, id);
`,
};

/**
 * Rewrites the service of every row written when it was the base URL as given, password included, to
 * its identity without credentials (`genpipe_service_identity`, a function of the connection): no
 * password stays in the journal, and the rows keep matching the service. A row that now has the key of
 * another replaces it (the same service's state, the later row of it kept). A batch's options lose
 * their credentials likewise (`genpipe_recorded_options`).
 */
export const SCRUB_SERVICE_CREDENTIALS = [
  "UPDATE batches SET service = genpipe_service_identity(service) WHERE service LIKE '%://%@%'",
  "UPDATE OR REPLACE shared_references SET service = genpipe_service_identity(service) WHERE service LIKE '%://%@%'",
  "UPDATE OR REPLACE quota_states SET service = genpipe_service_identity(service) WHERE service LIKE '%://%@%'",
  "UPDATE job_durations SET service = genpipe_service_identity(service) WHERE service LIKE '%://%@%'",
  // The options of a batch an earlier genpipe recorded with a URL's password (recorded-options.ts).
  "UPDATE batches SET options = genpipe_recorded_options(options) WHERE options LIKE '%://%@%'",
] as const;

/** The connection's pragmas (see schema.ts). */
export const PRAGMAS = {
  busyTimeout: (ms: number) => `busy_timeout = ${ms}`,
  wal: 'journal_mode = WAL',
  synchronous: (mode: string) => `synchronous = ${mode}`,
  foreignKeys: 'foreign_keys = ON',
  userVersion: 'user_version',
  setUserVersion: (v: number) => `user_version = ${v}`,
  /** The runner lock file's connection (runner-lock.ts). */
  lockFile: {
    noWait: 'busy_timeout = 0',
    exclusive: 'locking_mode = EXCLUSIVE',
    memoryJournal: 'journal_mode = MEMORY',
    begin: 'BEGIN EXCLUSIVE',
  },
} as const;

/** The journal's words and own statements around the shared ones (../store/statements.ts). */
export const SQLITE_PLANS: DialectPlans = {
  statements: statementsOf({
    jsonText: (column, field) => `json_extract(${column}, '$.${field}')`,
    claimFence: '',
  }),
  // A journal serves one process (its runner lock): batches record no host, rows are not claimed.
  insertBatch: `INSERT INTO batches (out_dir, started_at, input_dir, service, options, pid)
   VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
  admissionLock: null,
  claim: null,
};

/** The runner_locks table (runner-lock.ts). */
export const LOCK_SQL = {
  upsert: `INSERT INTO runner_locks (out_dir, pid, proc_start, host, acquired_at, token) VALUES (?, ?, ?, ?, ?, ?)
   ON CONFLICT(out_dir) DO UPDATE SET pid = excluded.pid, proc_start = excluded.proc_start,
     host = excluded.host, acquired_at = excluded.acquired_at, token = excluded.token`,
  release: 'DELETE FROM runner_locks WHERE out_dir = ? AND token = ?',
  holder: 'SELECT pid, proc_start, host, acquired_at, token FROM runner_locks WHERE out_dir = ?',
  /** A read of the (empty) lock file: it needs a shared lock, refused while a runner holds it. */
  probe: 'SELECT count(*) FROM sqlite_master',
} as const;
