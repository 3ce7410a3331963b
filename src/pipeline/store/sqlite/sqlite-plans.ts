/**
 * Every SQL text of the SQLite journal, in one place: the schema and its migrations, the connection's
 * pragmas, and each statement the journal's parts prepare (items, batches, shared references, the
 * content-hash cache, quota state, the runner lock). The parts hold no SQL of their own; this module
 * holds nothing but text. The statements both stores run are written once, in ../store/statements.ts.
 */
import type { DialectPlans } from '../backend.ts';
import { sharedTables, statementsOf } from '../statements.ts';

/** The tables the journal holds as the PostgreSQL store does (place: added by migration 1 → 2). */
const TABLES = sharedTables({ serialId: 'INTEGER PRIMARY KEY', big: 'INTEGER', flag: 'INTEGER' }, '', {
  batches: '',
  runnerLocks: '',
});

/** The schema of version 1. */
export const SCHEMA_V1 = `
${TABLES.batches.trimStart()}
${TABLES.items.trimStart()}CREATE INDEX IF NOT EXISTS items_key ON items(content_hash, recipe_hash);

${TABLES.sharedReferences.trimStart()}${TABLES.contentHashes.trimStart()}
${TABLES.runnerLocks.trimStart()}`;

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
${TABLES.quotaStates.trimStart()}`,
  3: `
${TABLES.jobDurations.trimStart()}`,
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
  cacheSize: (kib: number) => `cache_size = -${kib}`,
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
  /** A read of the (empty) lock file: it needs a shared lock, refused while a runner holds it. */
  probe: 'SELECT count(*) FROM sqlite_master',
} as const;
