/**
 * Every SQL text of the SQLite journal, in one place: the schema and its migrations, the connection's
 * pragmas, and each statement the journal's parts prepare (items, batches, shared references, the
 * content-hash cache, quota state, the runner lock). The parts hold no SQL of their own; this module
 * holds nothing but text.
 */
import { FINISHED_ROW_SQL } from './finished-items.ts';
import { PLACE_HOLDING_PHASES } from './item-place.ts';

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

/** holdsPlace (item-place.ts) as an SQL condition on the items table's `phase` and `generation_id`. */
const HOLDS_PLACE = `(phase IN (${PLACE_HOLDING_PHASES.map((p) => `'${p}'`).join(', ')}) OR (phase = 'failed' AND generation_id IS NOT NULL))`;

const ITEM_COLUMNS =
  'id, out_dir, input, place, content_hash, recipe_hash, live_state, phase, outcome_unknown, item, outputs, uploaded_at, batch_id, created_at, updated_at, superseded_at';

/** The items table (item-rows.ts). */
export const ITEM_SQL = {
  /** The active row of (out_dir, input). */
  active: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND input = ? AND superseded_at IS NULL`,
  byId: `SELECT ${ITEM_COLUMNS} FROM items WHERE id = ?`,
  allActive: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND superseded_at IS NULL ORDER BY input`,
  byPhase: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND phase = ? AND superseded_at IS NULL ORDER BY input`,
  finished: `SELECT input, json_extract(item, '$.size') AS size, json_extract(item, '$.mtimeMs') AS mtime_ms
     FROM items WHERE out_dir = ? AND phase IN ('reported', 'failed') AND superseded_at IS NULL`,
  /** The newest row at each place of the out dir, when it finished (finished-items.ts). */
  finishedAtPlaces: `SELECT ${ITEM_COLUMNS} FROM items WHERE id IN (SELECT MAX(id) FROM items WHERE out_dir = ? GROUP BY place)
     AND ${FINISHED_ROW_SQL} ORDER BY input, id`,
  history: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND input = ? ORDER BY id`,
  /** The latest earlier row of an input with this key that holds its place (see item-place.ts). */
  earlier: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND input = ? AND content_hash = ? AND recipe_hash = ?
     AND superseded_at IS NOT NULL AND ${HOLDS_PLACE} ORDER BY id DESC LIMIT 1`,
  placeTaken: `SELECT 1 AS one FROM items WHERE out_dir = ? AND place = ?
     AND (${HOLDS_PLACE} OR (superseded_at IS NULL AND input <> ?)) LIMIT 1`,
  placeHeldByOther: `SELECT 1 AS one FROM items WHERE out_dir = ? AND place = ? AND id <> ? AND ${HOLDS_PLACE} LIMIT 1`,
  insert: `INSERT INTO items (out_dir, input, place, content_hash, recipe_hash, state, live_state, phase, reason, failed_at,
     upload_file_id, generation_id, request_id, attempts, outcome_unknown, item, outputs, uploaded_at, batch_id,
     created_at, updated_at)
   VALUES (@out_dir, @input, @place, @content_hash, @recipe_hash, @state, @live_state, @phase, @reason, @failed_at,
     @upload_file_id, @generation_id, @request_id, @attempts, @outcome_unknown, @item, @outputs, @uploaded_at,
     @batch_id, @now, @now)`,
  update: `UPDATE items SET state = @state, live_state = @live_state, phase = @phase, reason = @reason,
     failed_at = @failed_at, upload_file_id = @upload_file_id, generation_id = @generation_id,
     request_id = @request_id, attempts = @attempts, outcome_unknown = @outcome_unknown, item = @item,
     outputs = @outputs, uploaded_at = @uploaded_at, batch_id = @batch_id, updated_at = @now
   WHERE id = @id`,
  supersede: 'UPDATE items SET superseded_at = ? WHERE id = ?',
  setKey: 'UPDATE items SET content_hash = ?, recipe_hash = ? WHERE id = ?',
  reactivate: 'UPDATE items SET superseded_at = NULL WHERE id = ?',
  setPlace: 'UPDATE items SET place = ? WHERE id = ?',
} as const;

/** The batches table (batch-rows.ts). */
export const BATCH_SQL = {
  insert: `INSERT INTO batches (started_at, input_dir, out_dir, service, options, pid)
   VALUES (?, ?, ?, ?, ?, ?)`,
  finish: 'UPDATE batches SET finished_at = ?, status = ? WHERE id = ?',
  list: 'SELECT * FROM batches WHERE out_dir = ? ORDER BY id',
} as const;

/** The shared_references table (reference-rows.ts). */
export const REFERENCE_SQL = {
  get: 'SELECT file_id, uploaded_at FROM shared_references WHERE service = ? AND name = ? AND content_hash = ?',
  save: `INSERT INTO shared_references (service, name, content_hash, file_id, uploaded_at, batch_id)
   VALUES (?, ?, ?, ?, ?, ?)
   ON CONFLICT(service, name, content_hash) DO UPDATE SET file_id = excluded.file_id,
     uploaded_at = excluded.uploaded_at, batch_id = excluded.batch_id`,
  forget: 'DELETE FROM shared_references WHERE service = ? AND name = ? AND content_hash = ?',
} as const;

/** The content_hashes table (hash-cache.ts). */
export const HASH_SQL = {
  get: 'SELECT dev, ino, size, mtime_ns, ctime_ns, hash FROM content_hashes WHERE path = ?',
  put: `INSERT INTO content_hashes (path, dev, ino, size, mtime_ns, ctime_ns, hash, hashed_at)
   VALUES (@path, @dev, @ino, @size, @mtimeNs, @ctimeNs, @hash, @now)
   ON CONFLICT(path) DO UPDATE SET dev = excluded.dev, ino = excluded.ino, size = excluded.size,
     mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, hash = excluded.hash,
     hashed_at = excluded.hashed_at`,
} as const;

/** The quota_states table (quota-rows.ts). */
export const QUOTA_SQL = {
  get: `SELECT job_ceiling, request_limit, window_ms, blocked_until, recent_requests, updated_at
   FROM quota_states WHERE service = ? AND key_fingerprint = ?`,
  save: `INSERT INTO quota_states (service, key_fingerprint, job_ceiling, request_limit, window_ms, blocked_until,
     recent_requests, updated_at)
   VALUES (@service, @key_fingerprint, @job_ceiling, @request_limit, @window_ms, @blocked_until, @recent_requests,
     @updated_at)
   ON CONFLICT(service, key_fingerprint) DO UPDATE SET job_ceiling = excluded.job_ceiling,
     request_limit = excluded.request_limit, window_ms = excluded.window_ms, blocked_until = excluded.blocked_until,
     recent_requests = excluded.recent_requests, updated_at = excluded.updated_at`,
} as const;

/** The job_durations table (duration-rows.ts): the latest `keep` rows of a service and kind are kept. */
export const DURATION_SQL = {
  ofService: `SELECT kind, running_at_ms, done_by_ms FROM job_durations WHERE service = ? ORDER BY id`,
  add: `INSERT INTO job_durations (service, kind, running_at_ms, done_by_ms, recorded_at)
   VALUES (@service, @kind, @running_at_ms, @done_by_ms, @recorded_at)`,
  prune: `DELETE FROM job_durations WHERE service = @service AND kind = @kind AND id NOT IN
   (SELECT id FROM job_durations WHERE service = @service AND kind = @kind ORDER BY id DESC LIMIT @keep)`,
} as const;

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
