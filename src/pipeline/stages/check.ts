/**
 * Stage check (planned → checked): the file against the service's limits for the position plan gave
 * it, locally, before any upload, with the texts the service would answer:
 *
 * - images: ≤ 50 MB and ≤ 8000 px a side from the header alone (sharp metadata, no decode), then a full
 *   streaming decode so truncated or damaged files fail here ("image could not be decoded: …");
 * - videos: ≤ 5 GiB (the largest upload), then the container must hold its whole declared length (a
 *   half-copied faststart MP4 or WebM fools ffprobe, which reads only headers; see
 *   watch/container-complete.ts), then ffprobe: a source of video_edit / video_reframe is at most 30 s
 *   long, 18 s when `video.edit` is used;
 * - prompt files were read and validated by plan: nothing is left to check.
 *
 * The `<path>` of the texts is the request position the file takes (`source`, `image_ref[1]`, …).
 */
import { stat } from 'node:fs/promises';
import { isMediaError, probeVideo, readImageHeader, verifyImage } from '../../media/index.ts';
import { CHOICES, type MediaFacts, urlVideoTooLargeDetail } from '../../spec/index.ts';
import type { Item } from '../item.ts';
import { referenceFacts } from '../recipe.ts';
import { INPUT_FILE_ID, type Json, validatePlanned } from '../recipe-request.ts';
import { advance, expectState, failItem, type StageContext } from '../stage.ts';
import { containerVerdict } from '../watch/container-complete.ts';

/** Largest video the pipeline uploads (the presigned upload limit, 5 GiB). */
export const VIDEO_MAX_BYTES = CHOICES.urlVideoMaxBytes;

/** The request position the item's media took: the detail path of its placeholder. */
function sitePathOf(request: Json): string {
  const found = validatePlanned(request);
  const site = found.ok ? found.sites.find((s) => s.placeholder === INPUT_FILE_ID) : undefined;
  return site?.path ?? 'source';
}

/**
 * Checks the item's file and advances it to `checked` with `media` set (bytes, and width / height /
 * durationSeconds when known). Fails it with the service's `detail` when a limit is exceeded, or with a
 * plain reason when the file cannot be decoded.
 *
 * @example const next = await check(plannedItem, ctx); // next.media → { bytes: 5120, width: 64, height: 48 }
 */
export async function check(item: Item, ctx: StageContext): Promise<Item> {
  expectState(item, 'check', 'planned');
  ctx.signal.throwIfAborted();
  const kind = item.sniff?.kind;
  const fail = (reason: string, media: Item['media'] = null) => failItem(item, 'check', reason, { media });
  const st = await stat(item.absPath).catch(() => null);
  if (!st?.isFile()) return fail('file not found or not readable');
  const bytes = st.size;
  if (bytes === 0) return fail('file is empty', { bytes });
  if (kind === 'text' || item.inputAs === 'prompt') return advance(item, 'checked', { media: { bytes } });

  const request = (item.request ?? {}) as Json;
  const refs = referenceFacts(ctx.recipe);
  const limits = (facts: MediaFacts) => {
    const r = validatePlanned(request, { ...refs, [INPUT_FILE_ID]: facts });
    return r.ok ? null : r.detail;
  };
  const mime = item.sniff?.mime;
  const base: MediaFacts = mime ? { bytes, mime } : { bytes };

  try {
    if (kind === 'image') {
      const tooBig = limits(base);
      if (tooBig) return fail(tooBig, { bytes });
      const header = await readImageHeader(item.absPath);
      const media = { bytes, width: header.width, height: header.height };
      const overLimit = limits({ ...base, width: header.width, height: header.height });
      if (overLimit) return fail(overLimit, media);
      ctx.signal.throwIfAborted();
      await verifyImage(item.absPath);
      return advance(item, 'checked', { media });
    }
    if (kind === 'video') {
      if (bytes > VIDEO_MAX_BYTES) return fail(urlVideoTooLargeDetail(sitePathOf(request)), { bytes });
      const cutShort = mime ? await containerVerdict(item.absPath, mime) : null;
      if (cutShort !== null) return fail(cutShort, { bytes });
      const probe = await probeVideo(item.absPath);
      const media = {
        bytes,
        width: probe.width,
        height: probe.height,
        durationSeconds: probe.durationSeconds,
      };
      const overLimit = limits({ ...base, ...media });
      if (overLimit) return fail(overLimit, media);
      return advance(item, 'checked', { media });
    }
  } catch (err) {
    if (isMediaError(err) && err.code !== 'tool' && err.code !== 'aborted')
      return fail(err.message, { bytes });
    throw err;
  }
  return fail(`unknown type: ${item.sniff?.mime ?? 'not sniffed'}`, { bytes });
}
