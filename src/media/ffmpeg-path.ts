/**
 * Where the ffmpeg and ffprobe binaries are: a system binary named by $GENPIPE_FFMPEG_PATH /
 * $GENPIPE_FFPROBE_PATH when set, else the static builds shipped by @ffmpeg-installer/ffmpeg and
 * @ffprobe-installer/ffprobe (loaded lazily, so an override works even where no build is shipped).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** Env var naming a system ffmpeg binary to use instead of the bundled one. */
export const FFMPEG_PATH_ENV = 'GENPIPE_FFMPEG_PATH';
/** Env var naming a system ffprobe binary to use instead of the bundled one. */
export const FFPROBE_PATH_ENV = 'GENPIPE_FFPROBE_PATH';

function fromEnv(name: string): string | null {
  const v = process.env[name]?.trim();
  return v ? v : null;
}

/**
 * Path of the ffmpeg binary: $GENPIPE_FFMPEG_PATH when set, else the one from @ffmpeg-installer/ffmpeg.
 *
 * @example spawn(ffmpegPath(), ['-version'])
 */
export function ffmpegPath(): string {
  return fromEnv(FFMPEG_PATH_ENV) ?? (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
}

/**
 * Path of the ffprobe binary: $GENPIPE_FFPROBE_PATH when set, else the one from @ffprobe-installer/ffprobe.
 *
 * @example spawn(ffprobePath(), ['-version'])
 */
export function ffprobePath(): string {
  return fromEnv(FFPROBE_PATH_ENV) ?? (require('@ffprobe-installer/ffprobe') as { path: string }).path;
}
