/**
 * A new video with ffmpeg: a seeded pattern (hue-shifted test pattern, coloured game of life, or a pan
 * across the prompt's still image), cross-faded from the start frame and/or into the end frame when given.
 */
import { rm } from 'node:fs/promises';
import sharp from 'sharp';
import { imageErrorFrom } from '../../media/index.ts';
import { CHOICES, LIMITS } from '../../spec/index.ts';
import { encodeMp4, FPS } from './encode.ts';
import { type FrameSize, roundEven, videoFrameSize } from './frame-size.ts';
import { scratchPathFor } from './output-file.ts';
import { promptSvg } from './render-image.ts';
import { pick, rngFor } from './seed.ts';
import type { RenderedVideo } from './types.ts';

/** Seconds of a duration value ('5s', '10s'; any other 'Ns' is read as N, else the default). */
export function durationSecondsOf(duration: string): number {
  const known = LIMITS.durationSeconds[duration as keyof typeof LIMITS.durationSeconds];
  if (known) return known;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(duration.trim());
  const n = m ? Number(m[1]) : Number.NaN;
  if (n > 0 && n <= 60) return n;
  return LIMITS.durationSeconds[CHOICES.defaultVideoDuration as keyof typeof LIMITS.durationSeconds];
}

function hex(rng: ReturnType<typeof rngFor>): string {
  return `0x${[0, 1, 2].map(() => pick(rng, 256).toString(16).padStart(2, '0')).join('')}`;
}

/** The pattern input of a video: ffmpeg input arguments and the filter chain that follows input 0. */
export interface PatternInput {
  inputArgs: string[];
  /** Filters applied to input 0; the result is frame-sized yuv420p at 24 fps. */
  chain: string;
  /** A scratch file the input reads (removed by the caller afterwards). */
  scratchPath?: string;
}

/**
 * The seeded pattern of a prompt: a hue-shifted test pattern, a coloured game of life (computed at a
 * twelfth of the size, 8 generations a second), or a slow pan across the prompt's still image (drawn like renderImage's).
 */
export async function patternInput(
  prompt: string,
  size: FrameSize,
  seconds: number,
  nextTo: string,
): Promise<PatternInput> {
  const rng = rngFor('video', prompt);
  const { width: w, height: h } = size;
  const hue = Math.round(rng.next() * 360);
  const tail = `setsar=1,format=yuv420p`;
  switch (pick(rng, 3)) {
    case 0:
      return {
        inputArgs: ['-f', 'lavfi', '-i', `testsrc2=size=${w}x${h}:rate=${FPS}:duration=${seconds}`],
        chain: `hue=h=${hue}:s=1.3,${tail}`,
      };
    case 1: {
      const qw = Math.max(16, Math.round(w / 12));
      const qh = Math.max(16, Math.round(h / 12));
      const life =
        `life=size=${qw}x${qh}:rate=8:seed=${pick(rng, 2 ** 31)}:ratio=0.25:mold=12:` +
        `life_color=${hex(rng)}:death_color=${hex(rng)}:mold_color=${hex(rng)}`;
      return {
        inputArgs: ['-f', 'lavfi', '-i', life],
        chain: `fps=${FPS},scale=${w}:${h}:flags=neighbor,${tail}`,
      };
    }
    default: {
      // A still 25% larger than the frame; the crop window travels across it over the clip.
      const big = { width: roundEven(w * 1.25), height: roundEven(h * 1.25) };
      const still = scratchPathFor(nextTo, 'pan.png');
      const svg = promptSvg({ prompt, aspectRatio: `${w}:${h}`, model: 'video', salt: 'video-pan' }, big);
      await sharp(Buffer.from(svg))
        .resize(big.width, big.height, { fit: 'fill' })
        .removeAlpha()
        .png({ compressionLevel: 1 })
        .toFile(still);
      const [fx, fy] =
        pick(rng, 2) === 0 ? [`t/${seconds}`, `1-t/${seconds}`] : [`1-t/${seconds}`, `t/${seconds}`];
      return {
        inputArgs: ['-loop', '1', '-framerate', String(FPS), '-t', String(seconds), '-i', still],
        chain: `crop=w=${w}:h=${h}:x='(iw-ow)*(${fx})':y='(ih-oh)*(${fy})',${tail}`,
        scratchPath: still,
      };
    }
  }
}

