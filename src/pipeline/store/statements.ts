/**
 * Every statement both stores run, written once (numbered placeholders, see sql.ts), built around the
 * few words their dialects say differently (DialectWords). A dialect's own statements — its schema and
 * migrations, its lock, its batch row, the PostgreSQL claim and admission lock — are in its plans
 * (sqlite/sqlite-plans.ts, postgres/pg-plans.ts). This module holds nothing but text.
 */
import { JOB_DURATIONS_KEPT } from '../../client/index.ts';
import { FINISHED_ROW_SQL } from './finished-items.ts';
import { PLACE_HOLDING_PHASES } from './item-place.ts';
import type { DialectWords } from './sql.ts';

/** holdsPlace (item-place.ts) as an SQL condition on the items table's `phase` and `generation_id`. */
const HOLDS_PLACE = `(phase IN (${PLACE_HOLDING_PHASES.map((p) => `'${p}'`).join(', ')}) OR (phase = 'failed' AND generation_id IS NOT NULL))`;

export const ITEM_COLUMNS =
  'id, out_dir, input, place, content_hash, recipe_hash, live_state, phase, outcome_unknown, item, outputs, uploaded_at, batch_id, created_at, updated_at, superseded_at';

/** The words a dialect's tables are typed with (its schema, sqlite-plans.ts and pg-plans.ts). */
export interface TypeWords {
  /** A row id that numbers itself. */
  serialId: string;
  /** A time in ms since the epoch, a size, a row id referred to. */
  big: string;
  /** 0 or 1. */
  flag: string;
}

/**
 * The tables both stores hold alike, in a dialect's types: the batches and the runner locks (with
 * the dialect's `own` columns), the items (`place`: its column, where the dialect's first version has
 * it), shared references, the content-hash cache, quota state, job durations. A dialect's schema and migrations are made of these and of its own tables.
 */
export function sharedTables(w: TypeWords, place: string, own: { batches: string; runnerLocks: string }) {
  return {
    batches: `
CREATE TABLE IF NOT EXISTS batches (
  id ${w.serialId},
  started_at ${w.big} NOT NULL,
  finished_at ${w.big},
  status TEXT NOT NULL DEFAULT 'running',
  input_dir TEXT NOT NULL,
  out_dir TEXT NOT NULL,
  service TEXT,
  options TEXT NOT NULL DEFAULT '{}',
  pid INTEGER NOT NULL${own.batches}
);
`,
    runnerLocks: `
CREATE TABLE IF NOT EXISTS runner_locks (
  out_dir TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  proc_start TEXT,
  host TEXT NOT NULL,
  acquired_at ${w.big} NOT NULL,${own.runnerLocks}
  token TEXT NOT NULL
);
`,
    items: `
CREATE TABLE IF NOT EXISTS items (
  id ${w.serialId},
  out_dir TEXT NOT NULL,
  input TEXT NOT NULL,${place}
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
  outcome_unknown ${w.flag} NOT NULL DEFAULT 0,
  item TEXT NOT NULL,
  outputs TEXT,
  uploaded_at ${w.big},
  batch_id ${w.big} REFERENCES batches(id),
  created_at ${w.big} NOT NULL,
  updated_at ${w.big} NOT NULL,
  superseded_at ${w.big}
);
CREATE UNIQUE INDEX IF NOT EXISTS items_active ON items(out_dir, input) WHERE superseded_at IS NULL;
CREATE INDEX IF NOT EXISTS items_phase ON items(out_dir, phase) WHERE superseded_at IS NULL;
CREATE INDEX IF NOT EXISTS items_phase_superseded ON items(out_dir, phase) WHERE superseded_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_generation ON items(generation_id) WHERE generation_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS items_request ON items(request_id) WHERE request_id IS NOT NULL;
`,
    sharedReferences: `
CREATE TABLE IF NOT EXISTS shared_references (
  service TEXT NOT NULL,
  name TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  file_id TEXT NOT NULL,
  uploaded_at ${w.big} NOT NULL,
  batch_id ${w.big} REFERENCES batches(id),
  PRIMARY KEY (service, name, content_hash)
);
`,
    contentHashes: `
CREATE TABLE IF NOT EXISTS content_hashes (
  path TEXT PRIMARY KEY,
  dev TEXT NOT NULL,
  ino TEXT NOT NULL,
  size ${w.big} NOT NULL,
  mtime_ns TEXT NOT NULL,
  ctime_ns TEXT NOT NULL,
  hash TEXT NOT NULL,
  hashed_at ${w.big} NOT NULL
);
`,
    quotaStates: `
CREATE TABLE IF NOT EXISTS quota_states (
  service TEXT NOT NULL,
  key_fingerprint TEXT NOT NULL,
  job_ceiling INTEGER,
  request_limit INTEGER,
  window_ms ${w.big},
  blocked_until ${w.big},
  recent_requests TEXT NOT NULL DEFAULT '[]',
  updated_at ${w.big} NOT NULL,
  PRIMARY KEY (service, key_fingerprint)
);
`,
    jobDurations: `
CREATE TABLE IF NOT EXISTS job_durations (
  id ${w.serialId},
  service TEXT NOT NULL,
  kind TEXT NOT NULL,
  running_at_ms ${w.big} NOT NULL,
  done_by_ms ${w.big} NOT NULL,
  recorded_at ${w.big} NOT NULL
);
CREATE INDEX IF NOT EXISTS job_durations_kind ON job_durations(service, kind, id);
`,
  } as const;
}

