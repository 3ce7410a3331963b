import { readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  aspectValue,
  imageFrameSize,
  resolutionShortSide,
  videoFrameSize,
} from '../../src/emulator/media/frame-size.ts';
import { shapeMask } from '../../src/emulator/media/layer-stack.ts';
import { editImage, layerStack, type RenderedLayer, renderImage } from '../../src/emulator/media/render.ts';
import { readImageHeader } from '../../src/media/index.ts';
import { makeImage, tempDir, truncated } from './fixtures.ts';

let dir: string;
let remove: () => Promise<void>;
const at = (name: string) => join(dir, name);

beforeAll(async () => {
  ({ dir, remove } = await tempDir());
});
afterAll(() => remove());

async function rawRgb(path: string): Promise<Buffer> {
  return sharp(path).autoOrient().removeAlpha().toColourspace('srgb').raw().toBuffer();
}

describe('frame sizes', () => {
  it('images: long side 1024, short side rounded to even', () => {
    expect(imageFrameSize('16:9')).toEqual({ width: 1024, height: 576 });
    expect(imageFrameSize('9:16')).toEqual({ width: 576, height: 1024 });
    expect(imageFrameSize('1:3')).toEqual({ width: 342, height: 1024 });
    expect(imageFrameSize('3:2')).toEqual({ width: 1024, height: 682 });
    expect(imageFrameSize('1:1')).toEqual({ width: 1024, height: 1024 });
  });

  it('videos: the resolution is the short side', () => {
    expect(videoFrameSize('16:9', '720p')).toEqual({ width: 1280, height: 720 });
    expect(videoFrameSize('9:16', '720p')).toEqual({ width: 720, height: 1280 });
    expect(videoFrameSize('16:9', '360p')).toEqual({ width: 640, height: 360 });
    expect(videoFrameSize('21:9', '1080p')).toEqual({ width: 2520, height: 1080 });
    expect(videoFrameSize('3:4', '540p')).toEqual({ width: 540, height: 720 });
    expect(resolutionShortSide('4k')).toBe(2160);
    expect(resolutionShortSide('whatever')).toBe(720);
    expect(() => aspectValue('wide')).toThrow(/Expected an aspect ratio/);
  });
});

describe('renderImage', () => {
  it.each([
    ['16:9', 1024, 576],
    ['1:3', 342, 1024],
    ['9:16', 576, 1024],
    ['2:1', 1024, 512],
  ])('renders %s as a %ix%i PNG', async (aspectRatio, width, height) => {
    const outPath = at(`img-${aspectRatio.replace(':', 'x')}.png`);
    const r = await renderImage({ prompt: 'a lighthouse at dusk', aspectRatio, model: 'uni-1', outPath });
    expect(r).toEqual({ path: outPath, mime: 'image/png', width, height });
    expect(await readImageHeader(outPath)).toMatchObject({ width, height, format: 'png' });
  });

  it('is deterministic for the same inputs and differs for another prompt', async () => {
    const o = { aspectRatio: '1:1', model: 'uni-1' };
    await renderImage({ ...o, prompt: 'same', outPath: at('s1.png') });
    await renderImage({ ...o, prompt: 'same', outPath: at('s2.png') });
    await renderImage({ ...o, prompt: 'other', outPath: at('s3.png') });
    const [a, b, c] = await Promise.all(['s1.png', 's2.png', 's3.png'].map((f) => rawRgb(at(f))));
    expect(a!.equals(b!)).toBe(true);
    expect(a!.equals(c!)).toBe(false);
  });
});

describe('editImage', () => {
  beforeAll(async () => {
    await makeImage(at('src.png'), { width: 120, height: 80 });
  });

  it('keeps the source size and visibly changes the colours', async () => {
    const r = await editImage({ sourcePath: at('src.png'), prompt: 'make it blue', outPath: at('e1.png') });
    expect(r).toMatchObject({ width: 120, height: 80, mime: 'image/png' });
    const [src, out] = await Promise.all([rawRgb(at('src.png')), rawRgb(at('e1.png'))]);
    expect(out.length).toBe(src.length);
    let diff = 0;
    for (let i = 0; i < src.length; i++) diff += Math.abs(src[i]! - out[i]!);
    expect(diff / src.length).toBeGreaterThan(20);
  });

  it('cover-crops to the aspect ratio when one is given', async () => {
    const r = await editImage({
      sourcePath: at('src.png'),
      prompt: 'x',
      aspectRatio: '1:1',
      outPath: at('e2.png'),
    });
    expect(r).toMatchObject({ width: 80, height: 80 });
    expect(await readImageHeader(at('e2.png'))).toMatchObject({ width: 80, height: 80 });
    const tall = await editImage({
      sourcePath: at('src.png'),
      prompt: 'x',
      aspectRatio: '9:16',
      outPath: at('e3.png'),
    });
    expect(tall).toMatchObject({ width: 45, height: 80 });
  });

  it('tints a greyscale source', async () => {
    await makeImage(at('grey.png'), { width: 30, height: 20, grey: true });
    await editImage({ sourcePath: at('grey.png'), prompt: 'warm', outPath: at('e4.png') });
    const { channels } = await sharp(at('e4.png')).stats();
    const means = channels.slice(0, 3).map((c) => c.mean);
    expect(Math.max(...means) - Math.min(...means)).toBeGreaterThan(3);
  });

  it('fails with a plain reason on a truncated source and leaves no output', async () => {
    await makeImage(at('big.jpg'), { width: 200, height: 150 });
    await truncated(at('big.jpg'), at('cut.jpg'), 0.5);
    const err = await editImage({ sourcePath: at('cut.jpg'), prompt: 'x', outPath: at('e5.png') }).catch(
      (e) => e,
    );
    expect(err).toMatchObject({ name: 'MediaError', code: 'corrupt' });
    expect(err.message).toMatch(/^image could not be decoded: /);
    await expect(readImageHeader(at('e5.png'))).rejects.toMatchObject({ code: 'missing' });
  });
});

