/**
 * What distributed mode keeps in the store's database besides an out dir's rows, apart from the
 * Store: the quota every process on an API key shares (quota-ledger.ts, the client's side in
 * shared-quota-pg.ts) and the registry of workers (worker-registry.ts). A SharedDatabase is opened on
 * the database's URL alone (a worker's, whose jobs' out dirs are each a session of their own), or on
 * the connections of an open PostgreSQL store (sharedDatabaseOf: a run, status). A create's intent is
 * recorded in the transaction of its request slot through the store that admitted the item
 * (storeSharedQuota, takeRequestSlotFor).
 */
import type pg from 'pg';
import type { SharedQuota } from '../../client/index.ts';
import { currentStep, type Item } from '../item.ts';
import { checkSchemaName, type Queryable, storeError, withPoolClient } from '../store/postgres/connection.ts';
import { openSchemaPool } from '../store/postgres/pg-schema.ts';
import { DEFAULT_STORE_SCHEMA, type PostgresStore } from '../store/postgres/postgres-store.ts';
import {
  type JobSlotAnswer,
  type QuotaKey,
  type RequestWindow,
  releaseJobSlot,
  type SlotAnswer,
  takeJobSlot,
  takeRequestSlot,
} from './quota-ledger.ts';
import { type PostgresSharedQuotaOptions, postgresSharedQuota } from './shared-quota-pg.ts';
import { readStoreOverview, type StoreOverview } from './store-overview.ts';
import {
  beatWorker,
  forgetWorker,
  type KeyQuotaUse,
  keyQuotaUse,
  listWorkers,
  type WorkerBeat,
  type WorkerRow,
} from './worker-registry.ts';

/** See the module comment. */
export class SharedDatabase {
  constructor(
    /** The database's connections (the store's, when opened on one). */
    readonly pool: pg.Pool,
    private readonly url: string,
    /** Whether close() ends the pool (false: it is a store's, which ends it). */
    private readonly ownsPool: boolean,
  ) {}

  /** Runs `fn` with a pooled connection (in one transaction with `tx`), its driver errors redacted. */
  private async use<T>(what: string, fn: (q: Queryable) => Promise<T>, tx = false): Promise<T> {
    try {
      return tx ? await withPoolClient(this.pool, fn) : await fn(this.pool);
    } catch (err) {
      throw storeError(err, this.url, what);
    }
  }

  /** The client's SharedQuota of `key` (shared-quota-pg.ts), recording no intent. */
  sharedQuota(key: QuotaKey, options: Omit<PostgresSharedQuotaOptions, 'withIntent'> = {}): SharedQuota {
    return postgresSharedQuota(this.pool, key, options);
  }

  /** Takes job slot `slotId` of `key` when fewer than `ceiling` are held by all workers. */
  takeJobSlot(key: QuotaKey, ceiling: number, slotId: string): Promise<JobSlotAnswer> {
    return this.use('taking a job slot', (q) => takeJobSlot(q, key, ceiling, slotId), true);
  }

  /** Gives job slot `slotId` of `key` back (false: it was not held). */
  releaseJobSlot(key: QuotaKey, slotId: string): Promise<boolean> {
    return this.use('releasing a job slot', (q) => releaseJobSlot(q, key, slotId), true);
  }

  /** Records or renews a worker's row (its heartbeat). */
  beatWorker(beat: WorkerBeat): Promise<void> {
    return this.use("recording the worker's heartbeat", (q) => beatWorker(q, beat));
  }

  /** Removes a stopping worker's row. */
  forgetWorker(id: string): Promise<void> {
    return this.use("removing the worker's row", (q) => forgetWorker(q, id));
  }

  /** The workers the database knows of, alive or gone. */
  workers(): Promise<WorkerRow[]> {
    return this.use('reading the workers', (q) => listWorkers(q));
  }

  /** Every out dir on the store and the active row of each of their files (store-overview.ts). */
  overview(): Promise<StoreOverview> {
    return this.use('reading the out dirs', (q) => readStoreOverview(q));
  }

  /** Each API key's quota in use (by fingerprint). */
  quotaUse(): Promise<KeyQuotaUse[]> {
    return this.use('reading the shared quota', (q) => keyQuotaUse(q));
  }

  /** Ends its connections, when they are its own. */
  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end().catch(() => undefined);
  }
}

/**
 * Opens the shared tables of the database at `url` (the schema created or brought up to date), on
 * connections of their own.
 *
 * @throws StoreConnectionError when the database cannot be reached or used (its message holds no password)
 */
export async function openSharedDatabase(
  url: string,
  schema = DEFAULT_STORE_SCHEMA,
): Promise<SharedDatabase> {
  const pool = await openSchemaPool(url, checkSchemaName(schema), () => undefined);
  return new SharedDatabase(pool, url, true);
}

/** The shared tables on the connections of an open PostgreSQL store (closed with it). */
export function sharedDatabaseOf(store: PostgresStore): SharedDatabase {
  const { pool, url } = store.connection();
  return new SharedDatabase(pool, url, false);
}

/**
 * Intent before action, under the key's shared quota: when the key's request window has room, logs
 * the request and records `intent` (an item `store` admitted, holding the request id of the create
 * about to be sent, as recordIntent) in one transaction; else records nothing and says how long until
 * a slot frees. Only once it resolves granted may the create be sent.
 *
 * @throws Error when the item holds no request id or was not admitted
 */
export function takeRequestSlotFor(
  store: PostgresStore,
  key: QuotaKey,
  window: RequestWindow,
  intent: Item,
): Promise<SlotAnswer> {
  const requestId = currentStep(intent)?.requestId;
  if (!requestId) throw new Error(`store: takeRequestSlot(${intent.input}) without a request id`);
  return store.recordIntentWith(`taking a request slot for ${intent.input}`, intent, (q, record) =>
    takeRequestSlot(q, key, window, requestId, record),
  );
}

/**
 * The client's SharedQuota of `key` on the database of `store`: the quota every worker of the key
 * shares. Given an item of this store as a create's intent (CreateOptions.intent: an admitted item
 * holding the create's request id), its request slot is taken in the transaction that records the
 * intent (takeRequestSlotFor): a crash between the two cannot leave a request counted and its intent
 * unrecorded.
 */
export function storeSharedQuota(
  store: PostgresStore,
  key: QuotaKey,
  options: Omit<PostgresSharedQuotaOptions, 'withIntent'> = {},
): SharedQuota {
  return postgresSharedQuota(store.connection().pool, key, {
    ...options,
    withIntent: (requestId, window, intent) => {
      if (!isItem(intent) || currentStep(intent)?.requestId !== requestId) return null;
      if (!store.holdsIntent(intent)) return null;
      return takeRequestSlotFor(store, key, window, intent);
    },
  });
}

/** An item of the pipeline (a create's intent), as far as the store can tell. */
function isItem(value: unknown): value is Item {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<Item>;
  return typeof v.input === 'string' && typeof v.state === 'string' && Array.isArray(v.steps);
}
