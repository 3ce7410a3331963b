/**
 * Ingest of a stored file: sniff the real bytes, decode them (a full image decode, or an ffprobe of a
 * video), check the declared type, run moderation, then mark the file ready (with what was learned)
 * or failed (with a human-readable failure_reason). Runs in the background; close() waits for it.
 */

import {
  isMediaError,
  probeVideo,
  readImageHeader,
  readImageSize,
  sniffFile,
  verifyImage,
} from '../../media/index.ts';
import { FILE_FAILURE_REASONS, sameMediaType } from '../../spec/index.ts';
import { schedule } from '../background.ts';
import type { EmulatorContext } from '../context.ts';
import { overSide } from '../generations/media-refs.ts';
import { blockedWordIn } from '../generations/moderation.ts';
import type { FileRec, MediaInfo } from '../store.ts';

/** What ingest concluded; `sniffedMime` is the real type when the bytes were recognised at all. */
type Outcome = { ok: true; media: MediaInfo } | { ok: false; reason: string; sniffedMime?: string };

function capitalized(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A failure_reason for a media helper's rejection: its plain message, or a fixed text. */
function undecodable(err: unknown, kind: 'image' | 'video'): string {
  if (isMediaError(err, 'missing')) return FILE_FAILURE_REASONS.missingBytes;
  if (isMediaError(err, 'corrupt') || isMediaError(err, 'unsupported')) return capitalized(err.message);
  return kind === 'image' ? FILE_FAILURE_REASONS.undecodableImage : FILE_FAILURE_REASONS.undecodableVideo;
}

/** Examines the bytes at `path`. Never rejects. */
async function examine(
  ctx: EmulatorContext,
  path: string,
  declaredMime: string | null,
  filename: string | null,
): Promise<Outcome> {
  let sniffed: Awaited<ReturnType<typeof sniffFile>>;
  try {
    sniffed = await sniffFile(path);
  } catch {
    return { ok: false, reason: FILE_FAILURE_REASONS.missingBytes };
  }
  if (!sniffed || sniffed.kind === 'other') return { ok: false, reason: FILE_FAILURE_REASONS.notMedia };
  if (declaredMime !== null && !sameMediaType(declaredMime, sniffed.mime)) {
    return {
      ok: false,
      reason: FILE_FAILURE_REASONS.mimeMismatch(declaredMime, sniffed.mime),
      sniffedMime: sniffed.mime,
    };
  }
  let media: MediaInfo;
  if (sniffed.kind === 'image') {
    try {
      // A header claiming a side over the limit is kept at its word, not decoded (no decoder reads
      // 60000 px a side): ready, like any image too large, and a generation using it fails.
      const claimed = await readImageSize(path);
      if (!claimed || !overSide(claimed)) await verifyImage(path);
      const header = claimed && overSide(claimed) ? claimed : await readImageHeader(path);
      media = { kind: 'image', mime: sniffed.mime, width: header.width, height: header.height };
    } catch (err) {
      return { ok: false, reason: undecodable(err, 'image'), sniffedMime: sniffed.mime };
    }
  } else {
    try {
      const probe = await probeVideo(path);
      media = {
        kind: 'video',
        mime: sniffed.mime,
        width: probe.width,
        height: probe.height,
        durationSeconds: probe.durationSeconds,
      };
    } catch (err) {
      return { ok: false, reason: undecodable(err, 'video'), sniffedMime: sniffed.mime };
    }
  }
  if (filename !== null && blockedWordIn(filename, ctx.config.blocked_words) !== null) {
    return { ok: false, reason: FILE_FAILURE_REASONS.moderated, sniffedMime: sniffed.mime };
  }
  return { ok: true, media };
}

/** Runs ingest now; the outcome is dropped when the file left `pending` meanwhile (deleted, expired). */
export async function ingestFile(
  ctx: EmulatorContext,
  rec: FileRec,
  declaredMime: string | null,
): Promise<void> {
  const path = rec.blobPath;
  const outcome: Outcome = path
    ? await examine(ctx, path, declaredMime, rec.filename)
    : { ok: false, reason: FILE_FAILURE_REASONS.missingBytes };
  if (rec.state !== 'pending') return;
  if (outcome.ok) {
    rec.media = outcome.media;
    rec.mime_type = outcome.media.mime;
    rec.state = 'ready';
  } else {
    // mime_type tells the type of the stored bytes whenever it is known, even for a failed file.
    if (outcome.sniffedMime) rec.mime_type = outcome.sniffedMime;
    rec.state = 'failed';
    rec.failure_reason = outcome.reason;
  }
}

/**
 * Starts ingest in the background right away.
 * @param declaredMime the MIME type the caller declared (presigned mime_type, multipart `mime_type`
 *   field), which the real bytes must match; null when nothing was declared
 */
export function startIngest(ctx: EmulatorContext, rec: FileRec, declaredMime: string | null): void {
  rec.ingestStarted = true;
  schedule(ctx, 0, () => ingestFile(ctx, rec, declaredMime));
}