describe('layerStack', () => {
  async function rebuild(layers: RenderedLayer[]): Promise<Buffer> {
    const { canvas_width: width, canvas_height: height } = layers[0]!.bounds;
    return sharp({ create: { width, height, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
      .composite([...layers].reverse().map((l) => ({ input: l.path, left: l.bounds.x, top: l.bounds.y })))
      .raw()
      .toBuffer();
  }

  async function expectExactRebuild(sourcePath: string, outDir: string): Promise<RenderedLayer[]> {
    const layers = await layerStack({ sourcePath, outDir });
    const src = await rawRgb(sourcePath);
    const out = await rebuild(layers);
    expect(out.length / 4).toBe(src.length / 3);
    let mismatches = 0;
    for (let p = 0; p < src.length / 3; p++) {
      if (out[p * 4 + 3] !== 255) mismatches++;
      for (let c = 0; c < 3; c++) if (out[p * 4 + c] !== src[p * 3 + c]) mismatches++;
    }
    expect(mismatches).toBe(0);
    return layers;
  }

  it('is front to back, with an opaque background last, and rebuilds the source exactly', async () => {
    const sourcePath = at('scene.png');
    await renderImage({ prompt: 'a busy street', aspectRatio: '16:9', model: 'uni-1', outPath: sourcePath });
    const layers = await expectExactRebuild(sourcePath, at('layers'));
    expect(layers.length).toBeGreaterThanOrEqual(3);
    expect(layers.map((l) => l.index)).toEqual(layers.map((_, i) => i));
    const bg = layers.at(-1)!;
    expect(bg).toMatchObject({ alpha_hint: 'none', bounds: { x: 0, y: 0, width: 1024, height: 576 } });
    expect((await sharp(bg.path).stats()).channels[3]!.min).toBe(255);
    for (const l of layers.slice(0, -1)) {
      expect(['hard', 'soft']).toContain(l.alpha_hint);
      expect(l.description.length).toBeGreaterThan(0);
      expect(l.bounds).toMatchObject({ canvas_width: 1024, canvas_height: 576 });
      expect(await readImageHeader(l.path)).toMatchObject({
        width: l.bounds.width,
        height: l.bounds.height,
        hasAlpha: true,
      });
    }
    // Only the layer files are left in the directory (no scratch files).
    expect((await readdir(at('layers'))).sort()).toEqual(layers.map((l) => basename(l.path)).sort());
    // The background was filled in under the foreground: it differs from the source there.
    expect((await rawRgb(bg.path)).equals(await rawRgb(sourcePath))).toBe(false);
  });

  it('foreground alpha is binary and cropped tight to the visible pixels', async () => {
    const layers = await layerStack({ sourcePath: at('scene.png'), outDir: at('layers2') });
    for (const l of layers.slice(0, -1)) {
      const { data, info } = await sharp(l.path).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
      const { width: w, height: h, channels } = info;
      const alpha = (x: number, y: number) => data[(y * w + x) * channels + channels - 1]!;
      let nonBinary = 0;
      let top = false;
      let bottom = false;
      let left = false;
      let right = false;
      for (let y = 0; y < h; y++) {
        for (let x = 0; x < w; x++) {
          const a = alpha(x, y);
          if (a !== 0 && a !== 255) nonBinary++;
          if (a === 255) {
            top ||= y === 0;
            bottom ||= y === h - 1;
            left ||= x === 0;
            right ||= x === w - 1;
          }
        }
      }
      expect(nonBinary).toBe(0);
      expect([top, bottom, left, right]).toEqual([true, true, true, true]);
    }
  });

  it('rebuilds exactly for odd-sized, transparent, greyscale and tiny sources', async () => {
    await makeImage(at('odd.png'), { width: 37, height: 23, alpha: true });
    await makeImage(at('grey.jpg'), { width: 31, height: 45, grey: true });
    await makeImage(at('tiny.png'), { width: 2, height: 1 });
    await expectExactRebuild(at('odd.png'), at('l-odd'));
    await expectExactRebuild(at('grey.jpg'), at('l-grey'));
    const tiny = await expectExactRebuild(at('tiny.png'), at('l-tiny'));
    for (const l of tiny) expect(l.bounds.width * l.bounds.height).toBeGreaterThan(0);
  });

  it('shape masks are never empty', () => {
    const m = shapeMask(
      { kind: 'ellipse', cx: 0.5, cy: 0.5, rx: 0.01, ry: 0.01, alpha_hint: 'soft', description: 'dot' },
      3,
      3,
    );
    expect(m).toMatchObject({ x: 1, y: 1, width: 1, height: 1 });
    expect([...m.data]).toEqual([255]);
  });
});
