/**
 * The lifecycle of a legacy modify-video generation: created queued, dreaming after config.queue_ms
 * (the source is fetched, checked and edited), then completed after at least processing_ms.video, or
 * failed with a failure_reason. Each state change is stored first, then a callback is queued.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isMediaError, probeVideo } from '../../media/index.ts';
import {
  LEGACY_CHOICES,
  LEGACY_FAILURE_REASONS,
  type LegacyState,
  type ModifyVideoRequest,
} from '../../spec/index.ts';
import { schedule, track } from '../background.ts';
import { drawMs } from '../config.ts';
import type { EmulatorContext } from '../context.ts';
import { FetchMediaError, fetchToFile } from '../fetch-media.ts';
import { debit } from '../generations/balance.ts';
import { editVideo } from '../media/render.ts';
import type { ClientRec, GenerationRec, StoredOutput } from '../store.ts';
import { queueCallback } from './callbacks.ts';
import { legacyView } from './legacy-view.ts';
import { type LegacyJob, legacyRuntime } from './runtime.ts';

export interface CreateModifyOptions {
  client: ClientRec;
  request: ModifyVideoRequest;
  /** Id of the HTTP request that created the generation. */
  requestId: string;
  /** scheme://host[:port] of the create request, for storage URLs in callbacks. */
  base: string;
  /** The API key used; signs callbacks, never logged. */
  apiKey: string;
  /** Reports background problems (callback give-ups, render errors). */
  log?: (msg: string) => void;
}

/** Thrown by the processing steps with the failure_reason to store. */
class LegacyFailure extends Error {
  override name = 'LegacyFailure';
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
  if (state === 'failed') rec.failure_reason = failureReason;
  if (state === 'completed' || state === 'failed') rec.finishedAt = ctx.clock.now();
  queueCallback(ctx, job, legacyView(ctx, job.base, rec), log);
}

function fetchFailureReason(field: 'media.url' | 'first_frame.url', maxBytes: number, err: unknown): string {
  if (!(err instanceof FetchMediaError)) return LEGACY_FAILURE_REASONS.fetchFailed(field);
  switch (err.kind) {
    case 'not_allowed':
      return LEGACY_FAILURE_REASONS.hostNotAllowed(field);
    case 'http':
      return LEGACY_FAILURE_REASONS.fetchHttp(field, err.httpStatus ?? 0);
    case 'too_large':
      return LEGACY_FAILURE_REASONS.tooLarge(field, maxBytes);
    case 'not_media':
      return field === 'media.url'
        ? LEGACY_FAILURE_REASONS.notVideo(field)
        : LEGACY_FAILURE_REASONS.notImage(field);
    default:
      return LEGACY_FAILURE_REASONS.fetchFailed(field);
  }
}

/** Fetches and checks the inputs, renders the edit; throws LegacyFailure with the reason to store. */
async function render(
  ctx: EmulatorContext,
  rec: GenerationRec,
  request: ModifyVideoRequest,
): Promise<StoredOutput> {
  const signal = legacyRuntime(ctx).closing.signal;
  const dir = join(ctx.dataDir, 'blobs', 'legacy', rec.id);
  await mkdir(dir, { recursive: true });
  const sourcePath = join(dir, 'source');
  const framePath = join(dir, 'first-frame');
  try {
    try {
      await fetchToFile(ctx, request.media.url, sourcePath, {
        maxBytes: LEGACY_CHOICES.sourceMaxBytes,
        accept: 'video',
        signal,
      });
    } catch (err) {
      throw new LegacyFailure(fetchFailureReason('media.url', LEGACY_CHOICES.sourceMaxBytes, err));
    }
    if (request.first_frame) {
      // Fetched so an unreachable first frame fails like a real service; the edit itself does not use it.
      try {
        await fetchToFile(ctx, request.first_frame.url, framePath, {
          maxBytes: LEGACY_CHOICES.firstFrameMaxBytes,
          accept: 'image',
          signal,
        });
      } catch (err) {
        throw new LegacyFailure(
          fetchFailureReason('first_frame.url', LEGACY_CHOICES.firstFrameMaxBytes, err),
        );
      }
    }
    let durationSeconds: number;
    try {
      ({ durationSeconds } = await probeVideo(sourcePath));
    } catch {
      throw new LegacyFailure(LEGACY_FAILURE_REASONS.undecodable('media.url'));
    }
    if (!(durationSeconds > 0)) throw new LegacyFailure(LEGACY_FAILURE_REASONS.undecodable('media.url'));
    if (durationSeconds > LEGACY_CHOICES.sourceMaxSeconds) {
      throw new LegacyFailure(LEGACY_FAILURE_REASONS.tooLong('media.url', LEGACY_CHOICES.sourceMaxSeconds));
    }
    try {
      const out = await editVideo({
        sourcePath,
        // The mode seeds the look too, so adhere_1 and reimagine_3 of one prompt differ.
        prompt: request.prompt ? `${request.mode}: ${request.prompt}` : request.mode,
        outPath: join(dir, 'output.mp4'),
        signal,
      });
      return { type: 'video', mime: out.mime, blobPath: out.path, layer: null };
    } catch (err) {
      if (isMediaError(err, 'corrupt') || isMediaError(err, 'unsupported')) {
        throw new LegacyFailure(LEGACY_FAILURE_REASONS.undecodable('media.url'));
      }
      throw err;
    }
  } finally {
    await rm(sourcePath, { force: true }).catch(() => undefined);
    await rm(framePath, { force: true }).catch(() => undefined);
  }
}

