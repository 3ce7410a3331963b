/**
 * One runner per out dir, across machines: the PostgreSQL store's lock is a session advisory lock
 * (pg_try_advisory_lock, keyed by the store's schema and the out dir) held by a connection of its own
 * for as long as the runner holds the out dir. The server drops it when that session ends: on release,
 * and when the holder dies — a runner killed with -9 closes its socket at once, so its lock is free at
 * once; a machine that vanishes from the network is noticed by TCP keepalives (idle 10 s, then 3
 * probes 5 s apart) and its lock dropped then. No lease is judged by a clock, so a runner that is
 * merely slow (paused, swapping) never loses the out dir to a second one while it still works.
 *
 * Who holds it is information only, for the refusal's message and for status: the holder's pid, host,
 * process start and since when, in the runner_locks row, with a heartbeat (`heartbeat_at`) it renews
 * while it holds the lock. A row whose heartbeat is old names a holder that died without releasing.
 *
 * When the lock's connection is lost (the server restarted, the network failed), the lock is lost
 * too: `lost` says so, and the store then refuses every write (a second runner may hold the out dir).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import pg from 'pg';
import { JournalLockedError, processStartTime } from '../sqlite/runner-lock.ts';
import { runAsync } from '../step.ts';
import { lockHolder } from '../tables.ts';
import { clientConfig, type StoreConnectionError, storeError } from './connection.ts';
import { LOCK_SQL, PG_PLANS } from './pg-plans.ts';
import { PgSql } from './pg-sql.ts';

/** How often the holder renews its row's heartbeat. */
export const LOCK_HEARTBEAT_MS = 10_000;

/** The server's TCP keepalive settings for the lock's session: a vanished holder is noticed in ~25 s. */
const KEEPALIVES = '-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3';

/** A held lock of an out dir (release it). */
export class OutDirLock {
  private lostWith: StoreConnectionError | null = null;
  private released = false;
  private readonly heartbeat: NodeJS.Timeout;

  private constructor(
    private readonly session: pg.Client,
    private readonly url: string,
    private readonly outDir: string,
    private readonly token: string,
    now: () => number,
  ) {
    const lose = (err: unknown): void => {
      if (this.released || this.lostWith) return;
      this.lostWith = storeError(err, url, `the lock of ${outDir} was lost with its connection`);
    };
    session.on('error', lose);
    session.on('end', () => lose(new Error('the connection ended')));
    this.heartbeat = setInterval(() => {
      session.query(LOCK_SQL.heartbeat, [outDir, token, now()]).catch(lose);
    }, LOCK_HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  /**
   * Takes `outDir` for this process, or refuses naming its holder.
   *
   * @param location - the store as it may be shown (named when the holder is unknown)
   * @throws JournalLockedError (code `journal_locked`) when another session holds it
   * @throws StoreConnectionError when the store cannot be reached
   */
  static async acquire(
    url: string,
    schema: string,
    outDir: string,
    location: string,
    now: () => number,
  ): Promise<OutDirLock> {
    const config = clientConfig(url, schema);
    const session = new pg.Client({ ...config, options: `${config.options} ${KEEPALIVES}` });
    session.on('error', () => undefined); // until the lock takes it over
    try {
      await session.connect();
      const { rows } = await session.query<{ taken: boolean }>(LOCK_SQL.tryLock, [outDir]);
      if (!rows[0]?.taken)
        throw new JournalLockedError(
          outDir,
          await runAsync(lockHolder(new PgSql(session), PG_PLANS.statements.table, outDir)),
          location,
        );
      const token = randomUUID();
      await session.query(LOCK_SQL.upsert, [
        outDir,
        process.pid,
        processStartTime(process.pid),
        hostname(),
        now(),
        token,
      ]);
      return new OutDirLock(session, url, outDir, token, now);
    } catch (err) {
      await session.end().catch(() => undefined);
      if (err instanceof JournalLockedError) throw err;
      throw storeError(err, url, `cannot take the lock of ${outDir}`);
    }
  }

  /** The error the lock was lost with, or null while it is held. */
  get lost(): StoreConnectionError | null {
    return this.lostWith;
  }

  /** Forgets this holder's row and ends the session (which drops the advisory lock). */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    clearInterval(this.heartbeat);
    try {
      if (!this.lostWith) {
        await this.session.query(LOCK_SQL.release, [this.outDir, this.token]);
        await this.session.query(LOCK_SQL.unlock, [this.outDir]);
      }
    } catch (err) {
      throw storeError(err, this.url, `releasing the lock of ${this.outDir}`);
    } finally {
      await this.session.end().catch(() => undefined);
    }
  }
}
