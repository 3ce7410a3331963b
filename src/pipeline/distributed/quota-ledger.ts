/**
 * One quota across every machine that shares an API key: the exact sliding-window log of its requests
 * and the count of its job slots, in the store's database. Each decision is one transaction that locks
 * the key's row (SELECT … FOR UPDATE) for the decision only — never across an HTTP call — and reads
 * the time from the database's clock once the row is locked, so workers whose clocks disagree still
 * share one window. A granted request slot is logged in the same transaction as the caller's intent
 * (the item about to be sent, with its request id: see PostgresStore.takeRequestSlot), so a request
 * is never sent without being counted, nor counted without its intent recorded.
 *
 * The window is the service's: a request counts while less than `windowMs` has passed since it was
 * logged; one more is allowed while fewer than `limit` count. The service counts a request when it
 * arrives, a little after it was logged here: `marginMs` is added to the window to cover that.
 */
import { slowStartRoom } from '../../client/index.ts';
import type { Queryable } from '../store/postgres/connection.ts';
import { LEDGER_SQL } from '../store/postgres/pg-plans.ts';

/** Whose quota: a service and an API key's fingerprint (store/key-fingerprint.ts; never the key). */
export interface QuotaKey {
  service: string;
  keyFingerprint: string;
}

/** The request window of a key. */
export interface RequestWindow {
  /** The window's length, ms (the service's: 60 000): the caller's upper bound of it. */
  windowMs: number;
  /**
   * When the caller learned the length (not given it): the exclusive lower bound it knows. The key's
   * processes then pace by the bounds all of them learned, intersected (the tightest upper bound: see
   * takeRequestSlot).
   */
  loMs?: number;
  /** Requests allowed in a window. */
  limit: number;
  /** Added to the window for the time a request takes to reach the service (default 0). */
  marginMs?: number;
}

/** Bounds of the window's length, ms: lo exclusive, hi inclusive. */
export interface WindowBounds {
  loMs: number;
  hiMs: number;
}

/** The answer to a request for a slot. */
export type SlotAnswer = (
  | {
      granted: true;
      /** When the request was logged, ms since the epoch, by the database's clock. */
      at: number;
    }
  | {
      granted: false;
      /** How long until a slot frees, ms (at least 1). */
      retryInMs: number;
    }
) & {
  /** The bounds of the window's length the key's processes learned, intersected (with loMs given). */
  window?: WindowBounds;
};

/** The answer to a request for a job slot. */
export interface JobSlotAnswer {
  granted: boolean;
  /** Slots of the key held after the decision. */
  held: number;
}

/** Locks the key's row for the rest of the transaction (made when the key is new). */
export async function lockKey(q: Queryable, key: QuotaKey): Promise<void> {
  await q.query(LEDGER_SQL.ensureKey, [key.service, key.keyFingerprint]);
  await q.query(LEDGER_SQL.lockKey, [key.service, key.keyFingerprint]);
}

/**
 * The window's length the key is paced by, under its lock: with the caller's learned bounds, their
 * intersection with those the key's processes learned before (each process's bounds hold the true
 * length, so their intersection does, and its upper bound is the tightest any of them knows: one
 * process learning in whole seconds with a slow round trip no longer paces the others by its looser
 * estimate); bounds that exclude each other mean the window changed, and the caller's start again.
 * Without bounds (a window given, or not learned yet), the caller's length as it is.
 */
async function pacedWindow(q: Queryable, key: QuotaKey, window: RequestWindow): Promise<WindowBounds | null> {
  if (window.loMs === undefined) return null;
  const mine: WindowBounds = { loMs: window.loMs, hiMs: window.windowMs };
  const { rows } = await q.query<{ lo: number | null; hi: number | null; limit: number | null }>(
    LEDGER_SQL.windowBounds,
    [key.service, key.keyFingerprint],
  );
  const row = rows[0];
  const known = row?.lo != null && row?.hi != null ? { loMs: row.lo, hiMs: row.hi } : null;
  const both = known && { loMs: Math.max(known.loMs, mine.loMs), hiMs: Math.min(known.hiMs, mine.hiMs) };
  const paced = both && both.loMs < both.hiMs ? both : mine;
  // The allowance learned with it, for status (the decision takes the caller's).
  if (!known || paced.loMs !== known.loMs || paced.hiMs !== known.hiMs || row?.limit !== window.limit) {
    await q.query(LEDGER_SQL.setWindowBounds, [
      key.service,
      key.keyFingerprint,
      paced.loMs,
      paced.hiMs,
      window.limit,
    ]);
  }
  return paced;
}

