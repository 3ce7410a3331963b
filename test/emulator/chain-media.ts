/**
 * Measuring chained outputs by their pixels: decode a downloaded video's frames (or an image) to raw
 * RGB at one small size with ffmpeg / sharp, then compare them (mean absolute difference, correlation),
 * so a test can tell that a chain used the parent's media and not only its id.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { probeVideo, runFfmpeg, type VideoProbe } from '../../src/media/index.ts';
import { download } from './generations-helpers.ts';

/** The size every frame is compared at. */
export const CMP = { width: 48, height: 27 } as const;

/** A downloaded video: its probe and every frame as raw RGB at CMP size. */
export interface DecodedVideo {
  probe: VideoProbe;
  frames: Buffer[];
}

/** Downloads a video output URL and decodes all of its frames to RGB at CMP size (stretching). */
export async function decodeVideoUrl(url: string): Promise<DecodedVideo> {
  const got = await download(url);
  if (got.status !== 200) throw new Error(`download answered ${got.status}`);
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-chain-'));
  try {
    const path = join(dir, 'v.mp4');
    const raw = join(dir, 'v.rgb');
    await writeFile(path, got.bytes);
    const probe = await probeVideo(path);
    await runFfmpeg([
      '-i',
      path,
      '-vf',
      `scale=${CMP.width}:${CMP.height}:flags=area,format=rgb24`,
      '-f',
      'rawvideo',
      raw,
    ]);
    const bytes = await readFile(raw);
    const size = CMP.width * CMP.height * 3;
    const frames: Buffer[] = [];
    for (let at = 0; at + size <= bytes.length; at += size) frames.push(bytes.subarray(at, at + size));
    return { probe, frames };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Downloads an image output URL; returns its size and its pixels as RGB at `size` (cover crop). */
export async function decodeImageUrl(url: string, size: { width: number; height: number } = CMP) {
  const got = await download(url);
  if (got.status !== 200) throw new Error(`download answered ${got.status}`);
  const meta = await sharp(got.bytes).metadata();
  const rgb = await sharp(got.bytes)
    .resize(size.width, size.height, { fit: 'cover', kernel: 'linear' })
    .removeAlpha()
    .raw()
    .toBuffer();
  return { width: meta.width ?? 0, height: meta.height ?? 0, rgb };
}

/** Mean absolute difference of two equally long RGB buffers, 0..255. */
export function meanAbsDiff(a: Buffer, b: Buffer): number {
  if (a.length !== b.length) throw new Error(`buffers differ in length: ${a.length} vs ${b.length}`);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs((a[i] as number) - (b[i] as number));
  return sum / a.length;
}

/** Luma of each pixel of an RGB buffer. */
function luma(rgb: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i + 2 < rgb.length; i += 3) {
    out.push(0.299 * (rgb[i] as number) + 0.587 * (rgb[i + 1] as number) + 0.114 * (rgb[i + 2] as number));
  }
  return out;
}

/** Pearson correlation of the two images' luma, -1..1 (structure kept through a colour change). */
export function lumaCorrelation(a: Buffer, b: Buffer): number {
  const x = luma(a);
  const y = luma(b);
  const n = x.length;
  const mx = x.reduce((s, v) => s + v, 0) / n;
  const my = y.reduce((s, v) => s + v, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = (x[i] as number) - mx;
    const dy = (y[i] as number) - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return sxy / Math.sqrt(sxx * syy || 1);
}

/** First and last frame of a decoded video. */
export function firstAndLast(v: DecodedVideo): { first: Buffer; last: Buffer } {
  const first = v.frames[0];
  const last = v.frames.at(-1);
  if (!first || !last) throw new Error('the video has no frames');
  return { first, last };
}