/** The items table (item-rows.ts); $1 is always the out dir. */
function itemStatements(d: DialectWords) {
  return {
    active: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND input = $2 AND superseded_at IS NULL`,
    byId: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND id = $2`,
    allActive: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND superseded_at IS NULL ORDER BY input`,
    byPhase: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND phase = $2 AND superseded_at IS NULL ORDER BY input`,
    /** Replaced rows in a phase, by input and age: earlier versions left in flight (left-in-flight.ts). */
    supersededByPhase: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND phase = $2 AND superseded_at IS NOT NULL
     ORDER BY input, id`,
    finished: `SELECT input, ${d.jsonText('item', 'size')} AS size, ${d.jsonText('item', 'mtimeMs')} AS mtime_ms
     FROM items WHERE out_dir = $1 AND phase IN ('reported', 'failed') AND superseded_at IS NULL`,
    /** The newest row at each place of the out dir, when it finished (finished-items.ts). */
    finishedAtPlaces: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1
     AND id IN (SELECT MAX(id) FROM items WHERE out_dir = $1 GROUP BY place)
     AND ${FINISHED_ROW_SQL} ORDER BY input, id`,
    history: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND input = $2 ORDER BY id`,
    /** The latest earlier row of an input with this key that holds its place (see item-place.ts). */
    earlier: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND input = $2 AND content_hash = $3 AND recipe_hash = $4
     AND superseded_at IS NOT NULL AND ${HOLDS_PLACE} ORDER BY id DESC LIMIT 1`,
    /**
     * The rows of other inputs with this key ($2 content, $3 recipe; $4 the input) that are the input's
     * own or hold their place, newest first (same-content.ts).
     */
    twins: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND content_hash = $2 AND recipe_hash = $3 AND input <> $4
     AND (superseded_at IS NULL OR ${HOLDS_PLACE}) ORDER BY id DESC LIMIT 20`,
    /**
     * The rows with this content and another recipe ($2 content, $3 recipe), the input's own included,
     * that are active or hold their place, newest first: a chain's steps done there (step-work.ts).
     */
    sameBytes: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND content_hash = $2 AND recipe_hash <> $3
     AND (superseded_at IS NULL OR ${HOLDS_PLACE}) ORDER BY id DESC LIMIT 20`,
    placeTaken: `SELECT 1 AS one FROM items WHERE out_dir = $1 AND place = $2
     AND (${HOLDS_PLACE} OR (superseded_at IS NULL AND input <> $3)) LIMIT 1`,
    placeHeldByOther: `SELECT 1 AS one FROM items WHERE out_dir = $1 AND place = $2 AND id <> $3 AND ${HOLDS_PLACE} LIMIT 1`,
    insert: `INSERT INTO items (out_dir, input, place, content_hash, recipe_hash, batch_id, state, live_state, phase,
     reason, failed_at, upload_file_id, generation_id, request_id, attempts, outcome_unknown, item, outputs,
     uploaded_at, created_at, updated_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $20)
   RETURNING id`,
    update: `UPDATE items SET batch_id = $3, state = $4, live_state = $5, phase = $6, reason = $7, failed_at = $8,
     upload_file_id = $9, generation_id = $10, request_id = $11, attempts = $12, outcome_unknown = $13,
     item = $14, outputs = $15, uploaded_at = $16, updated_at = $17
   WHERE out_dir = $1 AND id = $2${d.claimFence}`,
    supersede: 'UPDATE items SET superseded_at = $3 WHERE out_dir = $1 AND id = $2',
    setKey: 'UPDATE items SET content_hash = $3, recipe_hash = $4 WHERE out_dir = $1 AND id = $2',
    reactivate: 'UPDATE items SET superseded_at = NULL WHERE out_dir = $1 AND id = $2',
    setPlace: 'UPDATE items SET place = $3 WHERE out_dir = $1 AND id = $2',
  } as const;
}

