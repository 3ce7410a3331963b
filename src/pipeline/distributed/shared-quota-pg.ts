/**
 * The client's SharedQuota (client/shared-quota.ts) in PostgreSQL, on the quota ledger
 * (quota-ledger.ts): every process on one API key takes its creates' request slots from one exact
 * sliding-window log, by the database's clock, reserves a job slot for each create under the key's
 * ceiling (learned by whichever process met it), and records its running jobs as job slots (slot id:
 * the generation id). Each call is one short transaction holding the key's row lock for the decision
 * only.
 */
import type pg from 'pg';
import {
  type SharedJobSlotAnswer,
  type SharedQuota,
  SharedQuotaError,
  type SharedSlotAnswer,
  type SharedWindow,
} from '../../client/index.ts';
import { LIMITS } from '../../spec/index.ts';
import { ItemTakenOverError } from '../store/item-taken-over.ts';
import type { Queryable } from '../store/postgres/connection.ts';
import { withPoolClient } from '../store/postgres/connection.ts';
import { LEDGER_SQL } from '../store/postgres/pg-plans.ts';
import {
  endReservation,
  type QuotaKey,
  type RequestWindow,
  releaseJobSlot,
  reserveJobSlot,
  type SlotAnswer,
  type SlotTimes,
  startJob,
  takeRequestSlot,
} from './quota-ledger.ts';

/** Added to the window for the time a create takes to reach the service. */
const DEFAULT_MARGIN_MS = 50;

/** How long the shared quota trusts what the ledger holds (see SlotTimes). */
export const SLOT_TIMES: SlotTimes = {
  // A reservation is renewed when its request slot is taken; then its create has at most its
  // timeout (60 s by default) to be answered.
  reservationTtlMs: 120_000,
  jobTtlMs: LIMITS.activeJobPruneSeconds * 1000,
  ceilingTtlMs: 3_600_000,
};

/** Options of postgresSharedQuota. */
export interface PostgresSharedQuotaOptions {
  marginMs?: number;
  /** See SharedQuota.recoverAfterMs. */
  recoverAfterMs?: number;
  /** See SharedQuota.pollMs. */
  pollMs?: number;
  times?: Partial<SlotTimes>;
  /**
   * Takes the request slot and records `intent` in one transaction, when this intent is one the caller
   * knows how to record (a store's own item); null to take the slot without it.
   */
  withIntent?: (requestId: string, window: RequestWindow, intent: unknown) => Promise<SlotAnswer> | null;
}

/**
 * The quota's answer before a create is sent, or a SharedQuotaError when the store could not give it
 * (nothing is sent then). A write refused because another worker took the item over stays what it is.
 */
async function consulted<T>(requestId: string, ask: () => Promise<T>): Promise<T> {
  try {
    return await ask();
  } catch (err) {
    if (err instanceof ItemTakenOverError) throw err;
    throw new SharedQuotaError(requestId, err);
  }
}

/** Opens a shared quota of `key` on a pool whose search_path holds genpipe's schema. */
export function postgresSharedQuota(
  pool: pg.Pool,
  key: QuotaKey,
  options: PostgresSharedQuotaOptions = {},
): SharedQuota {
  const marginMs = options.marginMs ?? DEFAULT_MARGIN_MS;
  const times: SlotTimes = { ...SLOT_TIMES, ...options.times };
  const tx = <T>(work: (q: Queryable) => Promise<T>): Promise<T> => withPoolClient(pool, work);
  return {
    ...(options.recoverAfterMs !== undefined ? { recoverAfterMs: options.recoverAfterMs } : {}),
    ...(options.pollMs !== undefined ? { pollMs: options.pollMs } : {}),
    async takeRequestSlot(
      requestId: string,
      window: SharedWindow,
      intent?: unknown,
    ): Promise<SharedSlotAnswer> {
      const paced = { ...window, marginMs };
      const recorded = intent === undefined ? null : options.withIntent?.(requestId, paced, intent);
      const answer = await consulted(
        requestId,
        () => recorded ?? tx((q) => takeRequestSlot(q, key, paced, requestId)),
      );
      const told = answer.window ? { window: answer.window } : {};
      if (!answer.granted) return { granted: false, retryInMs: answer.retryInMs, ...told };
      return { granted: true, intentRecorded: recorded != null, ...told };
    },
    async reserveJobSlot(requestId: string): Promise<SharedJobSlotAnswer> {
      return consulted(requestId, () => tx((q) => reserveJobSlot(q, key, requestId, times)));
    },
    async jobStarted(generationId: string, requestId?: string): Promise<void> {
      // Recorded whatever the count: the service already runs it.
      await tx((q) => startJob(q, key, generationId, requestId));
    },
    async jobNotStarted(requestId: string, refused: 'concurrency' | null): Promise<number | null> {
      return tx((q) => endReservation(q, key, requestId, refused, times));
    },
    async jobEnded(generationId: string): Promise<void> {
      await tx((q) => releaseJobSlot(q, key, generationId));
    },
    async requestAnswered(requestId: string): Promise<void> {
      await pool.query(LEDGER_SQL.requestAnswered, [key.service, key.keyFingerprint, requestId]);
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
