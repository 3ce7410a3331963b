/**
 * The workers of distributed mode, as the store knows them: each `genpipe worker` keeps a row (its id,
 * host, pid, when it started, when it was last seen, the jobs in its hands) that it renews every
 * heartbeat; a row not renewed for WORKER_GONE_BEATS heartbeats is a worker gone (killed, its machine
 * lost). And each API key's quota in use from the shared ledger (quota-ledger.ts) — by the key's
 * fingerprint, never the key. Times are the database's.
 */
import { LIMITS } from '../../spec/index.ts';
import type { Queryable } from '../store/postgres/connection.ts';
import { WORKERS_SQL } from '../store/postgres/pg-plans.ts';
import { SLOT_TIMES } from './shared-quota-pg.ts';

/** Heartbeats a worker may miss before it counts as gone. */
export const WORKER_GONE_BEATS = 3;
/** A worker's heartbeat unless told (tests shorten it). */
export const WORKER_HEARTBEAT_MS = 5_000;
/** Rows of workers gone for this long are forgotten. */
const WORKER_FORGET_MS = 86_400_000;

/**
 * What a process on the store is: a `genpipe worker`, a distributed `run` (it works a share of its
 * files too), or a `run --no-work` (it follows its batch and works on no file: no capacity).
 */
export type WorkerRole = 'worker' | 'run' | 'run --no-work';

/** True for a process that works on files (a `run --no-work` does not). */
export function works(role: WorkerRole): boolean {
  return role !== 'run --no-work';
}

/** What a worker says of itself at each heartbeat. */
export interface WorkerBeat {
  id: string;
  host: string;
  pid: number;
  heartbeatMs: number;
  /** Jobs it works on now. */
  inHand: number;
  role: WorkerRole;
}

/** A worker's row as status shows it. */
export interface WorkerRow {
  id: string;
  host: string;
  pid: number;
  /** ms since the epoch (database clock). */
  startedAt: number;
  /** ms since it was last seen. */
  seenAgoMs: number;
  heartbeatMs: number;
  inHand: number;
  role: WorkerRole;
  /** Seen within WORKER_GONE_BEATS heartbeats. */
  alive: boolean;
}

/** An API key's quota in use, by its fingerprint. */
export interface KeyQuotaUse {
  service: string;
  /** The first 8 hex digits of the key's fingerprint (a hash: never the key). */
  key: string;
  windowMs: number;
  /** Requests logged in the window ending now. */
  requests: number;
  /** Requests a window allows, as learned (null: not learned yet). */
  requestLimit: number | null;
  /** Jobs the key holds at the service, and creates reserved on their way. */
  jobs: number;
  pending: number;
  /** Concurrent jobs the service allows the key, as learned (null: not learned). */
  ceiling: number | null;
}

/** Records (or renews) a worker's row. */
export async function beatWorker(q: Queryable, beat: WorkerBeat): Promise<void> {
  await q.query(WORKERS_SQL.beat, [beat.id, beat.host, beat.pid, beat.heartbeatMs, beat.inHand, beat.role]);
}

/** Removes a worker's row (it stops) and forgets the rows of workers long gone. */
export async function forgetWorker(q: Queryable, id: string): Promise<void> {
  await q.query(WORKERS_SQL.forget, [id]);
  await q.query(WORKERS_SQL.prune, [WORKER_FORGET_MS]);
}

/** Every worker row, alive or gone, oldest first. */
export async function listWorkers(q: Queryable): Promise<WorkerRow[]> {
  const { rows } = await q.query<{
    id: string;
    host: string;
    pid: number;
    in_hand: number;
    role: WorkerRole;
    heartbeat_ms: string | number;
    started_ms: string | number;
    age_ms: string | number;
    alive: boolean;
  }>(WORKERS_SQL.list, [WORKER_GONE_BEATS]);
  return rows.map((r) => ({
    id: r.id,
    host: r.host,
    pid: r.pid,
    startedAt: Number(r.started_ms),
    seenAgoMs: Math.max(0, Number(r.age_ms)),
    heartbeatMs: Number(r.heartbeat_ms),
    inHand: r.in_hand,
    role: r.role,
    alive: r.alive,
  }));
}

/** Each key's quota in use in the shared ledger. */
export async function keyQuotaUse(q: Queryable): Promise<KeyQuotaUse[]> {
  const { rows } = await q.query<{
    service: string;
    key_fingerprint: string;
    window_ms: string | number;
    request_limit: number | null;
    requests: number;
    jobs: number;
    pending: number;
    ceiling: number | null;
  }>(WORKERS_SQL.quotas, [LIMITS.rateWindowSeconds * 1000, SLOT_TIMES.ceilingTtlMs]);
  return rows.map((r) => ({
    service: r.service,
    key: r.key_fingerprint.slice(0, 8),
    windowMs: Number(r.window_ms),
    requests: r.requests,
    requestLimit: r.request_limit,
    jobs: r.jobs,
    pending: r.pending,
    ceiling: r.ceiling,
  }));
}
