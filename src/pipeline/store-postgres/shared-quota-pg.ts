/**
 * The client's SharedQuota (client/shared-quota.ts) in PostgreSQL, on the quota ledger
 * (quota-ledger.ts): every process on one API key takes its creates' request slots from one exact
 * sliding-window log, by the database's clock, and records its running jobs as job slots (slot id: the
 * generation id). Each call is one short transaction holding the key's row lock for the decision only.
 */
import type pg from 'pg';
import type { SharedQuota, SharedSlotAnswer, SharedWindow } from '../../client/index.ts';
import type { Queryable } from './pg-items.ts';
import { LEDGER_SQL } from './pg-plans.ts';
import { type QuotaKey, releaseJobSlot, takeJobSlot, takeRequestSlot } from './quota-ledger.ts';

/** Added to the window for the time a create takes to reach the service. */
const DEFAULT_MARGIN_MS = 50;

/** Opens a shared quota of `key` on a pool whose search_path holds genpipe's schema. */
export function postgresSharedQuota(
  pool: pg.Pool,
  key: QuotaKey,
  options: { marginMs?: number } = {},
): SharedQuota {
  const marginMs = options.marginMs ?? DEFAULT_MARGIN_MS;
  const tx = async <T>(work: (q: Queryable) => Promise<T>): Promise<T> => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      const out = await work(c);
      await c.query('COMMIT');
      return out;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.release();
    }
  };
  return {
    async takeRequestSlot(requestId: string, window: SharedWindow): Promise<SharedSlotAnswer> {
      const answer = await tx((q) => takeRequestSlot(q, key, { ...window, marginMs }, requestId));
      return answer.granted ? { granted: true } : { granted: false, retryInMs: answer.retryInMs };
    },
    async jobStarted(generationId: string): Promise<void> {
      // Recorded whatever the count: the service already runs it.
      await tx((q) => takeJobSlot(q, key, Number.MAX_SAFE_INTEGER, generationId));
    },
    async jobEnded(generationId: string): Promise<void> {
      await tx((q) => releaseJobSlot(q, key, generationId));
    },
    async heldJobs(): Promise<string[]> {
      const { rows } = await pool.query<{ slot_id: string }>(LEDGER_SQL.slotIds, [
        key.service,
        key.keyFingerprint,
      ]);
      return rows.map((r) => r.slot_id);
    },
  };
}
