import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import sharp from 'sharp';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Item, type ItemLayer, newItem, stepOf } from '../../src/pipeline/item.ts';
import { COMPOSITE_FAILED, composite } from '../../src/pipeline/stages/composite.ts';
import { call, startTestEmulator, until } from '../helpers/emulator.ts';
import { patchItem } from '../helpers/item-patch.ts';

/** An RGBA image as raw bytes. */
interface Raw {
  width: number;
  height: number;
  data: Buffer;
}

function rawImage(width: number, height: number, px: (x: number, y: number) => number[]): Raw {
  const data = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set(px(x, y), (y * width + x) * 4);
  }
  return { width, height, data };
}

async function writePng(path: string, img: Raw): Promise<void> {
  await sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } })
    .png()
    .toFile(path);
}

async function readRaw(path: string): Promise<Raw> {
  const { data, info } = await sharp(path).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  expect(info.channels).toBe(4);
  return { width: info.width, height: info.height, data };
}

/** Pastes `layer` at (x, y) where its alpha is 255 (binary alpha: exact 'over'), clipped to the canvas. */
function paste(canvas: Raw, layer: Raw, x: number, y: number): void {
  for (let ly = 0; ly < layer.height; ly++) {
    for (let lx = 0; lx < layer.width; lx++) {
      const cx = x + lx;
      const cy = y + ly;
      if (cx < 0 || cy < 0 || cx >= canvas.width || cy >= canvas.height) continue;
      const src = (ly * layer.width + lx) * 4;
      if (layer.data[src + 3] !== 255) continue;
      layer.data.copy(canvas.data, (cy * canvas.width + cx) * 4, src, src + 4);
    }
  }
}

let outDir: string;
beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), 'genpipe-composite-'));
});
afterAll(async () => {
  await rm(outDir, { recursive: true, force: true });
});

/** An item whose outputs are the given layers (front to back), written under `<out>/<input>/`. */
async function stackItem(
  input: string,
  layers: { img: Raw; x: number; y: number; canvas: [number, number] | null }[],
): Promise<Item> {
  await mkdir(join(outDir, input), { recursive: true });
  const itemLayers: ItemLayer[] = [];
  for (const [index, l] of layers.entries()) {
    const rel = `${input}/layer-${index}.png`;
    await writePng(join(outDir, rel), l.img);
    itemLayers.push({
      path: rel,
      alpha_hint: index === layers.length - 1 ? 'none' : 'hard',
      description: `layer ${index}`,
      index,
      bounds: l.canvas
        ? {
            canvas_width: l.canvas[0],
            canvas_height: l.canvas[1],
            x: l.x,
            y: l.y,
            width: l.img.width,
            height: l.img.height,
          }
        : null,
    });
  }
  const item = newItem(input, join('/in', input), 1, 0);
  return patchItem(item, { state: 'downloaded', layers: itemLayers, outputs: itemLayers.map((l) => l.path) });
}

