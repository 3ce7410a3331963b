/**
 * Minimal valid outputs for `tiny_outputs` (emulator config): an 8×8 PNG and a one-frame 16×16 MP4,
 * each made once per process and copied for every output, so a bench of the client side does not
 * spend the machine on rendering.
 */
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
import { encodeMp4 } from './encode.ts';

let tinyPng: Promise<Buffer> | null = null;
let tinyMp4: Promise<string> | null = null;

function pngBytes(): Promise<Buffer> {
  tinyPng ??= sharp({ create: { width: 8, height: 8, channels: 3, background: { r: 90, g: 120, b: 160 } } })
    .png()
    .toBuffer();
  return tinyPng;
}

function mp4File(): Promise<string> {
  tinyMp4 ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), 'genpipe-emulator-tiny-'));
    const out = await encodeMp4({
      inputArgs: ['-f', 'lavfi', '-i', 'color=c=gray:s=16x16:r=24'],
      filterGraph: '[0:v]null[v]',
      frames: 1,
      outPath: join(dir, 'tiny.mp4'),
      what: 'tiny video could not be made',
    });
    return out.path;
  })();
  return tinyMp4;
}

/** Writes the tiny PNG to `outPath`. */
export async function writeTinyPng(outPath: string): Promise<{ path: string; mime: string }> {
  await mkdir(dirname(outPath), { recursive: true });
  await writeFile(outPath, await pngBytes());
  return { path: outPath, mime: 'image/png' };
}

/** Copies the tiny MP4 to `outPath`. */
export async function writeTinyMp4(outPath: string): Promise<{ path: string; mime: string }> {
  await mkdir(dirname(outPath), { recursive: true });
  await copyFile(await mp4File(), outPath);
  return { path: outPath, mime: 'video/mp4' };
}
