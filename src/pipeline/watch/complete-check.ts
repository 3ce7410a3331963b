/**
 * Is a stable file really complete? Stability (size and mtime unchanged for the quiet period) is not
 * enough: a copy that stalls on a slow share looks stable. So, by the real type from the bytes:
 *
 * - images: the header parses (sharp metadata) AND the whole image decodes (a half-written PNG's header
 *   parses, its pixels do not); an image whose header claims more pixels than any position takes is not
 *   decoded (the check refuses it by its header): it is complete when its structure ends inside the
 *   file (image-end.ts; a format whose end is not read, on stability alone);
 * - videos: the container holds its whole declared length (see container-complete.ts) AND ffprobe reads it;
 * - anything else (prompt text, unknown types): stability alone;
 * - an empty file is never complete: files are created empty before their bytes arrive.
 */
import { stat } from 'node:fs/promises';
import {
  imageEnd,
  isMediaError,
  probeVideo,
  readImageHeader,
  readImageSize,
  sniffFile,
  verifyImage,
} from '../../media/index.ts';
import { checkImageFacts } from '../../spec/index.ts';
import { containerVerdict } from './container-complete.ts';

/** What the completeness check found. */
export type CompleteVerdict =
  | { complete: true; kind: 'image' | 'video' | 'other'; mime: string | null }
  | { complete: false; kind: 'image' | 'video' | 'other' | null; mime: string | null; reason: string };

/** The reason given for an empty file. */
export const EMPTY_REASON = 'file is empty';
/** The reason given for an image too large to decode whose structure runs past the file's end. */
export const IMAGE_CUT_REASON = (format: string) =>
  `image is incomplete: the ${format} file ends before its structure does`;
/** The reason given for a file that cannot be opened. */
export const UNREADABLE_REASON = 'file not found or not readable';

/**
 * Checks whether the file at `path` is complete (see the module comment). Never throws for the file's
 * own problems: they come back as `{ complete: false, reason }` with a plain reason. Only a failure of
 * the tools themselves (ffprobe missing) rejects.
 *
 * @example const v = await checkComplete('inbox/photo.png'); // { complete: false, kind: 'image', reason: 'image could not be decoded: the PNG file is truncated (…)' }
 */
export async function checkComplete(path: string): Promise<CompleteVerdict> {
  let sniffed: Awaited<ReturnType<typeof sniffFile>>;
  let size: number;
  try {
    size = (await stat(path)).size;
    sniffed = await sniffFile(path);
  } catch {
    return { complete: false, kind: null, mime: null, reason: UNREADABLE_REASON };
  }
  if (size === 0) return { complete: false, kind: null, mime: null, reason: EMPTY_REASON };
  if (sniffed === null) return { complete: true, kind: 'other', mime: null };
  const { kind, mime } = sniffed;
  try {
    const claimed = kind === 'image' ? await readImageSize(path) : null;
    if (claimed && checkImageFacts(path, { bytes: size, ...claimed }) !== null) {
      const end = await imageEnd(path);
      if (end?.verdict === 'cut') {
        return { complete: false, kind, mime, reason: IMAGE_CUT_REASON(end.format) };
      }
    } else if (kind === 'image') {
      await readImageHeader(path);
      await verifyImage(path);
    } else if (kind === 'video') {
      const incomplete = await containerVerdict(path, mime);
      if (incomplete !== null) return { complete: false, kind, mime, reason: incomplete };
      await probeVideo(path);
    }
  } catch (err) {
    if (isMediaError(err) && err.code !== 'tool' && err.code !== 'aborted') {
      return { complete: false, kind, mime, reason: err.message };
    }
    if ((err as NodeJS.ErrnoException).code !== undefined && !isMediaError(err)) {
      return { complete: false, kind, mime, reason: UNREADABLE_REASON };
    }
    throw err;
  }
  return { complete: true, kind, mime };
}