/**
 * Inside a transaction: takes a request slot of `key` for `requestId` when its window has room (logging
 * it), else says how long until one frees. Requests older than the window are forgotten. The window's
 * length is the key's (pacedWindow).
 *
 * @param intent - recorded in the same transaction when granted (before the request may be sent)
 */
export async function takeRequestSlot(
  q: Queryable,
  key: QuotaKey,
  window: RequestWindow,
  requestId: string,
  intent?: (q: Queryable) => Promise<void>,
): Promise<SlotAnswer> {
  if (!(window.limit >= 1) || !(window.windowMs > 0)) {
    throw new Error(`quota window: limit ${window.limit} and windowMs ${window.windowMs} must be positive`);
  }
  await lockKey(q, key);
  const bounds = await pacedWindow(q, key, window);
  const span = (bounds?.hiMs ?? window.windowMs) + (window.marginMs ?? 0);
  const told = bounds ? { window: bounds } : {};
  await q.query(LEDGER_SQL.prune, [key.service, key.keyFingerprint, span]);
  const { rows } = await q.query<{ n: number; free_in_ms: number | null }>(LEDGER_SQL.window, [
    key.service,
    key.keyFingerprint,
    span,
    window.limit,
  ]);
  const freeInMs = rows[0]?.free_in_ms ?? null;
  if (freeInMs !== null) return { granted: false, retryInMs: Math.max(1, freeInMs), ...told };
  const logged = await q.query<{ sent_at: Date }>(LEDGER_SQL.logRequest, [
    key.service,
    key.keyFingerprint,
    requestId,
  ]);
  // The create's job-slot reservation, if any, is as young as its request: it is about to be sent.
  await q.query(LEDGER_SQL.touchReservation, [key.service, key.keyFingerprint, requestId]);
  await intent?.(q);
  return { granted: true, at: logged.rows[0]!.sent_at.getTime(), ...told };
}

/**
 * Inside a transaction: takes job slot `slotId` of `key` when fewer than `ceiling` are held (a slot
 * held already is granted again without counting twice).
 */
export async function takeJobSlot(
  q: Queryable,
  key: QuotaKey,
  ceiling: number,
  slotId: string,
): Promise<JobSlotAnswer> {
  await lockKey(q, key);
  const params = [key.service, key.keyFingerprint];
  const held = (await q.query<{ n: number }>(LEDGER_SQL.slotsHeld, params)).rows[0]?.n ?? 0;
  if ((await q.query(LEDGER_SQL.slotHeld, [...params, slotId])).rowCount) return { granted: true, held };
  if (held >= ceiling) return { granted: false, held };
  await q.query(LEDGER_SQL.takeSlot, [...params, slotId]);
  return { granted: true, held: held + 1 };
}

/** Inside a transaction: gives job slot `slotId` of `key` back; false when it was not held. */
export async function releaseJobSlot(q: Queryable, key: QuotaKey, slotId: string): Promise<boolean> {
  await lockKey(q, key);
  const { rowCount } = await q.query(LEDGER_SQL.releaseSlot, [key.service, key.keyFingerprint, slotId]);
  if (!rowCount) return false;
  await q.query(LEDGER_SQL.noteEnding, [key.service, key.keyFingerprint]);
  return true;
}

/** How long the ledger trusts what it holds. */
export interface SlotTimes {
  /** A reservation older than this is forgotten (its create's process died or lost the answer). */
  reservationTtlMs: number;
  /** A job slot older than this is forgotten (the service stops counting a job after an hour). */
  jobTtlMs: number;
  /** A ceiling no 429 confirmed for this long is forgotten (and learned again). */
  ceilingTtlMs: number;
}

/** The answer to a reservation of a job slot. */
export type ReserveAnswer =
  | { granted: true; ceiling: number | null }
  | { granted: false; ceiling: number | null; jobs: number; pending: number };

