/**
 * The SQLite journal's backend (../backend.ts): what the store engine asks of the database, on one
 * better-sqlite3 connection. Reads and transactions are done by the time their promise is made (the
 * engine's row work runs synchronously, runNow); writes on their own join the write group (one commit
 * for those asked within a few ms: write-group.ts), and a write's promise resolves once the WAL is
 * synced (wal-sync.ts, off the event loop); a transaction's once committed; the out dir's lock is an operating-system file
 * lock (runner-lock.ts), so a killed runner holds nothing.
 */
import type Database from 'better-sqlite3';
import type { StoreBackend } from '../backend.ts';
import { recordedOptions } from '../recorded-options.ts';
import { serviceIdentity } from '../service-identity.ts';
import type { Sql } from '../sql.ts';
import { runNow, type Step } from '../step.ts';
import { acquireRunnerLock, type RunnerLock, releaseRunnerLock } from './runner-lock.ts';
import { SCRUB_SERVICE_CREDENTIALS, SQLITE_PLANS } from './sqlite-plans.ts';
import { SqliteSql } from './sqlite-sql.ts';
import type { WalSync } from './wal-sync.ts';
import { WriteGroup } from './write-group.ts';

/** See the module comment. Not safe to share between threads; one per process and out dir. */
export class SqliteBackend implements StoreBackend {
  readonly noun = 'journal';
  readonly plans = SQLITE_PLANS;
  onRollback: () => void = () => undefined;
  readonly sql: SqliteSql;
  /** Writes asked for within a few ms of each other, committed together (write-group.ts). */
  private readonly group: WriteGroup;
  private lock: RunnerLock | null = null;

  constructor(
    readonly db: Database.Database,
    /** The journal file. */
    readonly location: string,
    private readonly outDir: string,
    private readonly now: () => number,
    /** Syncs the WAL (null: commits are not synced, the bench's baseline). */
    private readonly walSync: WalSync | null = null,
  ) {
    this.sql = new SqliteSql(db);
    this.group = new WriteGroup(
      db,
      () => this.onRollback(),
      () => this.durable(),
    );
  }

  /** Resolves once every commit made so far is on disk. */
  durable(): Promise<void> {
    return this.walSync ? this.walSync.durable() : Promise.resolve();
  }

  /** Runs `body` now, every queued write committed first (nothing overtakes a queued write). */
  readNow<T>(body: (sql: Sql) => Step<T>): T {
    this.group.flush();
    return runNow(body(this.sql));
  }

  async read<T>(_what: string, body: (sql: Sql) => Step<T>): Promise<T> {
    return this.readNow(body);
  }

  /** A cache read, now, without committing the queued writes first: it never costs a commit. */
  async readCache<T>(_what: string, body: (sql: Sql) => Step<T>): Promise<T> {
    return runNow(body(this.sql));
  }

  /**
   * Runs `body` in one `BEGIN IMMEDIATE` transaction, now: committed when it returns, on disk once
   * durable() resolves.
   */
  transactionNow<T>(body: (sql: Sql) => Step<T>): T {
    let ran = false;
    try {
      // The queued writes first, in the same transaction: one commit for both (write-group.ts).
      return this.group.commitWith(() => {
        ran = true;
        return runNow(body(this.sql));
      });
    } catch (err) {
      if (ran) this.onRollback(); // rolled back: the rows hold what they held before
      throw err;
    }
  }

  /**
   * Committed when it resolves (backend.ts), not yet synced: an admission need not wait for the disk.
   * What genpipe acts on outside the journal (a create sent, a file reported) is a write's, and a
   * write waits for a sync that covers every commit before it.
   */
  async transaction<T>(_what: string, body: (sql: Sql) => Step<T>): Promise<T> {
    return this.transactionNow(body);
  }

  write(_what: string, body: (sql: Sql) => Step<void>): Promise<void> {
    return this.group.add(() => runNow(body(this.sql)));
  }

  atomicWrite(what: string, body: (sql: Sql) => Step<void>): Promise<void> {
    return this.write(what, body);
  }

  /** Takes the credentials out of the service of rows an earlier genpipe wrote with them (SCRUB_SERVICE_CREDENTIALS). */
  beforeBatch(): void {
    this.db.function('genpipe_service_identity', { deterministic: true }, (s: unknown) =>
      typeof s === 'string' ? serviceIdentity(s) : s,
    );
    this.db.function('genpipe_recorded_options', { deterministic: true }, (s: unknown) =>
      typeof s === 'string' ? JSON.stringify(recordedOptions(JSON.parse(s) as Record<string, unknown>)) : s,
    );
    this.transactionNow(function* (sql) {
      for (const text of SCRUB_SERVICE_CREDENTIALS) yield* sql.run(text, []);
    });
  }

  assertWritable(): void {}

  /** Takes the out dir's runner lock, now (runner-lock.ts); nothing when held already. */
  takeLock(): void {
    if (this.lock) return;
    this.lock = acquireRunnerLock(this.db, this.location, this.outDir, this.now());
  }

  async acquireLock(): Promise<void> {
    this.takeLock();
  }

  async releaseLock(): Promise<void> {
    const lock = this.lock;
    this.lock = null;
    if (lock) releaseRunnerLock(this.db, this.outDir, lock);
  }

  /**
   * Releases the out dir and closes the file (a checkpoint folds the WAL into the database). Done by
   * the time the call returns (the promise only reports it), so a hard exit right after it loses nothing.
   */
  async close(): Promise<void> {
    try {
      this.group.flush();
      if (this.lock) releaseRunnerLock(this.db, this.outDir, this.lock);
    } finally {
      this.lock = null;
      this.db.close();
      await this.walSync?.close();
    }
  }
}