/** The statements of the tables besides items (tables.ts). */
const TABLE_STATEMENTS = {
  /** The holder of an out dir's lock ($1) as recorded. */
  lockHolder: 'SELECT pid, proc_start, host, acquired_at FROM runner_locks WHERE out_dir = $1',
  /** The batches of an out dir ($1), oldest first. */
  batches: 'SELECT * FROM batches WHERE out_dir = $1 ORDER BY id',
  finishBatch: 'UPDATE batches SET finished_at = $3, status = $4 WHERE out_dir = $1 AND id = $2',
  reference:
    'SELECT file_id, uploaded_at FROM shared_references WHERE service = $1 AND name = $2 AND content_hash = $3',
  saveReference: `INSERT INTO shared_references (service, name, content_hash, file_id, uploaded_at, batch_id)
   VALUES ($1, $2, $3, $4, $5, $6)
   ON CONFLICT (service, name, content_hash) DO UPDATE SET file_id = excluded.file_id,
     uploaded_at = excluded.uploaded_at, batch_id = excluded.batch_id`,
  forgetReference: 'DELETE FROM shared_references WHERE service = $1 AND name = $2 AND content_hash = $3',
  hash: 'SELECT dev, ino, size, mtime_ns, ctime_ns, hash FROM content_hashes WHERE path = $1',
  saveHash: `INSERT INTO content_hashes (path, dev, ino, size, mtime_ns, ctime_ns, hash, hashed_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
   ON CONFLICT (path) DO UPDATE SET dev = excluded.dev, ino = excluded.ino, size = excluded.size,
     mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, hash = excluded.hash,
     hashed_at = excluded.hashed_at`,
  quotaState: `SELECT job_ceiling, request_limit, window_ms, blocked_until, recent_requests, updated_at
   FROM quota_states WHERE service = $1 AND key_fingerprint = $2`,
  saveQuotaState: `INSERT INTO quota_states (service, key_fingerprint, job_ceiling, request_limit, window_ms, blocked_until,
     recent_requests, updated_at)
   VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
   ON CONFLICT (service, key_fingerprint) DO UPDATE SET job_ceiling = excluded.job_ceiling,
     request_limit = excluded.request_limit, window_ms = excluded.window_ms, blocked_until = excluded.blocked_until,
     recent_requests = excluded.recent_requests, updated_at = excluded.updated_at`,
  /**
   * The job_durations table: the latest JOB_DURATIONS_KEPT rows of a service and kind are kept (prune;
   * the number is in the text: SQLite prepares a statement again on every run whose LIMIT is bound).
   */
  durations: 'SELECT kind, running_at_ms, done_by_ms FROM job_durations WHERE service = $1 ORDER BY id',
  addDuration: `INSERT INTO job_durations (service, kind, running_at_ms, done_by_ms, recorded_at)
   VALUES ($1, $2, $3, $4, $5)`,
  pruneDurations: `DELETE FROM job_durations WHERE service = $1 AND kind = $2 AND id NOT IN
   (SELECT id FROM job_durations WHERE service = $1 AND kind = $2 ORDER BY id DESC LIMIT ${JOB_DURATIONS_KEPT})`,
} as const;

/** Every shared statement, in the words of dialect `d`. */
export function statementsOf(d: DialectWords) {
  return { item: itemStatements(d), table: TABLE_STATEMENTS } as const;
}

/** The shared statements of one dialect. */
export type Statements = ReturnType<typeof statementsOf>;