/**
 * Inside a transaction: reserves one of `key`'s job slots for the create carrying `requestId`, when the
 * key's jobs and reservations are fewer than its ceiling. While no ceiling is known, the client's slow
 * start (slowStartRoom), shared by every worker, so the first "Too many concurrent jobs" comes with few
 * others in flight. A request holding a reservation already keeps it.
 */
export async function reserveJobSlot(
  q: Queryable,
  key: QuotaKey,
  requestId: string,
  times: SlotTimes,
): Promise<ReserveAnswer> {
  await lockKey(q, key);
  const params = [key.service, key.keyFingerprint];
  await q.query(LEDGER_SQL.pruneSlots, [...params, times.reservationTtlMs, times.jobTtlMs]);
  await q.query(LEDGER_SQL.pruneEndings, [...params, times.reservationTtlMs]);
  const ceiling =
    (await q.query<{ job_ceiling: number | null }>(LEDGER_SQL.ceiling, [...params, times.ceilingTtlMs]))
      .rows[0]?.job_ceiling ?? null;
  if ((await q.query(LEDGER_SQL.slotHeld, [...params, requestId])).rowCount)
    return { granted: true, ceiling };
  const row = (
    await q.query<{ jobs: number; pending: number }>(LEDGER_SQL.slotCounts, [...params, requestId])
  ).rows[0];
  const counts = { jobs: row?.jobs ?? 0, pending: row?.pending ?? 0 };
  const room =
    ceiling === null ? slowStartRoom(counts.pending, counts.jobs) : counts.jobs + counts.pending < ceiling;
  if (!room) return { granted: false, ceiling, ...counts };
  await q.query(LEDGER_SQL.reserveSlot, [...params, requestId]);
  return { granted: true, ceiling };
}

/**
 * Inside a transaction: the create `requestId` made job `generationId` (answered 201): its reservation
 * becomes the job's slot (a job recorded without one takes a slot whatever the count: it runs already).
 */
export async function startJob(
  q: Queryable,
  key: QuotaKey,
  generationId: string,
  requestId?: string,
): Promise<void> {
  await lockKey(q, key);
  const params = [key.service, key.keyFingerprint];
  if (requestId !== undefined) await q.query(LEDGER_SQL.releaseReservation, [...params, requestId]);
  if ((await q.query(LEDGER_SQL.slotHeld, [...params, generationId])).rowCount) return;
  await q.query(LEDGER_SQL.takeSlot, [...params, generationId]);
}

/**
 * Inside a transaction: the create `requestId` made no job; its reservation is given back. When the
 * service refused it for the job ceiling, the ceiling is learned: no more than the jobs and the other
 * creates sent and unanswered the key holds now, with the jobs seen ending since this one was sent (the service counted at least its ceiling), nor than the one
 * known — so several workers' 429s only ever lower it towards the truth. Returns the ceiling then in
 * force (null: none known, as when the key holds nothing: the jobs counted are not genpipe's).
 */
export async function endReservation(
  q: Queryable,
  key: QuotaKey,
  requestId: string,
  refused: 'concurrency' | null,
  times: SlotTimes,
): Promise<number | null> {
  await lockKey(q, key);
  const params = [key.service, key.keyFingerprint];
  const ended =
    refused === 'concurrency'
      ? ((await q.query<{ n: number }>(LEDGER_SQL.endingsSince, [...params, requestId])).rows[0]?.n ?? 0)
      : 0;
  await q.query(LEDGER_SQL.releaseReservation, [...params, requestId]);
  const known =
    (await q.query<{ job_ceiling: number | null }>(LEDGER_SQL.ceiling, [...params, times.ceilingTtlMs]))
      .rows[0]?.job_ceiling ?? null;
  if (refused !== 'concurrency') return known;
  const counts = (
    await q.query<{ jobs: number; sent: number }>(LEDGER_SQL.slotCounts, [...params, requestId])
  ).rows[0] ?? { jobs: 0, sent: 0 };
  // Creates still waiting for their request slot were not sent: the service cannot count them; jobs
  // seen ending since this create was sent may have been running when the service refused it.
  const bound = counts.jobs + counts.sent + ended;
  if (bound < 1) return known;
  const ceiling = known === null ? bound : Math.min(known, bound);
  await q.query(LEDGER_SQL.setCeiling, [...params, ceiling]);
  return ceiling;
}
