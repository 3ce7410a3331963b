/**
 * What a video extend takes from the video it extends: the frame it continues from (the last frame
 * forward, the first in reverse) and, where the caller sent none, its shape and resolution.
 */
import { probeVideo, runFfmpeg } from '../../media/index.ts';
import type { ResolvedMedia } from './media-refs.ts';

/**
 * Writes one frame of `videoPath` as a PNG at `outPath`: the last frame for a forward extend
 * (generation_id in video.start_frame), the first for a reverse extend (in video.end_frame).
 */
export async function extractFrame(
  videoPath: string,
  which: 'first' | 'last',
  outPath: string,
  signal?: AbortSignal,
): Promise<string> {
  const args =
    which === 'first'
      ? ['-i', videoPath, '-frames:v', '1', outPath]
      : // Decode only the final second; -update keeps overwriting, so the file ends as the last frame.
        ['-sseof', '-1', '-i', videoPath, '-update', '1', outPath];
  await runFfmpeg(args, { signal, what: 'extend frame could not be extracted' });
  return outPath;
}

/** The video a type-video request extends: a generation's video in video.start_frame or video.end_frame. */
export function extendedVideo(media: readonly ResolvedMedia[]): ResolvedMedia | undefined {
  return media.find(
    (m) =>
      m.channel === 'generation_id' &&
      m.kind === 'video' &&
      (m.path === 'video.start_frame' || m.path === 'video.end_frame'),
  );
}

/**
 * The frame shape of an extend: the aspect ratio and resolution the caller sent, else the extended
 * video's own (its width:height, its short side), so the extend continues in the parent's frame.
 */
export async function extendShape(
  parentPath: string,
  sent: { aspectRatio?: string; resolution?: string },
): Promise<{ aspectRatio: string; resolution: string }> {
  const { aspectRatio, resolution } = sent;
  if (aspectRatio !== undefined && resolution !== undefined) return { aspectRatio, resolution };
  const p = await probeVideo(parentPath);
  return {
    aspectRatio: aspectRatio ?? `${p.width}:${p.height}`,
    resolution: resolution ?? `${Math.min(p.width, p.height)}p`,
  };
}
