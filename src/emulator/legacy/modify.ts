/**
 * Modify a video (legacy): the source is fetched, checked and edited with a colour transform seeded by
 * the mode and prompt; the lifecycle is lifecycle.ts's.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isMediaError, probeVideo } from '../../media/index.ts';
import { LEGACY_CHOICES, LEGACY_FAILURE_REASONS, type ModifyVideoRequest } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { editVideo } from '../media/render.ts';
import type { GenerationRec, StoredOutput } from '../store.ts';
import { type CreateLegacyOptions, createLegacyGeneration, LegacyFailure } from './lifecycle.ts';
import { fetchInput } from './sources.ts';

/** Fetches and checks the inputs, renders the edit; throws LegacyFailure with the reason to store. */
async function render(
  ctx: EmulatorContext,
  request: ModifyVideoRequest,
  dir: string,
  signal: AbortSignal,
): Promise<StoredOutput> {
  const sourcePath = join(dir, 'source');
  const framePath = join(dir, 'first-frame');
  try {
    await fetchInput(ctx, request.media.url, sourcePath, {
      field: 'media.url',
      accept: 'video',
      maxBytes: LEGACY_CHOICES.sourceMaxBytes,
      signal,
    });
    if (request.first_frame) {
      // Fetched so an unreachable first frame fails like a real service; the edit itself does not use it.
      await fetchInput(ctx, request.first_frame.url, framePath, {
        field: 'first_frame.url',
        accept: 'image',
        maxBytes: LEGACY_CHOICES.firstFrameMaxBytes,
        signal,
      });
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

/**
 * Creates a queued legacy modify-video generation (see lifecycle.ts).
 * @example
 * const rec = createModifyGeneration(ctx, { client, request, requestId: req.id, base, apiKey });
 */
export function createModifyGeneration(
  ctx: EmulatorContext,
  o: Omit<CreateLegacyOptions, 'render' | 'model' | 'request'> & { request: ModifyVideoRequest },
): GenerationRec {
  const request = o.request;
  return createLegacyGeneration(ctx, {
    ...o,
    model: request.model,
    render: (dir, signal) => render(ctx, request, dir, signal),
  }).rec;
}
