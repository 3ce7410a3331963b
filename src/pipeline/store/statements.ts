/**
 * Every statement both stores run, written once (numbered placeholders, see sql.ts), built around the
 * few words their dialects say differently (DialectWords). A dialect's own statements — its schema and
 * migrations, its lock, its batch row, the PostgreSQL claim and admission lock — are in its plans
 * (sqlite/sqlite-plans.ts, postgres/pg-plans.ts). This module holds nothing but text.
 */
import { FINISHED_ROW_SQL } from '../journal/finished-items.ts';
import { PLACE_HOLDING_PHASES } from '../journal/item-place.ts';
import type { DialectWords } from './sql.ts';

/** holdsPlace (item-place.ts) as an SQL condition on the items table's `phase` and `generation_id`. */
const HOLDS_PLACE = `(phase IN (${PLACE_HOLDING_PHASES.map((p) => `'${p}'`).join(', ')}) OR (phase = 'failed' AND generation_id IS NOT NULL))`;

const ITEM_COLUMNS =
  'id, out_dir, input, place, content_hash, recipe_hash, live_state, phase, outcome_unknown, item, outputs, uploaded_at, batch_id, created_at, updated_at, superseded_at';

/** The items table (item-rows.ts); $1 is always the out dir. */
function itemStatements(d: DialectWords) {
  return {
    active: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND input = $2 AND superseded_at IS NULL`,
    byId: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND id = $2`,
    allActive: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND superseded_at IS NULL ORDER BY input`,
    byPhase: `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = $1 AND phase = $2 AND superseded_at IS NULL ORDER BY input`,
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
  /** The job_durations table: the latest $3 rows of a service and kind are kept (prune). */
  durations: 'SELECT kind, running_at_ms, done_by_ms FROM job_durations WHERE service = $1 ORDER BY id',
  addDuration: `INSERT INTO job_durations (service, kind, running_at_ms, done_by_ms, recorded_at)
   VALUES ($1, $2, $3, $4, $5)`,
  pruneDurations: `DELETE FROM job_durations WHERE service = $1 AND kind = $2 AND id NOT IN
   (SELECT id FROM job_durations WHERE service = $1 AND kind = $2 ORDER BY id DESC LIMIT $3)`,
} as const;

/** Every shared statement, in the words of dialect `d`. */
export function statementsOf(d: DialectWords) {
  return { item: itemStatements(d), table: TABLE_STATEMENTS } as const;
}

/** The shared statements of one dialect. */
export type Statements = ReturnType<typeof statementsOf>;