/** Writes an anchor image as a PNG of exactly the frame size (cover crop), for ffmpeg to loop. */
async function anchorPng(path: string, size: FrameSize, nextTo: string): Promise<string> {
  const out = scratchPathFor(nextTo, 'anchor.png');
  try {
    await sharp(path, { failOn: 'error' })
      .autoOrient()
      .resize(size.width, size.height, { fit: 'cover', position: 'centre' })
      .flatten({ background: '#000000' })
      .png({ compressionLevel: 1 })
      .toFile(out);
  } catch (err) {
    await rm(out, { force: true });
    throw imageErrorFrom(err);
  }
  return out;
}

/**
 * A new H.264 MP4 video: exactly 24 fps and duration x 24 frames ('5s' → 120, '10s' → 240), frame
 * shape from the aspect ratio with the resolution as its short side (16:9 at 720p → 1280x720, 9:16 at
 * 720p → 720x1280). With a start frame the video opens on it and fades into the pattern (or into the
 * end frame); with an end frame it closes on it.
 *
 * @param o.prompt seeds the pattern
 * @param o.aspectRatio 'W:H'
 * @param o.duration '5s' | '10s'
 * @param o.resolution '360p' | '540p' | '720p' | '1080p' (the short side)
 * @param o.outPath where the MP4 is written (atomically)
 * @param o.startFramePath optional image the video starts on
 * @param o.endFramePath optional image the video ends on
 * @param o.signal kills ffmpeg when aborted
 */
export async function renderVideo(o: {
  prompt: string;
  aspectRatio: string;
  duration: string;
  resolution: string;
  outPath: string;
  startFramePath?: string;
  endFramePath?: string;
  signal?: AbortSignal;
}): Promise<RenderedVideo> {
  const size = videoFrameSize(o.aspectRatio, o.resolution);
  const seconds = durationSecondsOf(o.duration);
  const frames = Math.round(seconds * FPS);
  const scratch: string[] = [];
  try {
    const start = o.startFramePath ? await anchorPng(o.startFramePath, size, o.outPath) : undefined;
    if (start) scratch.push(start);
    const end = o.endFramePath ? await anchorPng(o.endFramePath, size, o.outPath) : undefined;
    if (end) scratch.push(end);
    const loop = (p: string) => ['-loop', '1', '-framerate', String(FPS), '-t', String(seconds), '-i', p];
    const inputArgs: string[] = [];
    let graph: string;
    if (start && end) {
      inputArgs.push(...loop(start), ...loop(end));
      graph =
        `[0:v]format=yuv420p,setsar=1[a];[1:v]format=yuva420p,fade=t=in:st=0:d=${seconds}:alpha=1,setsar=1[b];` +
        '[a][b]overlay=format=yuv420:shortest=1,format=yuv420p[v]';
    } else {
      const pattern = await patternInput(o.prompt, size, seconds, o.outPath);
      if (pattern.scratchPath) scratch.push(pattern.scratchPath);
      inputArgs.push(...pattern.inputArgs);
      const base = `[0:v]${pattern.chain}`;
      if (start || end) {
        inputArgs.push(...loop((start ?? end)!));
        const fade = start ? 'out' : 'in';
        graph =
          `${base}[p];[1:v]format=yuva420p,fade=t=${fade}:st=0:d=${seconds}:alpha=1,setsar=1[f];` +
          '[p][f]overlay=format=yuv420:shortest=1,format=yuv420p[v]';
      } else {
        graph = `${base}[v]`;
      }
    }
    return await encodeMp4({
      inputArgs,
      filterGraph: graph,
      frames,
      outPath: o.outPath,
      what: 'video could not be rendered',
      signal: o.signal,
    });
  } finally {
    await Promise.all(scratch.map((p) => rm(p, { force: true })));
  }
}