/** Terminal step: charge the client and publish the output, or fail when the balance ran out. */
function complete(
  ctx: EmulatorContext,
  rec: GenerationRec,
  job: LegacyJob,
  output: StoredOutput,
  log: (msg: string) => void,
): void {
  const client = ctx.store.clients.get(rec.clientId);
  if (!client || !debit(client, rec.cost)) {
    track(ctx, rm(output.blobPath, { force: true }));
    setState(ctx, rec, job, 'failed', log, LEGACY_FAILURE_REASONS.budgetExhausted);
    return;
  }
  rec.outputs = [output];
  setState(ctx, rec, job, 'completed', log);
}

async function runModify(
  ctx: EmulatorContext,
  rec: GenerationRec,
  job: LegacyJob,
  request: ModifyVideoRequest,
  log: (msg: string) => void,
): Promise<void> {
  if (rec.state !== 'queued') return;
  const started = Date.now();
  setState(ctx, rec, job, 'dreaming', log);
  let output: StoredOutput;
  try {
    output = await render(ctx, rec, request);
  } catch (err) {
    // A render cut short by the app closing is no failure of the generation.
    if (ctx.closed || legacyRuntime(ctx).closing.signal.aborted) return;
    if (!(err instanceof LegacyFailure)) log(`legacy render error: ${(err as Error).message}`);
    const reason = err instanceof LegacyFailure ? err.message : LEGACY_FAILURE_REASONS.generationFailed;
    setState(ctx, rec, job, 'failed', log, reason);
    return;
  }
  const remaining = drawMs(ctx.config.processing_ms.video, ctx.rng) - (Date.now() - started);
  schedule(ctx, remaining, () => complete(ctx, rec, job, output, log));
}

/**
 * Creates a queued legacy modify-video generation, stores it and schedules its processing.
 * The caller has already authenticated, validated the request, checked callback_url and the balance.
 * @param ctx the emulator context.
 * @param o.client the calling client (owner of the generation).
 * @param o.request the validated ModifyVideoRequest (stored as Generation.request).
 * @returns the stored record, in state queued.
 * @example
 * const rec = createModifyGeneration(ctx, { client, request, requestId: req.id, base, apiKey });
 */
export function createModifyGeneration(ctx: EmulatorContext, o: CreateModifyOptions): GenerationRec {
  const log = o.log ?? (() => {});
  const rec: GenerationRec = {
    id: randomUUID(),
    clientId: o.client.id,
    surface: 'legacy',
    seq: ctx.store.nextSeq(),
    type: LEGACY_CHOICES.internalType,
    legacyType: o.request.generation_type,
    model: o.request.model,
    state: 'queued',
    createdAt: ctx.clock.now(),
    request: { ...o.request },
    requestId: o.requestId,
    cost: ctx.config.costs[LEGACY_CHOICES.internalType],
    failure_reason: null,
    failure_code: null,
    outputs: [],
    finishedAt: null,
  };
  if (o.request.callback_url) rec.callbackUrl = o.request.callback_url;
  const job: LegacyJob = {
    base: o.base,
    apiKey: o.apiKey,
    requestId: o.requestId,
    callbackUrl: o.request.callback_url ?? null,
    chain: Promise.resolve(),
  };
  ctx.store.generations.set(rec.id, rec);
  schedule(ctx, ctx.config.queue_ms, () => runModify(ctx, rec, job, o.request, log));
  return rec;
}
