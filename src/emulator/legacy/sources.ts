/**
 * The inputs of legacy generations: media fetched from a URL (failing the generation with the
 * failure_reason of the legacy surface), and the output of one of the caller's completed generations
 * (a keyframe, or the source of an upscale or add-audio).
 */
import { DETAILS, LEGACY_FAILURE_REASONS, LEGACY_OPERATION_DETAILS } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { FetchMediaError, fetchToFile } from '../fetch-media.ts';
import { HttpError } from '../http-error.ts';
import type { GenerationRec, StoredOutput } from '../store.ts';
import { LegacyFailure } from './lifecycle.ts';

function failureReason(field: string, accept: 'image' | 'video', maxBytes: number, err: unknown): string {
  if (!(err instanceof FetchMediaError)) return LEGACY_FAILURE_REASONS.fetchFailed(field);
  switch (err.kind) {
    case 'not_allowed':
      return LEGACY_FAILURE_REASONS.hostNotAllowed(field);
    case 'http':
      return LEGACY_FAILURE_REASONS.fetchHttp(field, err.httpStatus ?? 0);
    case 'too_large':
      return LEGACY_FAILURE_REASONS.tooLarge(field, maxBytes);
    case 'not_media':
      return accept === 'video'
        ? LEGACY_FAILURE_REASONS.notVideo(field)
        : LEGACY_FAILURE_REASONS.notImage(field);
    default:
      return LEGACY_FAILURE_REASONS.fetchFailed(field);
  }
}

/**
 * Fetches `url` to `destPath`; a fetch that fails throws LegacyFailure naming `field` (e.g. media.url).
 * @example await fetchInput(ctx, req.media.url, join(dir, 'source'), { field: 'media.url', accept: 'video', maxBytes, signal })
 */
export async function fetchInput(
  ctx: EmulatorContext,
  url: string,
  destPath: string,
  o: { field: string; accept: 'image' | 'video'; maxBytes: number; signal: AbortSignal },
): Promise<string> {
  try {
    await fetchToFile(ctx, url, destPath, { maxBytes: o.maxBytes, accept: o.accept, signal: o.signal });
    return destPath;
  } catch (err) {
    throw new LegacyFailure(failureReason(o.field, o.accept, o.maxBytes, err));
  }
}

/**
 * The caller's legacy generation `id`.
 * @throws HttpError 404 `Generation not found` when unknown, another client's, or an agents one
 */
export function callerGeneration(ctx: EmulatorContext, clientId: string, id: string): GenerationRec {
  const rec = ctx.store.generations.get(id);
  if (rec?.surface !== 'legacy' || rec.clientId !== clientId)
    throw new HttpError(404, DETAILS.generationNotFound);
  return rec;
}

/**
 * The caller's completed legacy generation `id` and its output, for a keyframe or as the source of an
 * upscale or add-audio. Checked at create time.
 * @param notFound the HttpError to throw when there is no such generation of the caller
 * @param path the field naming it in details (keyframes.frame0), or null for a path parameter
 */
export function completedOutput(
  ctx: EmulatorContext,
  clientId: string,
  id: string,
  path: string | null,
  notFound: () => HttpError,
): { rec: GenerationRec; output: StoredOutput } {
  const rec = ctx.store.generations.get(id);
  if (rec?.surface !== 'legacy' || rec.clientId !== clientId) throw notFound();
  const output = rec.outputs[0];
  if (rec.state !== 'completed' || !output) {
    throw new HttpError(
      400,
      path
        ? LEGACY_OPERATION_DETAILS.keyframeGenerationNotCompleted(path, id)
        : LEGACY_OPERATION_DETAILS.sourceNotCompleted(id),
    );
  }
  return { rec, output };
}
