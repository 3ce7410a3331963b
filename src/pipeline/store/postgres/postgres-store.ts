/**
 * The PostgreSQL store: the Store interface (../store/store.ts, its contract in ../store/README.md) in
 * a database several workers can share, for distributed mode. Its decisions are the store engine's
 * (../store/engine.ts), written once for every store, so a file is admitted, resumed or failed by the
 * crash policy in the same way whichever store records it; this class is only what PostgreSQL adds:
 * opening the pool (the schema created or brought up to date), its backend
 * (../store/postgres/pg-backend.ts: the pool, the advisory locks, the claim fence, redacted errors),
 * and what a run waiting for workers reads of their progress (changedSince).
 *
 * @example
 * const store = await openPostgresStore({ url: 'postgres://genpipe@db.internal/genpipe', outDir: 'out' });
 * await store.startBatch({ inputDir: 'in', service: baseUrl });
 */
import type pg from 'pg';
import type { Item, ItemState } from '../../item.ts';
import { StoreEngine } from '../engine.ts';
import { itemFromJson } from '../item-json.ts';
import type { JournalRow } from '../journal-row.ts';
import { realLocation } from '../local-disk.ts';
import { runAsync } from '../step.ts';
import { JOURNAL_TEXTS } from '../texts.ts';
import { checkSchemaName, type Queryable, redactUrl, type StoreConnectionError } from './connection.ts';
import { PgBackend } from './pg-backend.ts';
import { ITEM_SQL } from './pg-plans.ts';
import { openSchemaPool } from './pg-schema.ts';
import { PgSql } from './pg-sql.ts';
/** Where an input's active row stands (a waiting run's view of the work of others). */
export interface ItemProgress {
  input: string;
  place: string;
  state: ItemState;
  reason: string | null;
  /** The step a chain item is at; null for a single-request rule's item. */
  step: string | null;
  /** When it was last written, ms since the epoch by its writer's clock. */
  updatedAt: number;
  /** The item as last saved. */
  item: Item;
}

/** Options of openPostgresStore. */
export interface PostgresStoreOptions {
  /** The database's connection string (`postgres://user:password@host:port/db`); shown only redacted. */
  url: string;
  /** The out dir this store serves. */
  outDir: string;
  /** The schema holding genpipe's tables (created when missing); default `genpipe`. */
  schema?: string;
  /** Take the out dir's lock at once (default true). */
  lock?: boolean;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
}

/** The schema genpipe's tables are in unless told otherwise. */
export const DEFAULT_STORE_SCHEMA = 'genpipe';

/**
 * Opens the store of `outDir` in the database at `url`: the schema created or brought up to date, and
 * the out dir's lock taken unless `lock: false`.
 *
 * @throws StoreConnectionError when the database cannot be reached or used (its message holds no password)
 * @throws JournalLockedError when another runner holds the out dir
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = checkSchemaName(opts.schema ?? DEFAULT_STORE_SCHEMA);
  let failure: StoreConnectionError | null = null;
  const pool = await openSchemaPool(opts.url, schema, (err) => {
    failure ??= err;
  });
  const store = new PostgresStore(pool, opts, schema, () => failure);
  if (opts.lock !== false) {
    try {
      await store.acquireLock();
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  }
  return store;
}

/** See the module comment. One per process and out dir (it may share the database with others). */
export class PostgresStore extends StoreEngine {
  private readonly pg: PgBackend;
  private readonly url: string;

  constructor(
    private readonly pool: pg.Pool,
    opts: PostgresStoreOptions,
    schema: string,
    private readonly poolFailure: () => StoreConnectionError | null,
  ) {
    const outDir = realLocation(opts.outDir);
    const now = opts.now ?? Date.now;
    const location = `${redactUrl(opts.url)} (schema ${schema})`;
    const backend = new PgBackend(pool, opts.url, schema, outDir, location, now);
    super(backend, outDir, now);
    this.pg = backend;
    this.url = opts.url;
  }

  // ---- reading --------------------------------------------------------------------------------

  /** The active row of `input` in this out dir, or null (tests and inspection). */
  async get(input: string): Promise<JournalRow | null> {
    this.assertOpen();
    return this.backend.read(`reading ${input}`, (sql) => this.items.active(sql, input));
  }

  /** Every row `input` has had in this out dir, oldest first (tests and inspection). */
  async history(input: string): Promise<JournalRow[]> {
    this.assertOpen();
    return this.backend.read(`reading ${input}`, (sql) => this.items.history(sql, input));
  }

  /** The active row of every input of this out dir, by input path (tests and inspection). */
  async rows(): Promise<JournalRow[]> {
    this.assertOpen();
    return this.backend.read('reading the items', (sql) => this.items.allActive(sql));
  }

  /**
   * Where each active row of this out dir written at or after `sinceMs` (by its writer's clock) stands:
   * what a run waiting for workers shows of their progress, without reading the items themselves.
   */
  async changedSince(sinceMs: number): Promise<ItemProgress[]> {
    this.assertOpen();
    type Row = { input: string; place: string; state: string; reason: string | null; step: string | null };
    const { rows } = await this.pg.use('reading the items', (q) =>
      q.query<Row & { item: string; updated_at: string }>(ITEM_SQL.changedSince, [this.outDir, sinceMs]),
    );
    return rows.map((r) => ({
      item: itemFromJson(r.item),
      input: r.input,
      place: r.place,
      state: r.state as ItemState,
      reason: r.reason,
      step: r.step,
      updatedAt: Number(r.updated_at),
    }));
  }

  // ---- what distributed mode shares of its database (../distributed/shared-db.ts) ---------------

  /** The store's connections and URL, for the tables distributed mode shares beside it (shared-db.ts). */
  connection(): { pool: pg.Pool; url: string } {
    return { pool: this.pool, url: this.url };
  }

  /** True when `intent` is an item this store admitted and still saves (its intent can be recorded here). */
  holdsIntent(intent: Item): boolean {
    return !this.closed && this.boundRow(intent.input) !== undefined;
  }

  /**
   * Runs `fn` in one transaction that also records `intent` (an admitted item holding the request id of
   * the create about to be sent, as recordIntent) when `fn` calls `record`: the quota ledger takes the
   * create's request slot in it (shared-db.ts takeRequestSlotFor).
   *
   * @throws Error when the item was not admitted
   */
  recordIntentWith<T>(
    what: string,
    intent: Item,
    fn: (q: Queryable, record: (q: Queryable) => Promise<void>) => Promise<T>,
  ): Promise<T> {
    this.assertWritable();
    const id = this.boundRow(intent.input);
    if (id === undefined) throw new Error(JOURNAL_TEXTS.notPlanned(intent.input, intent.state));
    const batchId = this.batch?.id ?? null;
    const record = (q: Queryable) => runAsync(this.items.save(new PgSql(q), id, intent, batchId));
    return this.pg.inTransaction(what, (q) => fn(q, record), id);
  }

  /** The failure of an idle pooled connection, if any (the pool replaces it; for status). */
  connectionFailure(): StoreConnectionError | null {
    return this.poolFailure();
  }
}
