/**
 * Output frame sizes of the emulator's renderers, from an aspect ratio ('16:9') and, for videos, a
 * resolution ('720p' names the short side). Pure functions.
 */
import { CHOICES } from '../../spec/index.ts';

export interface FrameSize {
  width: number;
  height: number;
}

/** Long side of every rendered image, px. */
export const IMAGE_LONG_SIDE = 1024;

/** Short side of the named resolutions beyond the plain '<n>p' form. */
const NAMED_RESOLUTIONS: Readonly<Record<string, number>> = { '4k': 2160, '2k': 1440 };

/** Rounds to the nearest even integer, at least 2 (video frames in yuv420p need even sides). */
export function roundEven(x: number): number {
  return Math.max(2, 2 * Math.round(x / 2));
}

/**
 * Width over height of an aspect ratio written 'W:H'.
 * @throws RangeError when the text is not two positive numbers separated by ':'
 * @example aspectValue('16:9') // 1.777…
 */
export function aspectValue(aspectRatio: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(aspectRatio);
  const w = m ? Number(m[1]) : 0;
  const h = m ? Number(m[2]) : 0;
  if (!(w > 0 && h > 0)) throw new RangeError(`Expected an aspect ratio 'W:H' but received '${aspectRatio}'`);
  return w / h;
}

/**
 * Frame of a rendered image: long side {@link IMAGE_LONG_SIDE}, the short side rounded to even.
 * @example imageFrameSize('16:9') // { width: 1024, height: 576 }; imageFrameSize('1:3') // { width: 342, height: 1024 }
 */
export function imageFrameSize(aspectRatio: string, longSide = IMAGE_LONG_SIDE): FrameSize {
  const r = aspectValue(aspectRatio);
  return r >= 1
    ? { width: longSide, height: roundEven(longSide / r) }
    : { width: roundEven(longSide * r), height: longSide };
}

/**
 * Short side in px of a resolution: '720p' → 720, '4k' → 2160; anything unreadable falls back to the
 * default video resolution of the choices.
 */
export function resolutionShortSide(resolution: string | undefined): number {
  const text = (resolution ?? '').trim().toLowerCase();
  const named = NAMED_RESOLUTIONS[text];
  if (named) return named;
  const m = /^(\d{2,4})p$/.exec(text);
  if (m) return roundEven(Number(m[1]));
  return Number(/^(\d+)p$/.exec(CHOICES.defaultVideoResolution)?.[1] ?? 720);
}

/**
 * Frame of a video of a given short side and shape; both sides even.
 * @example frameForShortSide(720, 16 / 9) // { width: 1280, height: 720 }
 */
export function frameForShortSide(shortSide: number, ratio: number): FrameSize {
  const s = roundEven(shortSide);
  return ratio >= 1 ? { width: roundEven(s * ratio), height: s } : { width: s, height: roundEven(s / ratio) };
}

/**
 * Frame of a rendered video: the resolution is the short side, the aspect ratio gives the long one.
 * @example videoFrameSize('9:16', '720p') // { width: 720, height: 1280 }
 */
export function videoFrameSize(aspectRatio: string, resolution: string | undefined): FrameSize {
  return frameForShortSide(resolutionShortSide(resolution), aspectValue(aspectRatio));
}
