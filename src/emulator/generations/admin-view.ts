/** What the emulator's admin endpoints show: every generation of both surfaces, and the counters (files too). */
import { FILE_STATES, GENERATION_STATES, LEGACY_STATES } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import type { GenerationRec } from '../store.ts';
import type { HoldState } from './holds.ts';

export interface AdminGeneration {
  id: string;
  client_id: string;
  surface: 'agents' | 'legacy';
  /** Agents type, or the legacy generation_type (e.g. modify_video). */
  type: string;
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
  /** Reads of it (GET /v1/generations/{id}) its client made. */
  reads: number;
}

/** One generation as the admin list shows it. */
export function adminGeneration(ctx: EmulatorContext, rec: GenerationRec): AdminGeneration {
  return {
    id: rec.id,
    client_id: rec.clientId,
    surface: rec.surface,
    type: rec.surface === 'legacy' ? (rec.legacyType ?? rec.type) : rec.type,
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
