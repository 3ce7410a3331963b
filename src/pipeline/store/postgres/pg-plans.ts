/**
 * Every SQL text of the PostgreSQL store, in one place: the schema and its migrations, and each
 * statement its parts run. The tables are the SQLite journal's (../sqlite/sqlite-plans.ts), with
 * PostgreSQL's types, plus what a database shared by several workers needs: the out dir's lock is a
 * session advisory lock with a row naming its holder (pg-lock.ts). Times are ms since the epoch
 * (BIGINT, read as numbers). Statements name tables unqualified: the connection's search_path is the
 * store's schema.
 */
import type { DialectPlans } from '../backend.ts';
import { sharedTables, statementsOf } from '../statements.ts';

/** The tables the PostgreSQL store holds as the journal does (../store/statements.ts). */
const TABLES = sharedTables(
  { serialId: 'BIGSERIAL PRIMARY KEY', big: 'BIGINT', flag: 'SMALLINT' },
  '\n  place TEXT NOT NULL,',
  { batches: ',\n  host TEXT NOT NULL', runnerLocks: '\n  heartbeat_at BIGINT NOT NULL,' },
);

/**
 * The steps from one schema version to the next: MIGRATIONS[v] turns version v into v + 1 (version 0:
 * an empty schema).
 * - 0 → 1: the SQLite journal's tables.
 * - 1 → 2: the quota shared by every worker of an API key (quota-ledger.ts): a row per key to lock,
 *   the log of its requests (database time), its job slots.
 * - 2 → 3: the claim of an item's row (the fence of distributed mode).
 * - 3 → 4: the key's job ceiling as learned (and when it was last confirmed), and job slots reserved
 *   for a create on its way (pending: its slot id is the create's request id until the 201 names the job;
 *   sent once its request slot is taken, right before it is sent), and when the key's jobs were seen
 *   ending (for a while), so that a ceiling is learned from the jobs running when the 429 was given.
 * - 4 → 5: the workers of distributed mode, each a row it renews every heartbeat (worker-registry.ts).
 * - 5 → 6: the bounds of the key's window length, and its request limit (quota-ledger.ts).
 * - 6 → 7: an index of the rows by key, whatever their input (same-content.ts).
 * - 7 → 8: each worker row's role: a worker, or a distributed run (working a share, or --no-work).
 */
export const MIGRATIONS: readonly string[] = [
  `
${TABLES.batches.trimStart()}CREATE INDEX IF NOT EXISTS batches_out_dir ON batches(out_dir, id);

${TABLES.items.trimStart()}CREATE INDEX IF NOT EXISTS items_input ON items(out_dir, input, id);
CREATE INDEX IF NOT EXISTS items_place ON items(out_dir, place);

${TABLES.sharedReferences.trimStart()}
${TABLES.contentHashes.trimStart()}
${TABLES.runnerLocks.trimStart()}
${TABLES.quotaStates.trimStart()}
${TABLES.jobDurations.trimStart()}`,
  `
CREATE TABLE IF NOT EXISTS key_quotas (
  service TEXT NOT NULL,
  key_fingerprint TEXT NOT NULL,
  PRIMARY KEY (service, key_fingerprint)
);
CREATE TABLE IF NOT EXISTS key_requests (
  id BIGSERIAL PRIMARY KEY,
  service TEXT NOT NULL,
  key_fingerprint TEXT NOT NULL,
  sent_at TIMESTAMPTZ NOT NULL,
  request_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS key_requests_window ON key_requests(service, key_fingerprint, sent_at);
CREATE TABLE IF NOT EXISTS key_job_slots (
  service TEXT NOT NULL,
  key_fingerprint TEXT NOT NULL,
  slot_id TEXT NOT NULL,
  taken_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (service, key_fingerprint, slot_id)
);
`,
  // 2 → 3: the claim of an item's row (the fence of distributed mode, see ../store/item-taken-over.ts).
  'ALTER TABLE items ADD COLUMN IF NOT EXISTS claim BIGINT NOT NULL DEFAULT 0',
  `
ALTER TABLE key_quotas ADD COLUMN IF NOT EXISTS job_ceiling INTEGER;
ALTER TABLE key_quotas ADD COLUMN IF NOT EXISTS ceiling_at TIMESTAMPTZ;
ALTER TABLE key_job_slots ADD COLUMN IF NOT EXISTS pending BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE key_job_slots ADD COLUMN IF NOT EXISTS sent BOOLEAN NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS key_job_endings (
  service TEXT NOT NULL,
  key_fingerprint TEXT NOT NULL,
  ended_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS key_job_endings_time ON key_job_endings(service, key_fingerprint, ended_at);
`,
  `
CREATE TABLE IF NOT EXISTS workers (
  id TEXT PRIMARY KEY,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  started_at TIMESTAMPTZ NOT NULL,
  seen_at TIMESTAMPTZ NOT NULL,
  heartbeat_ms BIGINT NOT NULL,
  in_hand INTEGER NOT NULL DEFAULT 0
);
`,
  // 5 → 6: the bounds of the key's window length every process learned, intersected (quota-ledger.ts).
  `
ALTER TABLE key_quotas ADD COLUMN IF NOT EXISTS window_lo_ms DOUBLE PRECISION;
ALTER TABLE key_quotas ADD COLUMN IF NOT EXISTS window_hi_ms DOUBLE PRECISION;
ALTER TABLE key_quotas ADD COLUMN IF NOT EXISTS request_limit INTEGER;
`,
  // 6 → 7: the rows of a key, whatever their input (same content under another name, same-content.ts).
  'CREATE INDEX IF NOT EXISTS items_key ON items(out_dir, content_hash, recipe_hash)',
  // 7 → 8: what each process on the store is (worker-registry.ts's WorkerRole).
  "ALTER TABLE workers ADD COLUMN IF NOT EXISTS role TEXT NOT NULL DEFAULT 'worker'",
];

