/**
 * What a store's engine (engine.ts) asks of its database, apart from the rows themselves (sql.ts): how
 * a read, a transaction and a write on their own are run, the statements the dialect says its own way,
 * and the out dir's lock. Two adapters implement it: the SQLite journal (sqlite/sqlite-backend.ts:
 * synchronous, its writes grouped into one commit, an operating-system file lock) and the PostgreSQL
 * store (postgres/pg-backend.ts: a pool, an advisory lock, rows claimed by the admitting worker).
 */
import type { Sql } from './sql.ts';
import type { Statements } from './statements.ts';
import type { Step } from './step.ts';

/** The statements a dialect writes its own way; $1 is the out dir in each. */
export interface DialectPlans {
  /** The shared statements in the dialect's words (statements.ts). */
  statements: Statements;
  /**
   * Records a batch ($1 out dir, $2 started at, $3 input dir, $4 service, $5 options, $6 pid, $7 host),
   * answering its `id`.
   */
  insertBatch: string;
  /** Serializes the admissions of an out dir across processes (run first in each), or null. */
  admissionLock: string | null;
  /** Claims row $2 for the admitting process, answering its `claim` number, or null (no claims). */
  claim: string | null;
}

/** See the module comment. */
export interface StoreBackend {
  /** The store as it may be shown (no password). */
  readonly location: string;
  /** 'journal' or 'store': what its errors call it. */
  readonly noun: string;
  readonly plans: DialectPlans;
  /** Called when a transaction (or a group of writes) was rolled back: rows written in it are not. */
  onRollback: () => void;
  /** Reads, with every write asked for before visible. */
  read<T>(what: string, body: (sql: Sql) => Step<T>): Promise<T>;
  /**
   * Reads a cache (the content-hash cache), where a stale answer is only a miss: writes asked for
   * before need not be visible, so the read does not commit them first (the SQLite write group's).
   */
  readCache<T>(what: string, body: (sql: Sql) => Step<T>): Promise<T>;
  /**
   * One transaction, committed when it resolves, rolled back (onRollback) when `body` throws; on disk
   * at the latest with the next write's (the journal syncs commits off the event loop, in order).
   * `serial`: an item row's id, whose writes are made in the order asked.
   */
  transaction<T>(what: string, body: (sql: Sql) => Step<T>, serial?: number): Promise<T>;
  /** A synchronous backend's transaction, done when it returns (absent: the backend is asynchronous). */
  transactionNow?<T>(body: (sql: Sql) => Step<T>): T;
  /** A write on its own, durable when it resolves; `serial` as for transaction. */
  write(what: string, body: (sql: Sql) => Step<void>, serial?: number): Promise<void>;
  /**
   * A write of several statements made together, durable when it resolves (the journal groups it with
   * the writes asked for about then; PostgreSQL runs it in a transaction of its own).
   */
  atomicWrite(what: string, body: (sql: Sql) => Step<void>): Promise<void>;
  /** Made before a batch is recorded (the journal takes old credentials out of its rows). */
  beforeBatch(): void;
  /** Refuses writes (throws) when they may not be made now: the lock this store held is lost. */
  assertWritable(): void;
  acquireLock(): Promise<void>;
  releaseLock(): Promise<void>;
  /** Waits for the writes asked before it, releases the lock, closes the database. */
  close(): Promise<void>;
}
