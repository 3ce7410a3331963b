/**
 * The local check of a media file, one for every way genpipe sends a file: the pipeline's sniff and
 * check stages, and the CLI's `generate` (local `--source` / `--image-ref` files) and `files upload`.
 * It runs before any byte leaves the machine, with the texts the service would answer:
 *
 * - sniff: the real type from the bytes (file-type), else `text` (valid UTF-8 without NUL bytes),
 *   `empty` or unknown (see {@link sniffPath});
 * - images: the limits from the size the header claims, read from the file's structure before any
 *   decoder sees it (a 60000 x 60000 px PNG is refused with the service's text, not with the decoder's
 *   "exceeds pixel limit"), then sharp's header read (no decode), then a full streaming decode so
 *   truncated or damaged files fail ("image could not be decoded: …");
 * - videos: ≤ 5 GiB (the largest upload), then the container must hold its whole declared length (a
 *   half-copied faststart MP4 or WebM fools ffprobe, which reads only headers), then ffprobe and the
 *   limits (a source of video_edit / video_reframe is at most 30 s long, 18 s with `video.edit`).
 *
 * What the limits are is the caller's: the service's rules for the position the file takes in a
 * request ({@link MediaCheckOptions.limits}).
 */
import { stat } from 'node:fs/promises';
import { readImageSize } from '../media/image-size.ts';
import { isMediaError } from '../media/media-error.ts';
import { mediaKindOf, readHead, SNIFF_HEAD_BYTES, sniffHead } from '../media/sniff.ts';
import { CHOICES, LIMITS, type MediaFacts, urlVideoTooLargeDetail } from '../spec/index.ts';
import type { Item } from './item.ts';
import { formatSize } from './progress/format.ts';
import { containerVerdict } from './watch/container-complete.ts';

/** What sniffing found: the real MIME type, an extension, and the kind. */
export type Sniff = NonNullable<Item['sniff']>;
/** What the check learned: bytes, and width / height / durationSeconds when known. */
export type CheckedMedia = NonNullable<Item['media']>;

/** The sniff of a text (prompt) file. */
export const TEXT_SNIFF: Sniff = { mime: 'text/plain', ext: 'txt', kind: 'text' };
/** The sniff of an empty file. */
export const EMPTY_SNIFF: Sniff = { mime: 'application/x-empty', ext: '', kind: 'other' };
/** The sniff of bytes that are no known format and not text. */
export const UNKNOWN_SNIFF: Sniff = { mime: 'application/octet-stream', ext: '', kind: 'other' };

/** Largest video genpipe uploads (the presigned upload limit, 5 GiB). */
export const VIDEO_MAX_BYTES = CHOICES.urlVideoMaxBytes;

/** The check's own reasons (the limits' are the service's `detail` texts). */
export const MEDIA_CHECK_REASONS = {
  missing: 'file not found or not readable',
  empty: 'file is empty',
  unknownType: (mime: string | undefined) => `unknown type: ${mime ?? 'not sniffed'}`,
  notMedia: (sniff: Sniff) =>
    sniff.kind === 'text' || sniff.mime === UNKNOWN_SNIFF.mime
      ? `unknown type: the bytes are not an image or a video${sniff.kind === 'text' ? ' (they are text)' : ''}`
      : `unknown type: ${sniff.mime} is not an image or a video`,
  untold: (option: string) =>
    `the type could not be told from the file's bytes: pass it with ${option} (an image/… or video/… type)`,
  /** A size limit's text (the service's detail) with the file's size and the limit's, in one unit. */
  overSize: (detail: string, bytes: number, limit: number) =>
    `${detail}: the file is ${formatSize(bytes)}; the limit is ${formatSize(limit)}`,
  wrongKind: (sniff: Sniff, site: string, type: string, wants: 'image' | 'video') =>
    `wrong type: the file is ${sniff.kind === 'video' ? 'a video' : 'an image'} (${sniff.mime}), but ${site} of type '${type}' takes ${wants === 'video' ? 'a video' : 'an image'}`,
} as const;