/** The schema version this genpipe writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** Bringing a schema up to date (schema.ts), under a transaction-scoped advisory lock. */
export const SCHEMA_SQL = {
  /** Serializes migrators of one schema ($1: the schema's name). */
  lock: `SELECT pg_advisory_xact_lock(hashtextextended('genpipe-schema:' || $1, 0))`,
  createSchema: (quoted: string) => `CREATE SCHEMA IF NOT EXISTS ${quoted}`,
  createMeta: 'CREATE TABLE IF NOT EXISTS genpipe_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)',
  version: `SELECT value FROM genpipe_meta WHERE key = 'schema_version'`,
  setVersion: `INSERT INTO genpipe_meta (key, value) VALUES ('schema_version', $1)
   ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
} as const;

/** The PostgreSQL store's words and own statements around the shared ones (../store/statements.ts). */
export const PG_PLANS: DialectPlans = {
  statements: statementsOf({
    jsonText: (column, field) => `${column}::json->>'${field}'`,
    // The fence of distributed mode ($18: the claim this process holds, null: none; item-taken-over.ts).
    claimFence: ' AND ($18::bigint IS NULL OR claim = $18)',
  }),
  insertBatch: `INSERT INTO batches (out_dir, started_at, input_dir, service, options, pid, host)
   VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
  /**
   * Serializes the admissions of one out dir in the store's schema, whichever worker makes them (a
   * place is chosen among all of the out dir's rows).
   */
  admissionLock: `SELECT pg_advisory_xact_lock(hashtextextended('genpipe-admit:' || current_schema() || ':' || $1, 0))`,
  /** Claims row $2 for the admitting worker: its new claim number. */
  claim: 'UPDATE items SET claim = claim + 1 WHERE out_dir = $1 AND id = $2 RETURNING claim',
};

/** The items table's statements of the PostgreSQL store alone; $1 is the out dir. */
export const ITEM_SQL = {
  /** Where each active row changed since $2 stands (a waiting run's progress): no item bodies read. */
  changedSince: `SELECT input, place, state, reason, item::json->>'step' AS step, item, updated_at FROM items
     WHERE out_dir = $1 AND superseded_at IS NULL AND updated_at >= $2`,
} as const;

/**
 * The out dir's lock (pg-lock.ts): a session advisory lock keyed by the schema and the out dir, and
 * the runner_locks row naming its holder.
 */
export const LOCK_SQL = {
  tryLock: `SELECT pg_try_advisory_lock(hashtextextended('genpipe-out-dir:' || current_schema() || ':' || $1, 0)) AS taken`,
  unlock: `SELECT pg_advisory_unlock(hashtextextended('genpipe-out-dir:' || current_schema() || ':' || $1, 0))`,
  upsert: `INSERT INTO runner_locks (out_dir, pid, proc_start, host, acquired_at, heartbeat_at, token)
   VALUES ($1, $2, $3, $4, $5, $5, $6)
   ON CONFLICT (out_dir) DO UPDATE SET pid = excluded.pid, proc_start = excluded.proc_start, host = excluded.host,
     acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at, token = excluded.token`,
  heartbeat: 'UPDATE runner_locks SET heartbeat_at = $3 WHERE out_dir = $1 AND token = $2',
  release: 'DELETE FROM runner_locks WHERE out_dir = $1 AND token = $2',
} as const;

