/**
 * POST /v1/generations, in the order the service applies its checks: (auth, by the route's hook) →
 * 502/503 faults → request validation (400/422) → media references (422/413/502) → media facts
 * (413/422) → request rate (429) → concurrent jobs (429) → balance (402) → record and 201.
 */
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyRequest } from 'fastify';
import {
  CHOICES,
  checkMediaFacts,
  DETAILS,
  listMediaRefs,
  validateGenerationRequest,
} from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { HttpError } from '../http-error.ts';
import type { ClientRec, GenerationRec } from '../store.ts';
import { checkBalance } from './balance.ts';
import { closingSignal } from './closing-signal.ts';
import { addActiveJob, checkConcurrency } from './concurrency.ts';
import { elideInlineData } from './elide-inline-data.ts';
import { drawFailure } from './failure-draw.ts';
import { type GenerationView, generationView } from './generation-view.ts';
import { startLifecycle } from './lifecycle.ts';
import { factsByPath, type ResolvedMedia, resolveMediaRefs } from './media-refs.ts';
import { checkRpm } from './rate-limiter.ts';

export interface Created {
  /** X-RateLimit-* headers of the 201 (none while the rate backend is down). */
  headers: Record<string, string>;
  body: GenerationView;
}

/** Where a generation's bytes live under the data dir. */
export function generationDirs(ctx: EmulatorContext, id: string): { outDir: string; workDir: string } {
  return {
    outDir: join(ctx.dataDir, 'blobs', 'generations', id),
    workDir: join(ctx.dataDir, 'blobs', 'generation-inputs', id),
  };
}

/** video.resolution exactly as sent, when it is a string. */
function explicitResolution(body: unknown): string | undefined {
  const video = (body as { video?: unknown } | null)?.video;
  const r =
    typeof video === 'object' && video !== null ? (video as { resolution?: unknown }).resolution : undefined;
  return typeof r === 'string' ? r : undefined;
}

/** aspect_ratio exactly as sent, when it is a string. */
function explicitAspectRatio(body: unknown): string | undefined {
  const r = (body as { aspect_ratio?: unknown } | null)?.aspect_ratio;
  return typeof r === 'string' ? r : undefined;
}

/**
 * Runs every submit-time check for an authenticated client and records the generation.
 * @param base scheme://host[:port] the caller used (for output URLs)
 * @throws HttpError with the interface's status, detail and headers
 */
export async function createGeneration(
  ctx: EmulatorContext,
  client: ClientRec,
  request: FastifyRequest,
  base: string,
): Promise<Created> {
  const signal = closingSignal(ctx);
  const { faults } = ctx.config;
  if (ctx.rng.chance(faults.http_502)) throw new HttpError(502, DETAILS.upstreamUnavailable);
  if (ctx.rng.chance(faults.http_503)) throw new HttpError(503, DETAILS.ingestionUnavailable);

  const validated = validateGenerationRequest(request.body);
  if (!validated.ok) throw new HttpError(validated.status, validated.detail);
  const normalized = validated.request;

  const id = randomUUID();
  const { outDir, workDir } = generationDirs(ctx, id);
  let media: ResolvedMedia[];
  let headers: Record<string, string>;
  let now: number;
  try {
    media = await resolveMediaRefs(ctx, client, listMediaRefs(normalized), workDir, signal);
    const rejected = checkMediaFacts(normalized, factsByPath(media));
    if (rejected) throw new HttpError(rejected.status, rejected.detail);
    // From here to the record nothing awaits, so concurrent creates cannot both take the last slot.
    now = ctx.clock.now();
    const rate = checkRpm(ctx, client, now);
    if (!rate.backendDown || CHOICES.rateBackendDownEnforcesConcurrency) checkConcurrency(ctx, client, now);
    rate.commit();
    checkBalance(client, ctx.config.costs[normalized.type]);
    headers = rate.headers;
  } catch (err) {
    await rm(workDir, { recursive: true, force: true });
    throw err;
  }

  const rec: GenerationRec = {
    id,
    clientId: client.id,
    surface: 'agents',
    seq: ctx.store.nextSeq(),
    type: normalized.type,
    model: normalized.model,
    state: 'queued',
    createdAt: now,
    request: elideInlineData(request.body) as Record<string, unknown>,
    requestId: request.id,
    cost: ctx.config.costs[normalized.type],
    failure_reason: null,
    failure_code: null,
    outputs: [],
    finishedAt: null,
  };
  ctx.store.generations.set(id, rec);
  addActiveJob(client, id, now);
  startLifecycle(ctx, {
    rec,
    client,
    plannedFailure: drawFailure(ctx),
    render: {
      request: normalized,
      explicitResolution: explicitResolution(request.body),
      explicitAspectRatio: explicitAspectRatio(request.body),
      media,
      outDir,
      workDir,
      signal,
      tiny: ctx.config.tiny_outputs,
    },
  });
  return { headers, body: generationView(ctx, rec, base) };
}
