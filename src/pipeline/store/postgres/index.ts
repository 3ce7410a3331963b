/**
 * The PostgreSQL store: the Store (../store) in a database several workers share (postgres-store.ts),
 * its connection's redaction of passwords (connection.ts), and a real server from npm packages for the
 * tests and the demo (embedded.ts, imported on its own: it hooks the process's signals).
 */
export { redactUrl, StoreConnectionError, secretsOf } from './connection.ts';
export { LOCK_HEARTBEAT_MS } from './pg-lock.ts';
export { SCHEMA_VERSION } from './pg-plans.ts';
export { StoreSchemaError } from './pg-schema.ts';
export type { ItemProgress } from './postgres-store.ts';
export {
  DEFAULT_STORE_SCHEMA,
  openPostgresStore,
  PostgresStore,
  type PostgresStoreOptions,
} from './postgres-store.ts';
export { REACH_BACKOFF, StoreReachability } from './reachability.ts';
