/**
 * A generation's life after its 201: queued for `config.queue_ms`, then processing (moderation, the
 * seeded fault draw, real rendering), then completed or failed no sooner than
 * `config.processing_ms` of its type (or of its kind, image or video) after processing began. The balance is debited at completion;
 * when it can no longer cover the cost the generation fails with budget_exhausted. Terminal jobs leave
 * the client's active jobs. Timers go through schedule/track, so closing the app cancels or awaits them.
 * An admin hold (holds.ts) keeps a generation queued, or processing, past those times until let go.
 */
import { rm } from 'node:fs/promises';
import { isMediaError } from '../../media/index.ts';
import { CHOICES, type FailureCode } from '../../spec/index.ts';
import { schedule } from '../background.ts';
import { drawMs, processingMsFor } from '../config.ts';
import type { EmulatorContext } from '../context.ts';
import type { ClientRec, GenerationRec, StoredOutput } from '../store.ts';
import { debit } from './balance.ts';
import { removeActiveJob } from './concurrency.ts';
import type { HoldState } from './holds.ts';
import { blockedWordIn } from './moderation.ts';
import { type RenderJob, renderOutputs } from './render-outputs.ts';

/** Everything a queued generation needs to run. */
export interface Job {
  rec: GenerationRec;
  client: ClientRec;
  render: RenderJob;
  /** Failure code drawn at submission from config.faults.failure_codes, or null. */
  plannedFailure: FailureCode | null;
}

type Outcome = { ok: true; outputs: StoredOutput[] } | { ok: false; code: FailureCode; reason: string };

function fail(code: FailureCode, reason: string = CHOICES.failureReasons[code]): Outcome {
  return { ok: false, code, reason };
}

/** Decides the outcome and renders; never throws. */
async function produce(ctx: EmulatorContext, job: Job): Promise<Outcome> {
  const { request, media } = job.render;
  if (blockedWordIn(request.prompt, ctx.config.blocked_words)) return fail('content_moderated');
  if (job.plannedFailure) return fail(job.plannedFailure);
  const late = media.find((m) => m.lateFailure)?.lateFailure;
  if (late) return fail(late.code, late.reason);
  try {
    return { ok: true, outputs: await renderOutputs(job.render) };
  } catch (err) {
    if (isMediaError(err, 'corrupt')) return fail('corrupt_input', err.message);
    if (isMediaError(err, 'unsupported')) return fail('unsupported_format', err.message);
    if (!ctx.closed) console.error(`[emulator] generation ${job.rec.id} failed to render:`, err);
    return fail('generation_failed');
  }
}

/** Moves the generation to its terminal state and releases what it held. */
async function finish(ctx: EmulatorContext, job: Job, outcome: Outcome): Promise<void> {
  const { rec, client } = job;
  let final = outcome;
  if (final.ok && !debit(client, rec.cost)) final = fail('budget_exhausted');
  if (final.ok) {
    rec.outputs = final.outputs;
    rec.state = 'completed';
  } else {
    rec.outputs = [];
    rec.state = 'failed';
    rec.failure_code = final.code;
    rec.failure_reason = final.reason;
  }
  rec.finishedAt = ctx.clock.now();
  removeActiveJob(client, rec.id);
  await rm(job.render.workDir, { recursive: true, force: true });
  if (!final.ok) await rm(job.render.outDir, { recursive: true, force: true });
}

/** Runs `next` now, unless a hold keeps `job` in `state`: then once it is let go. */
function leave(ctx: EmulatorContext, job: Job, state: HoldState, next: () => Promise<void>): Promise<void> {
  if (ctx.holds.park(job.rec, state, () => schedule(ctx, 0, next))) return Promise.resolve();
  return next();
}

async function processJob(ctx: EmulatorContext, job: Job): Promise<void> {
  job.rec.state = 'processing';
  job.rec.startedAt = ctx.clock.now();
  const began = Date.now();
  const outcome = await produce(ctx, job);
  const minMs = drawMs(processingMsFor(ctx.config.processing_ms, job.rec.type), ctx.rng);
  schedule(ctx, began + minMs - Date.now(), () =>
    leave(ctx, job, 'processing', () => finish(ctx, job, outcome)),
  );
}

/** Starts the lifecycle of a freshly recorded generation (state queued). */
export function startLifecycle(ctx: EmulatorContext, job: Job): void {
  schedule(ctx, ctx.config.queue_ms, () => leave(ctx, job, 'queued', () => processJob(ctx, job)));
}
