/**
 * The one H.264 encode every emulator video goes through: yuv420p, exactly 24 fps, a fixed frame
 * count, fast settings (ultrafast preset), no audio, moov atom up front. Written atomically.
 */

import { probeVideo, runFfmpeg } from '../../media/index.ts';
import { LIMITS } from '../../spec/index.ts';
import { writeAtomically } from './output-file.ts';
import type { RenderedVideo } from './types.ts';

/** Frames per second of every emulator video (the interface's 24 fps frame grid). */
export const FPS = LIMITS.fps;

/** Encoder settings: fast on two cores even at 1080p, small enough files for tests. */
const ENCODER_ARGS = [
  '-c:v',
  'libx264',
  '-preset',
  'ultrafast',
  '-crf',
  '30',
  '-g',
  String(2 * FPS),
] as const;

/** Frames of a clip of `seconds` on the 24 fps grid, at least 1. */
export function framesFor(seconds: number): number {
  return Math.max(1, Math.round(seconds * FPS));
}

/**
 * Runs ffmpeg with `inputArgs` and a filter graph whose output pad is `[v]`, encoding exactly `frames`
 * frames to an MP4 at `outPath`, then probes the result.
 *
 * @param o.inputArgs ffmpeg input arguments (-i ... / -f lavfi -i ...)
 * @param o.filterGraph a -filter_complex graph ending in the pad [v]
 * @param o.what words that start the error reason, e.g. 'video could not be rendered'
 */
export async function encodeMp4(o: {
  inputArgs: readonly string[];
  filterGraph: string;
  frames: number;
  outPath: string;
  what: string;
  signal?: AbortSignal;
}): Promise<RenderedVideo> {
  await writeAtomically(o.outPath, (tmp) =>
    runFfmpeg(
      [
        ...o.inputArgs,
        '-filter_complex',
        o.filterGraph,
        '-map',
        '[v]',
        ...ENCODER_ARGS,
        '-pix_fmt',
        'yuv420p',
        '-r',
        String(FPS),
        '-frames:v',
        String(o.frames),
        '-an',
        '-sn',
        '-dn',
        '-map_metadata',
        '-1',
        '-movflags',
        '+faststart',
        '-f',
        'mp4',
        tmp,
      ],
      { signal: o.signal, what: o.what },
    ),
  );
  const probe = await probeVideo(o.outPath);
  return {
    path: o.outPath,
    mime: 'video/mp4',
    width: probe.width,
    height: probe.height,
    durationSeconds: (probe.frames ?? o.frames) / FPS,
    frames: probe.frames ?? o.frames,
  };
}
