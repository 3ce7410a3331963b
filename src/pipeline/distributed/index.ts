/**
 * Distributed mode: the store's queue of items (item-queue.ts), the enqueuing side (enqueue.ts, and
 * enqueue-ahead.ts for a run's folder), the runner's delegate that hands items to the workers and
 * follows their jobs (delegate.ts, job-follower.ts), and the worker (worker.ts) that drives each item
 * it takes through the stages in a session of the runner (item-session.ts). What it guarantees, and
 * how, is said in worker.ts and ../store/item-taken-over.ts.
 */
export { type DelegateOptions, delegateToWorkers } from './delegate.ts';
export { type Enqueued, type EnqueuedJob, enqueueFolder } from './enqueue.ts';
export { type Ahead, type AheadOptions, enqueueAhead } from './enqueue-ahead.ts';
export {
  type ItemJobData,
  type ItemJobResult,
  type ItemQueue,
  openItemQueue,
  QUEUE_CHOICES,
  type QueueConnection,
  queueOf,
} from './item-queue.ts';
export type { SessionRunOptions } from './item-session.ts';
export { type HandedJob, JobFollower, NOT_WAITED_FOR } from './job-follower.ts';
export { type QueueCounts, queueCounts } from './queue-counts.ts';
export {
  type JobSlotAnswer,
  type QuotaKey,
  type RequestWindow,
  releaseJobSlot,
  type SlotAnswer,
  takeJobSlot,
  takeRequestSlot,
} from './quota-ledger.ts';
export {
  openSharedDatabase,
  SharedDatabase,
  sharedDatabaseOf,
  storeSharedQuota,
  takeRequestSlotFor,
} from './shared-db.ts';
export { type PostgresSharedQuotaOptions, postgresSharedQuota, SLOT_TIMES } from './shared-quota-pg.ts';
export type { OverviewOutDir, OverviewRow, StoreOverview } from './store-overview.ts';
export { DistributedWorker, type OpenedSession, type SessionKey, type WorkerOptions } from './worker.ts';
export { type HeartbeatStore, WorkerHeartbeat } from './worker-heartbeat.ts';
export {
  type KeyQuotaUse,
  WORKER_GONE_BEATS,
  WORKER_HEARTBEAT_MS,
  type WorkerBeat,
  type WorkerRole,
  type WorkerRow,
  works,
} from './worker-registry.ts';