/**
 * What the head of a file file-type did not recognise holds: `empty`, `text` (valid UTF-8, no NUL byte; a
 * multi-byte character cut at the end of the head is fine) or `binary`.
 */
function headKind(head: Uint8Array): 'empty' | 'text' | 'binary' {
  if (head.length === 0) return 'empty';
  if (head.includes(0)) return 'binary';
  const more = head.length === SNIFF_HEAD_BYTES;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: more });
    return 'text';
  } catch {
    return 'binary';
  }
}

/**
 * The real type of a file from its head: file-type's answer, else {@link TEXT_SNIFF},
 * {@link EMPTY_SNIFF} or {@link UNKNOWN_SNIFF}. Judges nothing.
 *
 * @throws MediaError `missing`, or the errno error, when the file cannot be read
 * @example await sniffPath('photo.png') // { mime: 'image/jpeg', ext: 'jpg', kind: 'image' } for a JPEG so named
 */
export async function sniffPath(path: string): Promise<Sniff> {
  const head = await readHead(path); // one read for both questions
  const found = await sniffHead(head);
  if (found) return { ...found };
  const kind = headKind(head);
  return { ...(kind === 'empty' ? EMPTY_SNIFF : kind === 'text' ? TEXT_SNIFF : UNKNOWN_SNIFF) };
}

/** The check's answer: the media facts, or the reason the file would be refused. */
export type MediaVerdict =
  | { ok: true; media: CheckedMedia }
  | { ok: false; reason: string; media: CheckedMedia | null };

/** What {@link checkMediaFile} checks the file against. */
export interface MediaCheckOptions {
  /**
   * The service's `detail` when the facts break a limit of the position the file takes, else null.
   * Called with the size alone first, then with the image's dimensions or the video's probe.
   */
  limits: (facts: MediaFacts, kind: 'image' | 'video') => string | null;
  /** The position's path in the texts (`source`, `image_ref[1]`, …), for the 5 GiB video limit. */
  sitePath: () => string;
  /** A text file passes as it is (a prompt file). */
  acceptText?: boolean;
  signal?: AbortSignal;
}

/**
 * Checks a sniffed file (see the module comment). A reason from a media helper (a truncated image, a
 * video ffprobe cannot read) is the verdict; a tool that cannot run, or an abort, is thrown.
 *
 * @example await checkMediaFile('big.png', sniff, { limits, sitePath: () => 'source' })
 * // { ok: false, reason: 'source: image is 9000x10px but each side must be <= 8000px. Resize and try again.', media: { bytes: 412, width: 9000, height: 10 } }
 */
export async function checkMediaFile(
  path: string,
  sniff: Sniff | null,
  opts: MediaCheckOptions,
): Promise<MediaVerdict> {
  const refuse = (reason: string, media: CheckedMedia | null): MediaVerdict => ({ ok: false, reason, media });
  const st = await stat(path).catch(() => null);
  if (!st?.isFile()) return refuse(MEDIA_CHECK_REASONS.missing, null);
  const bytes = st.size;
  if (bytes === 0) return refuse(MEDIA_CHECK_REASONS.empty, { bytes });
  if (opts.acceptText) return { ok: true, media: { bytes } };
  const base: MediaFacts = sniff?.mime ? { bytes, mime: sniff.mime } : { bytes };
  let known: CheckedMedia = { bytes };
  try {
    // The decoders are loaded when a file needs them: `files upload` of a video never loads sharp.
    if (sniff?.kind === 'image') {
      const { readImageHeader, verifyImage } = await import('../media/image-header.ts');
      const tooBig = opts.limits(base, 'image');
      // the size alone is known: a refusal now is of the size
      if (tooBig) return refuse(MEDIA_CHECK_REASONS.overSize(tooBig, bytes, LIMITS.imageMaxBytes), { bytes });
      const claimed = await readImageSize(path);
      if (claimed) {
        const { width, height } = claimed;
        // What the header says stays known if the decoder then finds the file cut short.
        known = { bytes, width, height };
        const overClaimed = opts.limits({ ...base, width, height }, 'image');
        if (overClaimed) return refuse(overClaimed, { bytes, width, height });
      }
      const header = await readImageHeader(path);
      const media = { bytes, width: header.width, height: header.height };
      known = media;
      const overLimit = opts.limits({ ...base, width: header.width, height: header.height }, 'image');
      if (overLimit) return refuse(overLimit, media);
      opts.signal?.throwIfAborted();
      await verifyImage(path);
      return { ok: true, media };
    }
    if (sniff?.kind === 'video') {
      if (bytes > VIDEO_MAX_BYTES) {
        const detail = urlVideoTooLargeDetail(opts.sitePath());
        return refuse(MEDIA_CHECK_REASONS.overSize(detail, bytes, VIDEO_MAX_BYTES), { bytes });
      }
      const cutShort = await containerVerdict(path, sniff.mime);
      if (cutShort !== null) return refuse(cutShort, { bytes });
      const { probeVideo } = await import('../media/probe.ts');
      const probe = await probeVideo(path);
      const media = {
        bytes,
        width: probe.width,
        height: probe.height,
        durationSeconds: probe.durationSeconds,
      };
      const overLimit = opts.limits({ ...base, ...media }, 'video');
      if (overLimit) return refuse(overLimit, media);
      return { ok: true, media };
    }
  } catch (err) {
    if (isMediaError(err) && err.code !== 'tool' && err.code !== 'aborted') return refuse(err.message, known);
    throw err;
  }
  return refuse(MEDIA_CHECK_REASONS.unknownType(sniff?.mime), { bytes });
}