/**
 * The shared quota of an API key at a service (quota-ledger.ts); $1 service, $2 key fingerprint. Times
 * are the database's (clock_timestamp(), read after the key's row is locked), never a worker's.
 */
export const LEDGER_SQL = {
  ensureKey: 'INSERT INTO key_quotas (service, key_fingerprint) VALUES ($1, $2) ON CONFLICT DO NOTHING',
  lockKey: 'SELECT 1 FROM key_quotas WHERE service = $1 AND key_fingerprint = $2 FOR UPDATE',
  /** The bounds of the window's length the key's processes learned together (ms; null: none yet). */
  windowBounds: `SELECT window_lo_ms AS lo, window_hi_ms AS hi, request_limit AS "limit" FROM key_quotas
   WHERE service = $1 AND key_fingerprint = $2`,
  setWindowBounds: `UPDATE key_quotas SET window_lo_ms = $3, window_hi_ms = $4, request_limit = $5
   WHERE service = $1 AND key_fingerprint = $2`,
  /**
   * The requests in the window ending now ($3: its length, ms), and when the one that must leave it
   * for a request to be allowed ($4: the limit) leaves it, in ms from now (null: room now).
   */
  window: `WITH now AS (SELECT clock_timestamp() AS t),
     inside AS (SELECT sent_at FROM key_requests, now
       WHERE service = $1 AND key_fingerprint = $2 AND sent_at > now.t - $3 * interval '1 millisecond')
   SELECT (SELECT count(*) FROM inside)::int AS n,
     (SELECT t FROM now) AS now,
     (SELECT ceil(extract(epoch FROM (sent_at + $3 * interval '1 millisecond' - (SELECT t FROM now))) * 1000)::bigint
        FROM inside ORDER BY sent_at DESC OFFSET $4 - 1 LIMIT 1) AS free_in_ms`,
  logRequest: `INSERT INTO key_requests (service, key_fingerprint, sent_at, request_id)
   VALUES ($1, $2, clock_timestamp(), $3) RETURNING sent_at`,
  /** A create's request is counted from when its answer came (never earlier than its arrival). */
  requestAnswered: `UPDATE key_requests SET sent_at = clock_timestamp()
   WHERE service = $1 AND key_fingerprint = $2 AND request_id = $3`,
  /** Requests that left every window ($3: the longest window, ms) are forgotten. */
  prune: `DELETE FROM key_requests WHERE service = $1 AND key_fingerprint = $2
     AND sent_at <= clock_timestamp() - $3 * interval '1 millisecond'`,
  slotsHeld: 'SELECT count(*)::int AS n FROM key_job_slots WHERE service = $1 AND key_fingerprint = $2',
  /** The jobs holding slots (not the reservations of creates on their way). */
  slotIds: `SELECT slot_id FROM key_job_slots WHERE service = $1 AND key_fingerprint = $2 AND NOT pending
   ORDER BY taken_at`,
  slotHeld: 'SELECT 1 FROM key_job_slots WHERE service = $1 AND key_fingerprint = $2 AND slot_id = $3',
  takeSlot: `INSERT INTO key_job_slots (service, key_fingerprint, slot_id, taken_at)
   VALUES ($1, $2, $3, clock_timestamp())`,
  releaseSlot: 'DELETE FROM key_job_slots WHERE service = $1 AND key_fingerprint = $2 AND slot_id = $3',
  noteEnding: `INSERT INTO key_job_endings (service, key_fingerprint, ended_at) VALUES ($1, $2, clock_timestamp())`,
  /** Endings older than $3 ms are forgotten. */
  pruneEndings: `DELETE FROM key_job_endings WHERE service = $1 AND key_fingerprint = $2
     AND ended_at <= clock_timestamp() - $3::bigint * interval '1 millisecond'`,
  /** Jobs seen ending since slot $3 was last touched (its create was sent). */
  endingsSince: `SELECT count(*)::int AS n FROM key_job_endings e WHERE e.service = $1 AND e.key_fingerprint = $2
     AND e.ended_at >= (SELECT taken_at FROM key_job_slots s WHERE s.service = $1 AND s.key_fingerprint = $2
       AND s.slot_id = $3)`,
  /**
   * Forgets the reservations older than $3 ms (their create's process died, or its answer was lost)
   * and the jobs older than $4 ms (the service stops counting them).
   */
  pruneSlots: `DELETE FROM key_job_slots WHERE service = $1 AND key_fingerprint = $2
     AND taken_at <= clock_timestamp() - (CASE WHEN pending THEN $3::bigint ELSE $4::bigint END) * interval '1 millisecond'`,
  /**
   * Jobs and reservations held, apart from slot $3 (the caller's own reservation), and how many of
   * those reservations' creates may have been sent.
   */
  slotCounts: `SELECT count(*) FILTER (WHERE NOT pending)::int AS jobs, count(*) FILTER (WHERE pending)::int AS pending,
     count(*) FILTER (WHERE pending AND sent)::int AS sent
     FROM key_job_slots WHERE service = $1 AND key_fingerprint = $2 AND slot_id <> $3`,
  reserveSlot: `INSERT INTO key_job_slots (service, key_fingerprint, slot_id, taken_at, pending)
   VALUES ($1, $2, $3, clock_timestamp(), true) ON CONFLICT DO NOTHING`,
  /** A reservation's time renewed (its create is about to be sent). */
  touchReservation: `UPDATE key_job_slots SET taken_at = clock_timestamp(), sent = true
   WHERE service = $1 AND key_fingerprint = $2 AND slot_id = $3 AND pending`,
  releaseReservation: `DELETE FROM key_job_slots WHERE service = $1 AND key_fingerprint = $2 AND slot_id = $3
     AND pending`,
  /** The key's ceiling, unless last confirmed more than $3 ms ago. */
  ceiling: `SELECT job_ceiling FROM key_quotas WHERE service = $1 AND key_fingerprint = $2
     AND ceiling_at > clock_timestamp() - $3::bigint * interval '1 millisecond'`,
  setCeiling: `UPDATE key_quotas SET job_ceiling = $3, ceiling_at = clock_timestamp()
   WHERE service = $1 AND key_fingerprint = $2`,
} as const;

