/**
 * The PostgreSQL store's backend (../backend.ts): what the store engine asks of the database, on a
 * pool of connections. Every write is committed before its promise resolves; the writes of one item
 * row are made in the order asked (KeyedSerial); an admission's transaction is serialized with every
 * other of the out dir by a transaction-scoped advisory lock (pg-plans.ts PG_PLANS.admissionLock); the
 * out dir's lock is a session advisory lock with a row naming its holder (pg-lock.ts), and while this
 * store holds it and its connection is lost, every write is refused. Driver errors are redacted
 * (connection.ts): the store's password never appears in one.
 */
import type pg from 'pg';
import type { StoreBackend } from '../backend.ts';
import { ItemTakenOverError } from '../item-taken-over.ts';
import type { Sql } from '../sql.ts';
import { JournalLockedError } from '../sqlite/runner-lock.ts';
import { runAsync, type Step } from '../step.ts';
import { type Queryable, storeError, withPoolClient } from './connection.ts';
import { OutDirLock } from './pg-lock.ts';
import { PG_PLANS } from './pg-plans.ts';
import { PgSql } from './pg-sql.ts';

/** Runs each task of a key after the earlier ones of that key have settled (an item row's writes). */
class KeyedSerial {
  private readonly tails = new Map<number, Promise<unknown>>();

  run<T>(key: number | undefined, task: () => Promise<T>): Promise<T> {
    if (key === undefined) return task();
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(task, task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}

/** See the module comment. */
export class PgBackend implements StoreBackend {
  readonly noun = 'store';
  readonly plans = PG_PLANS;
  onRollback: () => void = () => undefined;
  private readonly serial = new KeyedSerial();
  private lock: OutDirLock | null = null;
  /** Queries under way (close waits for them). */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    readonly pool: pg.Pool,
    private readonly url: string,
    private readonly schema: string,
    private readonly outDir: string,
    /** The store as it may be shown: the redacted URL and the schema. */
    readonly location: string,
    private readonly now: () => number,
  ) {}

  /** Keeps `work` until it settles, so that close() waits for what was asked before it. */
  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    const done = (): void => {
      this.inFlight.delete(work);
    };
    work.then(done, done);
    return work;
  }

  /** What the driver threw, redacted (only driver calls run inside use and transaction). */
  private errorOf(err: unknown, what: string): Error {
    if (err instanceof JournalLockedError || err instanceof ItemTakenOverError) return err;
    return storeError(err, this.url, what);
  }

  /** Runs `fn` on a pooled connection, its driver errors turned into redacted ones. */
  use<T>(what: string, fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.track(fn(this.pool).catch((err: unknown) => Promise.reject(this.errorOf(err, what))));
  }

  read<T>(what: string, body: (sql: Sql) => Step<T>): Promise<T> {
    return this.use(what, (q) => runAsync(body(new PgSql(q))));
  }

  readCache<T>(what: string, body: (sql: Sql) => Step<T>): Promise<T> {
    return this.read(what, body);
  }

  transaction<T>(what: string, body: (sql: Sql) => Step<T>, serial?: number): Promise<T> {
    return this.inTransaction(what, (q) => runAsync(body(new PgSql(q))), serial);
  }

  /** Runs `fn` in one transaction (after the earlier writes of row `serial`), the store writable. */
  inTransaction<T>(what: string, fn: (q: pg.PoolClient) => Promise<T>, serial?: number): Promise<T> {
    this.assertWritable();
    return this.serial.run(serial, () =>
      this.track(
        withPoolClient(this.pool, fn).catch((err: unknown) => {
          this.onRollback();
          return Promise.reject(this.errorOf(err, what));
        }),
      ),
    );
  }

  write(what: string, body: (sql: Sql) => Step<void>, serial?: number): Promise<void> {
    this.assertWritable();
    return this.serial.run(serial, () => this.read(what, body));
  }

  atomicWrite(what: string, body: (sql: Sql) => Step<void>): Promise<void> {
    return this.transaction(what, body);
  }

  beforeBatch(): void {}

  /** Refuses writes once the held lock was lost (another runner may hold the out dir). */
  assertWritable(): void {
    const lost = this.lock?.lost;
    if (lost) throw lost;
  }

  async acquireLock(): Promise<void> {
    if (this.lock && !this.lock.lost) return;
    if (this.lock) await this.lock.release().catch(() => undefined);
    this.lock = null;
    this.lock = await OutDirLock.acquire(this.url, this.schema, this.outDir, this.location, this.now);
  }

  async releaseLock(): Promise<void> {
    const lock = this.lock;
    this.lock = null;
    await lock?.release();
  }

  /** Waits for the writes asked before it, then releases the out dir and closes the connections. */
  async close(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    const lock = this.lock;
    this.lock = null;
    try {
      await lock?.release();
    } finally {
      await this.pool.end().catch(() => undefined);
    }
  }
}
