/**
 * The lifecycle every legacy generation shares: created queued, dreaming after config.queue_ms (its
 * operation's render runs: inputs fetched, media written), then completed after at least
 * processing_ms.video or .image (by its generation_type), or failed with a failure_reason. Each state
 * change is stored first, then a callback is queued; `job.ended` resolves when it reaches an end.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  LEGACY_FAILURE_REASONS,
  LEGACY_OPERATIONS,
  type LegacyRequestType,
  type LegacyState,
} from '../../spec/index.ts';
import { schedule, track } from '../background.ts';
import { drawMs } from '../config.ts';
import type { EmulatorContext } from '../context.ts';
import { debit } from '../generations/balance.ts';
import type { HoldState } from '../generations/holds.ts';
import type { ClientRec, GenerationRec, StoredOutput } from '../store.ts';
import { queueCallback } from './callbacks.ts';
import { legacyView } from './legacy-view.ts';
import { type LegacyJob, legacyRuntime } from './runtime.ts';

/** Thrown by a render step with the failure_reason to store. */
export class LegacyFailure extends Error {
  override name = 'LegacyFailure';
}

/** Writes a generation's output into `dir` (its own folder); throws LegacyFailure for a caller's fault. */
export type LegacyRender = (dir: string, signal: AbortSignal) => Promise<StoredOutput>;

export interface CreateLegacyOptions {
  client: ClientRec;
  /** The validated request, defaults applied (stored and echoed as Generation.request). */
  request: { generation_type: LegacyRequestType; callback_url?: string };
  /** The model the Generation names. */
  model: string;
  requestId: string;
  /** scheme://host[:port] of the create request, for storage URLs in callbacks. */
  base: string;
  /** The API key used; signs callbacks, never logged. */
  apiKey: string;
  render: LegacyRender;
  log?: (msg: string) => void;
}

/** The folder of a legacy generation's blobs. */
export function legacyDir(ctx: EmulatorContext, id: string): string {
  return join(ctx.dataDir, 'blobs', 'legacy', id);
}

function setState(
  ctx: EmulatorContext,
  rec: GenerationRec,
  job: LegacyJob,
  state: LegacyState,
  log: (msg: string) => void,
  failureReason: string | null = null,
): void {
  rec.state = state;
  // Processing begins at dreaming (the admin view's started_at, as the agents surface's processing).
  if (state === 'dreaming') rec.startedAt ??= ctx.clock.now();
  if (state === 'failed') rec.failure_reason = failureReason;
  if (state === 'completed' || state === 'failed') rec.finishedAt = ctx.clock.now();
  queueCallback(ctx, job, legacyView(ctx, job.base, rec), log);
  if (state === 'completed' || state === 'failed') job.end();
}

/** Terminal step: charge the client and publish the output, or fail when the balance ran out. */
function complete(
  ctx: EmulatorContext,
  rec: GenerationRec,
  job: LegacyJob,
  output: StoredOutput,
  log: (msg: string) => void,
): void {
  if (!ctx.store.generations.has(rec.id)) {
    // Deleted while it rendered: drop what the render wrote.
    track(ctx, rm(legacyDir(ctx, rec.id), { recursive: true, force: true }));
    job.end();
    return;
  }
  const client = ctx.store.clients.get(rec.clientId);
  if (!client || !debit(client, rec.cost)) {
    track(ctx, rm(output.blobPath, { force: true }));
    setState(ctx, rec, job, 'failed', log, LEGACY_FAILURE_REASONS.budgetExhausted);
    return;
  }
  rec.outputs = [output];
  setState(ctx, rec, job, 'completed', log);
}

async function run(
  ctx: EmulatorContext,
  rec: GenerationRec,
  job: LegacyJob,
  render: LegacyRender,
  log: (msg: string) => void,
): Promise<void> {
  if (rec.state !== 'queued' || !ctx.store.generations.has(rec.id)) {
    job.end();
    return;
  }
  const started = Date.now();
  setState(ctx, rec, job, 'dreaming', log);
  const signal = legacyRuntime(ctx).closing.signal;
  let output: StoredOutput;
  try {
    const dir = legacyDir(ctx, rec.id);
    await mkdir(dir, { recursive: true });
    output = await render(dir, signal);
  } catch (err) {
    // A render cut short by the app closing is no failure of the generation.
    if (ctx.closed || signal.aborted) {
      job.end();
      return;
    }
    if (!(err instanceof LegacyFailure)) log(`legacy render error: ${(err as Error).message}`);
    const reason = err instanceof LegacyFailure ? err.message : LEGACY_FAILURE_REASONS.generationFailed;
    setState(ctx, rec, job, 'failed', log, reason);
    return;
  }
  const kind = LEGACY_OPERATIONS[rec.legacyType as LegacyRequestType].generationType;
  const remaining = drawMs(ctx.config.processing_ms[kind], ctx.rng) - (Date.now() - started);
  schedule(ctx, remaining, () =>
    afterHolds(ctx, rec, 'processing', () => complete(ctx, rec, job, output, log)),
  );
}

/**
 * Runs `go` now, or once the holds let `rec` leave `state` (`processing` is the legacy `dreaming`): the
 * admin holds keep legacy generations as they keep the agents surface's.
 */
function afterHolds(
  ctx: EmulatorContext,
  rec: GenerationRec,
  state: HoldState,
  go: () => void | Promise<void>,
): void | Promise<void> {
  if (!ctx.holds.park(rec, state, () => schedule(ctx, 0, go))) return go();
}

/**
 * Creates a queued legacy generation, stores it and schedules its processing. The caller has already
 * authenticated, validated the request, checked callback_url and the balance.
 * @returns the stored record (state queued) and its runtime job (`job.ended` resolves at its end).
 * @example
 * const { rec } = createLegacyGeneration(ctx, { client, request, model, requestId, base, apiKey, render });
 */
export function createLegacyGeneration(
  ctx: EmulatorContext,
  o: CreateLegacyOptions,
): { rec: GenerationRec; job: LegacyJob } {
  const log = o.log ?? (() => {});
  const op = LEGACY_OPERATIONS[o.request.generation_type];
  const rec: GenerationRec = {
    id: randomUUID(),
    clientId: o.client.id,
    surface: 'legacy',
    seq: ctx.store.nextSeq(),
    type: op.costType,
    legacyType: o.request.generation_type,
    model: o.model,
    state: 'queued',
    createdAt: ctx.clock.now(),
    request: { ...o.request },
    requestId: o.requestId,
    cost: ctx.config.costs[op.costType],
    failure_reason: null,
    failure_code: null,
    outputs: [],
    finishedAt: null,
  };
  if (o.request.callback_url) rec.callbackUrl = o.request.callback_url;
  let end = () => {};
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  const job: LegacyJob = {
    base: o.base,
    apiKey: o.apiKey,
    requestId: o.requestId,
    callbackUrl: o.request.callback_url ?? null,
    chain: Promise.resolve(),
    ended,
    end,
  };
  ctx.store.generations.set(rec.id, rec);
  schedule(ctx, ctx.config.queue_ms, () =>
    afterHolds(ctx, rec, 'queued', () => run(ctx, rec, job, o.render, log)),
  );
  return { rec, job };
}
