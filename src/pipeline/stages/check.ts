/**
 * Stage check (planned → checked): the file against the service's limits for the position plan gave
 * it, locally, before any upload, with the texts the service would answer. The check itself is
 * media-check.ts, the one `generate` and `files upload` run too:
 *
 * - images: ≤ 50 MB, then ≤ 8000 px a side from the size the header claims, read from the file's
 *   structure before any decoder sees it (whatever the format: a 60000 x 60000 px header is refused with
 *   the service's text), then sharp's header read and a full streaming decode so truncated or damaged
 *   files fail here ("image could not be decoded: …");
 * - videos: ≤ 5 GiB (the largest upload), then the container must hold its whole declared length (a
 *   half-copied faststart MP4 or WebM fools ffprobe, which reads only headers; see
 *   watch/container-complete.ts), then ffprobe: a source of video_edit / video_reframe is at most 30 s
 *   long, 18 s when `video.edit` is used;
 * - prompt files were read and validated by plan: nothing is left to check.
 *
 * The `<path>` of the texts is the request position the file takes (`source`, `image_ref[1]`, …).
 */
import { type Item, stepOf } from '../item.ts';
import { checkMediaFile, VIDEO_MAX_BYTES } from '../media-check.ts';
import { referenceFacts } from '../recipe.ts';
import { INPUT_FILE_ID, type Json, validatePlanned } from '../recipe-request.ts';
import { advance, expectState, failItem, type StageContext } from '../stage.ts';
import { holdsInput } from './upload.ts';

/** Largest video the pipeline uploads (the presigned upload limit, 5 GiB). */
export { VIDEO_MAX_BYTES };

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
  // The step the file goes into (a chain's first step as written; it may run after others).
  const request = (item.steps.find((s) => holdsInput(s.request)) ?? stepOf(item)).request as Json;
  const refs = referenceFacts(ctx.recipe);
  const verdict = await checkMediaFile(item.absPath, item.sniff, {
    limits: (facts) => {
      const r = validatePlanned(request, { ...refs, [INPUT_FILE_ID]: facts });
      return r.ok ? null : r.detail;
    },
    sitePath: () => sitePathOf(request),
    acceptText: item.sniff?.kind === 'text' || item.inputAs === 'prompt',
    signal: ctx.signal,
  });
  if (!verdict.ok) return failItem(item, 'check', verdict.reason, { media: verdict.media });
  return advance(item, 'checked', { media: verdict.media });
}