/**
 * The workers of distributed mode (worker-registry.ts). Times are the database's, so that machines'
 * clocks never matter; a row not renewed for WORKER_GONE_BEATS heartbeats is a worker gone.
 */
export const WORKERS_SQL = {
  /** $1 id, $2 host, $3 pid, $4 heartbeat ms, $5 jobs in hand. */
  beat: `INSERT INTO workers (id, host, pid, started_at, seen_at, heartbeat_ms, in_hand, role)
   VALUES ($1, $2, $3, clock_timestamp(), clock_timestamp(), $4, $5, $6)
   ON CONFLICT (id) DO UPDATE SET seen_at = clock_timestamp(), heartbeat_ms = $4, in_hand = $5`,
  forget: 'DELETE FROM workers WHERE id = $1',
  /** Rows gone for long ($1 ms: a day) are forgotten. */
  prune: `DELETE FROM workers WHERE seen_at < clock_timestamp() - $1::bigint * interval '1 millisecond'`,
  /** Every row, with its age (ms) and whether it is alive ($1: beats a worker may miss). */
  list: `SELECT id, host, pid, in_hand, heartbeat_ms, role,
     (extract(epoch FROM started_at) * 1000)::bigint AS started_ms,
     (extract(epoch FROM clock_timestamp() - seen_at) * 1000)::bigint AS age_ms,
     clock_timestamp() - seen_at <= heartbeat_ms * $1 * interval '1 millisecond' AS alive
   FROM workers ORDER BY started_at, id`,
  /**
   * Each key's quota in use: requests in its window (the learned window, else $1 ms), the learned
   * request limit, the jobs and the reservations it holds, its learned ceiling (unless older than $2 ms).
   */
  quotas: `SELECT k.service, k.key_fingerprint,
     round(coalesce(k.window_hi_ms, s.window_ms, $1::bigint))::bigint AS window_ms,
     coalesce(k.request_limit, s.request_limit) AS request_limit,
     (SELECT count(*) FROM key_requests r WHERE r.service = k.service AND r.key_fingerprint = k.key_fingerprint
        AND r.sent_at > clock_timestamp() - coalesce(k.window_hi_ms, s.window_ms, $1::bigint) * interval '1 millisecond')::int AS requests,
     (SELECT count(*) FROM key_job_slots j WHERE j.service = k.service AND j.key_fingerprint = k.key_fingerprint
        AND NOT j.pending)::int AS jobs,
     (SELECT count(*) FROM key_job_slots j WHERE j.service = k.service AND j.key_fingerprint = k.key_fingerprint
        AND j.pending)::int AS pending,
     CASE WHEN k.ceiling_at > clock_timestamp() - $2::bigint * interval '1 millisecond' THEN k.job_ceiling END AS ceiling
   FROM key_quotas k LEFT JOIN quota_states s ON s.service = k.service AND s.key_fingerprint = k.key_fingerprint
   ORDER BY k.service, k.key_fingerprint`,
} as const;
