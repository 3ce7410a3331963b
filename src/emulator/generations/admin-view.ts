/**
 * What the emulator's admin endpoints show: every generation of both surfaces, the counters (files too),
 * and each client's balance with what it was charged.
 */
import { FILE_STATES, GENERATION_STATES, LEGACY_STATES } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import type { GenerationRec } from '../store.ts';
import type { HoldState } from './holds.ts';

export interface AdminGeneration {
  id: string;
  client_id: string;
  surface: 'agents' | 'legacy';
  /**
   * The generation type it is charged as: a legacy generation's too (LEGACY_OPERATIONS' costType, e.g.
   * `video_reframe` for a reframe_video), the one name costs, holds, the balance and a dry run use.
   */
  type: string;
  /** A legacy generation's own generation_type (e.g. `reframe_video`); null on the agents surface. */
  legacy_type: string | null;
  model: string;
  state: string;
  created_at: string;
  request_id: string;
  failure_code: string | null;
  /** The state an admin hold keeps it in (`queued` or `processing`), or null. */
  held: HoldState | null;
  /** When it began processing and when it ended (ISO), null before. */
  started_at: string | null;
  finished_at: string | null;
  /** Reads of it its client made (GET /v1/generations/{id}, or the legacy GET /generations/{id}). */
  reads: number;
}

/** One generation as the admin list shows it. */
export function adminGeneration(ctx: EmulatorContext, rec: GenerationRec): AdminGeneration {
  return {
    id: rec.id,
    client_id: rec.clientId,
    surface: rec.surface,
    type: rec.type,
    legacy_type: rec.surface === 'legacy' ? (rec.legacyType ?? null) : null,
    model: rec.model,
    state: rec.state,
    created_at: new Date(rec.createdAt).toISOString(),
    request_id: rec.requestId,
    failure_code: rec.failure_code,
    held: ctx.holds.heldIn(rec.id),
    started_at: rec.startedAt ? new Date(rec.startedAt).toISOString() : null,
    finished_at: rec.finishedAt ? new Date(rec.finishedAt).toISOString() : null,
    reads: rec.reads ?? 0,
  };
}

/** Every generation, oldest first. */
export function adminGenerations(ctx: EmulatorContext): AdminGeneration[] {
  return [...ctx.store.generations.values()]
    .sort((a, b) => a.seq - b.seq)
    .map((rec) => adminGeneration(ctx, rec));
}

export interface AdminStats {
  /** Responses by HTTP status. */
  responses: Record<string, number>;
  /** 429 responses by kind: rpm, concurrency, abuse. */
  rate_limited: Record<string, number>;
  /** Connections reset on purpose by fault injection. */
  resets: number;
  /** Generations by state, per surface. */
  generations: { agents: Record<string, number>; legacy: Record<string, number> };
  /** Files by state (outputs the emulator made are not files), of every client. */
  files: Record<string, number>;
}

/** The emulator's counters. */
export function adminStats(ctx: EmulatorContext): AdminStats {
  const agents: Record<string, number> = Object.fromEntries(GENERATION_STATES.map((s) => [s, 0]));
  const legacy: Record<string, number> = Object.fromEntries(LEGACY_STATES.map((s) => [s, 0]));
  for (const rec of ctx.store.generations.values()) {
    const bucket = rec.surface === 'legacy' ? legacy : agents;
    bucket[rec.state] = (bucket[rec.state] ?? 0) + 1;
  }
  const files: Record<string, number> = Object.fromEntries(FILE_STATES.map((s) => [s, 0]));
  for (const rec of ctx.store.files.values()) files[rec.state] = (files[rec.state] ?? 0) + 1;
  return {
    responses: { ...ctx.stats.byStatus },
    rate_limited: { ...ctx.stats.rateLimited },
    resets: ctx.stats.resets,
    generations: { agents, legacy },
    files,
  };
}

/** A client's generations of one type, and the credits they were charged. */
export interface AdminTypeCharges {
  /** Generations created (both surfaces). */
  generations: number;
  /** Completed: the ones charged. */
  completed: number;
  /** Failed, budget_exhausted included: never charged. */
  failed: number;
  /** Not finished yet (queued, processing, dreaming): charged if they complete. */
  unfinished: number;
  /** Credits charged: the cost of each completed one, as configured when it was created. */
  credits_charged: number;
}

/** A client's balance and charges. */
export interface AdminClientBalance {
  client_id: string;
  /** The balance configured for the client (`clients[].balance`). */
  balance_at_start: number;
  /** Credits left. */
  balance: number;
  credits_charged: number;
  /** By the generation type charged (a legacy one's too: its costType), only the types it created. */
  by_type: Record<string, AdminTypeCharges>;
}

/**
 * Every client's balance and charges, in the configured order. The balance is debited when a generation
 * completes, by its type's cost (see balance.ts), so `balance_at_start - credits_charged = balance`.
 */
export function adminBalance(ctx: EmulatorContext): AdminClientBalance[] {
  const out = new Map<string, AdminClientBalance>();
  for (const c of ctx.store.clients.values()) {
    const configured = ctx.config.clients.find((k) => k.id === c.id)?.balance ?? c.balance;
    out.set(c.id, {
      client_id: c.id,
      balance_at_start: configured,
      balance: c.balance,
      credits_charged: 0,
      by_type: {},
    });
  }
  for (const rec of [...ctx.store.generations.values()].sort((a, b) => a.seq - b.seq)) {
    const client = out.get(rec.clientId);
    if (!client) continue;
    const type = rec.type; // the type it is charged as, on both surfaces
    const t = client.by_type[type] ?? {
      generations: 0,
      completed: 0,
      failed: 0,
      unfinished: 0,
      credits_charged: 0,
    };
    client.by_type[type] = t;
    t.generations++;
    if (rec.state === 'completed') {
      t.completed++;
      t.credits_charged += rec.cost;
      client.credits_charged += rec.cost;
    } else if (rec.state === 'failed') t.failed++;
    else t.unfinished++;
  }
  return [...out.values()];
}
