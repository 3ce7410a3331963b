/**
 * Video edits and reframes with ffmpeg. Both keep the source's duration and resample it to 24 fps; the
 * source is decoded by ffmpeg as a stream.
 */
import { probeVideo, type VideoProbe } from '../../media/index.ts';
import { encodeMp4, FPS, framesFor } from './encode.ts';
import {
  aspectValue,
  type FrameSize,
  frameForShortSide,
  resolutionShortSide,
  roundEven,
} from './frame-size.ts';
import { pick, rngFor } from './seed.ts';
import type { RenderedVideo, SourcePosition } from './types.ts';

/** Source resampled to 24 fps, padded by repeating its last frame so the frame count is always reached. */
export function resampled(frames: number): string {
  return `fps=${FPS},tpad=stop_mode=clone:stop=${frames},setsar=1`;
}

/** The frame size of an edit: the source's (made even), or the same shape with the resolution's short side. */
export function editFrameSize(source: FrameSize, resolution: string | undefined): FrameSize {
  if (!resolution) return { width: roundEven(source.width), height: roundEven(source.height) };
  return frameForShortSide(resolutionShortSide(resolution), source.width / source.height);
}

/** The visible effect of an edit, seeded by the prompt: a hue rotation plus a colour-balance cast. */
export function editEffect(prompt: string): string {
  const rng = rngFor('video_edit', prompt);
  const hue = Math.round(90 + rng.next() * 180);
  const cast = (v: number) => v.toFixed(2);
  const [rs, gs, bs] = [rng.between(-0.4, 0.4), rng.between(-0.4, 0.4), rng.between(-0.4, 0.4)];
  const effects = [
    `hue=h=${hue}:s=1.5`,
    `colorbalance=rs=${cast(rs)}:gs=${cast(gs)}:bs=${cast(bs)}:rm=${cast(-rs)}:bm=${cast(-bs)}`,
  ];
  if (pick(rng, 4) === 0) effects.push('negate');
  return effects.join(',');
}

/**
 * An edit of a source video: a visible colour transform seeded by the prompt, the source's duration
 * (to the nearest 1/24 s), exactly 24 fps, H.264 MP4. The frame size is the source's (rounded to even)
 * unless `resolution` names a new short side.
 *
 * @param o.sourcePath the source video file
 * @param o.prompt seeds the transform
 * @param o.resolution optional '<n>p' short side of the output
 * @param o.outPath where the MP4 is written (atomically)
 * @param o.signal kills ffmpeg when aborted
 * @throws MediaError (code corrupt / unsupported) when the source does not decode
 */
export async function editVideo(o: {
  sourcePath: string;
  prompt: string;
  resolution?: string;
  outPath: string;
  signal?: AbortSignal;
}): Promise<RenderedVideo> {
  const probe = await probeVideo(o.sourcePath);
  const size = editFrameSize(probe, o.resolution);
  const frames = framesFor(probe.durationSeconds);
  return encodeMp4({
    inputArgs: ['-i', o.sourcePath],
    filterGraph:
      `[0:v]${resampled(frames)},scale=${size.width}:${size.height},setsar=1,` +
      `${editEffect(o.prompt)},format=yuv420p[v]`,
    frames,
    outPath: o.outPath,
    what: 'video could not be edited',
    signal: o.signal,
  });
}

export interface Placement {
  /** Canvas (output frame) size. */
  canvas: FrameSize;
  /** Left/top of the scaled source on the canvas, px (may be negative: the source bleeds off-canvas). */
  x: number;
  y: number;
  /** Scaled source size, px (even). */
  width: number;
  height: number;
}

/**
 * Where the source sits in a reframe's canvas. Without a position the source is fitted whole and
 * centred (the rest of the canvas is filled in). With one, w_norm/h_norm are fractions of the canvas
 * width/height (a missing one follows the source's shape) and x_norm/y_norm the top-left corner
 * (a missing one centres on that axis).
 */
export function placeSource(source: FrameSize, canvas: FrameSize, pos: SourcePosition = {}): Placement {
  const srcRatio = source.width / source.height;
  let w: number;
  let h: number;
  if (pos.w_norm !== undefined && pos.h_norm !== undefined) {
    w = pos.w_norm * canvas.width;
    h = pos.h_norm * canvas.height;
  } else if (pos.w_norm !== undefined) {
    w = pos.w_norm * canvas.width;
    h = w / srcRatio;
  } else if (pos.h_norm !== undefined) {
    h = pos.h_norm * canvas.height;
    w = h * srcRatio;
  } else {
    const scale = Math.min(canvas.width / source.width, canvas.height / source.height);
    w = source.width * scale;
    h = source.height * scale;
  }
  const width = roundEven(w);
  const height = roundEven(h);
  const x =
    pos.x_norm !== undefined ? Math.round(pos.x_norm * canvas.width) : Math.round((canvas.width - width) / 2);
  const y =
    pos.y_norm !== undefined
      ? Math.round(pos.y_norm * canvas.height)
      : Math.round((canvas.height - height) / 2);
  return { canvas, x, y, width, height };
}

/** The canvas of a reframe: the target shape, with the resolution (or else the source's short side) as its short side. */
export function reframeCanvas(
  source: VideoProbe | FrameSize,
  aspectRatio: string,
  resolution?: string,
): FrameSize {
  const short = resolution ? resolutionShortSide(resolution) : Math.min(source.width, source.height);
  return frameForShortSide(short, aspectValue(aspectRatio));
}

/**
 * A reframe of a source video to a target aspect ratio: the source scaled into the new frame (fitted and
 * centred, or at `sourcePosition`), the rest of the canvas filled with a blurred, darkened cover of the
 * source. The source's duration, exactly 24 fps, H.264 MP4.
 *
 * @param o.sourcePath the source video file
 * @param o.aspectRatio target 'W:H'
 * @param o.resolution optional '<n>p' short side of the output; else the source's short side
 * @param o.sourcePosition optional normalized rectangle of the source inside the output canvas
 * @param o.outPath where the MP4 is written (atomically)
 * @param o.signal kills ffmpeg when aborted
 * @throws MediaError (code corrupt / unsupported) when the source does not decode
 */
export async function reframeVideo(o: {
  sourcePath: string;
  aspectRatio: string;
  resolution?: string;
  outPath: string;
  sourcePosition?: SourcePosition;
  signal?: AbortSignal;
}): Promise<RenderedVideo> {
  const probe = await probeVideo(o.sourcePath);
  const canvas = reframeCanvas(probe, o.aspectRatio, o.resolution);
  const p = placeSource(probe, canvas, o.sourcePosition);
  const frames = framesFor(probe.durationSeconds);
  const { width: W, height: H } = canvas;
  const blurW = roundEven(Math.max(2, W / 16));
  const blurH = roundEven(Math.max(2, H / 16));
  return encodeMp4({
    inputArgs: ['-i', o.sourcePath],
    filterGraph:
      `[0:v]${resampled(frames)},split=2[a][b];` +
      `[a]scale=${W}:${H}:force_original_aspect_ratio=increase,crop=${W}:${H},` +
      `scale=${blurW}:${blurH}:flags=area,scale=${W}:${H}:flags=bilinear,` +
      'colorlevels=romax=0.6:gomax=0.6:bomax=0.6,setsar=1[bg];' +
      `[b]scale=${p.width}:${p.height},setsar=1[fg];` +
      `[bg][fg]overlay=x=${p.x}:y=${p.y}:format=yuv420:shortest=1,format=yuv420p[v]`,
    frames,
    outPath: o.outPath,
    what: 'video could not be reframed',
    signal: o.signal,
  });
}