describe('composite', () => {
  it('pastes the layers back to front at (x, y) and matches the expected pixels exactly', async () => {
    const W = 9;
    const H = 7;
    const background = rawImage(W, H, (x, y) => [10 + x * 20, 200 - y * 25, (x * y * 7) % 256, 255]);
    // Front layer: 3x3, a cross of opaque red-ish pixels (corners transparent).
    const front = rawImage(3, 3, (x, y) =>
      x === 1 || y === 1 ? [250, 30 + x * 10, 40 + y * 10, 255] : [1, 2, 3, 0],
    );
    // Middle layer: 4x3, opaque blue-ish except its first column; overlaps the front layer's cross.
    const middle = rawImage(4, 3, (x, y) => (x === 0 ? [9, 9, 9, 0] : [20 + x, 40 + y, 230, 255]));
    const canvas: [number, number] = [W, H];
    const item = await stackItem('photo.jpg', [
      { img: front, x: 2, y: 1, canvas },
      { img: middle, x: 3, y: 2, canvas },
      { img: background, x: 0, y: 0, canvas },
    ]);

    const done = await composite(item, outDir);

    expect(done.state).toBe('downloaded');
    expect(done.reason).toBeNull();
    expect(stepOf(done).composite).toBe('photo.jpg/composite.png');
    const expected = rawImage(W, H, () => [0, 0, 0, 0]);
    paste(expected, background, 0, 0);
    paste(expected, middle, 3, 2);
    paste(expected, front, 2, 1);
    const got = await readRaw(join(outDir, 'photo.jpg', 'composite.png'));
    expect([got.width, got.height]).toEqual([W, H]);
    expect(got.data.equals(expected.data)).toBe(true);
    // The front layer wins where it overlaps the middle one.
    const at = (x: number, y: number) => [...got.data.subarray((y * W + x) * 4, (y * W + x) * 4 + 4)];
    expect(at(3, 2)).toEqual([250, 40, 50, 255]);
    // No scratch file is left behind.
    expect((await readdir(join(outDir, 'photo.jpg'))).filter((f) => f.includes('.part'))).toEqual([]);
  });

  it('leaves uncovered pixels transparent and clips a layer reaching past the canvas', async () => {
    const W = 6;
    const H = 4;
    const a = rawImage(3, 2, (x, y) => [100 + x, 110 + y, 120, 255]);
    const b = rawImage(4, 3, (x, y) => [30 + x, 60 + y, 90, 255]);
    const canvas: [number, number] = [W, H];
    const item = await stackItem('nested/dir/cut.png', [
      { img: a, x: 0, y: 0, canvas },
      { img: b, x: 4, y: 2, canvas }, // reaches 2 px past the right edge and 1 px past the bottom
    ]);

    const done = await composite(item, outDir);

    expect(stepOf(done).composite).toBe('nested/dir/cut.png/composite.png');
    const expected = rawImage(W, H, () => [0, 0, 0, 0]);
    paste(expected, b, 4, 2);
    paste(expected, a, 0, 0);
    const got = await readRaw(join(outDir, 'nested/dir/cut.png/composite.png'));
    expect(got.data.equals(expected.data)).toBe(true);
    expect(got.data[(0 * W + 5) * 4 + 3]).toBe(0);
    expect(got.data[(3 * W + 5) * 4 + 3]).toBe(255);
  });

  it('places layers without bounds at (0, 0) on a canvas of the largest layer', async () => {
    const bg = rawImage(4, 4, (x, y) => [x * 50, y * 50, 77, 255]);
    const fg = rawImage(2, 2, () => [255, 255, 0, 255]);
    const item = await stackItem('nobounds.png', [
      { img: fg, x: 0, y: 0, canvas: null },
      { img: bg, x: 0, y: 0, canvas: null },
    ]);
    const done = await composite(item, outDir);
    const expected = rawImage(4, 4, () => [0, 0, 0, 0]);
    paste(expected, bg, 0, 0);
    paste(expected, fg, 0, 0);
    const got = await readRaw(join(outDir, 'nobounds.png/composite.png'));
    expect(stepOf(done).composite).toBe('nobounds.png/composite.png');
    expect(got.data.equals(expected.data)).toBe(true);
  });

  it('returns an item without layers unchanged', async () => {
    const item = { ...newItem('plain.jpg', '/in/plain.jpg', 1, 0), state: 'downloaded' as const };
    expect(await composite(item, outDir)).toBe(item);
  });

  it('fails the item with a plain reason when a layer is missing or the canvases disagree', async () => {
    const img = rawImage(2, 2, () => [1, 2, 3, 255]);
    const missing = await stackItem('missing.png', [{ img, x: 0, y: 0, canvas: [2, 2] }]);
    stepOf(missing).layers!.push({
      ...stepOf(missing).layers![0]!,
      path: 'missing.png/layer-9.png',
      index: 9,
    });
    const failed = await composite(missing, outDir);
    expect(failed.state).toBe('failed');
    expect(failed.failedAt).toBe('download');
    expect(failed.reason).toBe(`${COMPOSITE_FAILED}: layer-9.png: image file not found`);
    expect(stepOf(failed).composite).toBeNull();

    const disagree = await stackItem('disagree.png', [
      { img, x: 0, y: 0, canvas: [2, 2] },
      { img, x: 0, y: 0, canvas: [3, 2] },
    ]);
    const failed2 = await composite(disagree, outDir);
    expect(failed2.state).toBe('failed');
    expect(failed2.reason).toBe(`${COMPOSITE_FAILED}: layers disagree on the canvas size (2x2 and 3x2)`);
    expect((await readdir(join(outDir, 'disagree.png'))).sort()).toEqual(['layer-0.png', 'layer-1.png']);
  });

  it('refuses a layer path outside the out dir', async () => {
    const img = rawImage(1, 1, () => [1, 2, 3, 255]);
    const item = await stackItem('escape.png', [{ img, x: 0, y: 0, canvas: [1, 1] }]);
    stepOf(item).layers![0]!.path = '../elsewhere/layer-0.png';
    const failed = await composite(item, outDir);
    expect(failed.state).toBe('failed');
    expect(failed.reason).toContain('is not inside the out dir');
  });
});

describe('composite of a layer stack made by the emulator', () => {
  it('rebuilds the source image exactly from the downloaded layers', async () => {
    const W = 32;
    const H = 24;
    const source = rawImage(W, H, (x, y) => [(x * 8) % 256, (y * 10) % 256, (x * y) % 256, 255]);
    const sourcePng = await sharp(source.data, { raw: { width: W, height: H, channels: 4 } })
      .removeAlpha()
      .png()
      .toBuffer();
    const emu = await startTestEmulator();
    try {
      const created = await call(emu, 'POST', '/v1/generations', {
        json: {
          type: 'image_edit',
          prompt: 'split into layers',
          source: { data: sourcePng.toString('base64'), media_type: 'image/png' },
        },
      });
      expect(created.status).toBe(201);
      const done = await until(async () => {
        const g = await call(emu, 'GET', `/v1/generations/${created.body.id}`);
        return g.body.state === 'completed' || g.body.state === 'failed' ? g.body : null;
      });
      expect(done.state).toBe('completed');
      const input = 'emulated/stack.png';
      await mkdir(join(outDir, input), { recursive: true });
      const layers: ItemLayer[] = [];
      for (const o of done.output) {
        const rel = `${input}/layer-${o.layer.index}.png`;
        const res = await request(o.url);
        expect(res.statusCode).toBe(200);
        await pipeline(res.body, createWriteStream(join(outDir, rel)));
        layers.push({ path: rel, ...o.layer });
      }
      expect(layers.length).toBeGreaterThanOrEqual(2);
      const item: Item = patchItem(newItem(input, '/in/x', 1, 0), { state: 'downloaded', layers });
      const result = await composite(item, outDir);
      expect(stepOf(result).composite).toBe(`${input}/composite.png`);
      const got = await readRaw(join(outDir, input, 'composite.png'));
      expect([got.width, got.height]).toEqual([W, H]);
      expect(got.data.equals(source.data)).toBe(true);
    } finally {
      await emu.close();
    }
  });
});