/** What a file given on the command line must be, for {@link checkLocalMedia}. */
export interface LocalMediaOptions extends Omit<MediaCheckOptions, 'acceptText'> {
  /** The kind its position takes, with the words for the reason; any image or video when absent. */
  wants?: { kind: 'image' | 'video'; site: string; type: string };
  /**
   * The type the caller gives the bytes (`mime`, when given) and the option that gives it: bytes whose
   * type their head does not tell are checked as `mime`, or refused with a reason naming `option`.
   */
  declared?: { mime?: string; option: string };
}

/**
 * The whole local check of a file about to be uploaded on its own (not through a recipe): sniffed,
 * refused when empty, not an image or a video, or of the wrong kind for its position, then
 * {@link checkMediaFile}. The `sniff` is returned with the verdict when the file could be read.
 *
 * @example await checkLocalMedia('empty.png', { limits: () => null, sitePath: () => 'empty.png' })
 * // { ok: false, reason: 'file is empty', media: { bytes: 0 }, sniff: { mime: 'application/x-empty', … } }
 */
export async function checkLocalMedia(
  path: string,
  opts: LocalMediaOptions,
): Promise<MediaVerdict & { sniff: Sniff | null }> {
  let sniff: Sniff;
  try {
    sniff = await sniffPath(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (isMediaError(err, 'missing') || code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      return { ok: false, reason: MEDIA_CHECK_REASONS.missing, media: null, sniff: null };
    }
    throw err;
  }
  if (sniff.mime === EMPTY_SNIFF.mime) {
    return { ok: false, reason: MEDIA_CHECK_REASONS.empty, media: { bytes: 0 }, sniff };
  }
  const { wants, declared, ...check } = opts;
  if (sniff.mime === UNKNOWN_SNIFF.mime && declared) {
    const { mime, option } = declared;
    if (mime === undefined)
      return { ok: false, reason: MEDIA_CHECK_REASONS.untold(option), media: null, sniff };
    sniff = { mime, ext: '', kind: mediaKindOf(mime) };
  }
  if (sniff.kind !== 'image' && sniff.kind !== 'video') {
    return { ok: false, reason: MEDIA_CHECK_REASONS.notMedia(sniff), media: null, sniff };
  }
  if (wants && sniff.kind !== wants.kind) {
    return {
      ok: false,
      reason: MEDIA_CHECK_REASONS.wrongKind(sniff, wants.site, wants.type, wants.kind),
      media: null,
      sniff,
    };
  }
  return { ...(await checkMediaFile(path, sniff, check)), sniff };
}
