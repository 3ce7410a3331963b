import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { placeSource } from '../../src/emulator/media/edit-video.ts';
import { editVideo, reframeVideo, renderVideo } from '../../src/emulator/media/render.ts';
import { probeVideo, runFfmpeg } from '../../src/media/index.ts';
import { firstFrame, makeVideo, tempDir, truncated } from './fixtures.ts';

let dir: string;
let remove: () => Promise<void>;
const at = (name: string) => join(dir, name);

beforeAll(async () => {
  ({ dir, remove } = await tempDir());
  // 1.5 s at 30 fps, 160x90: resampled to 24 fps it has 36 frames.
  await makeVideo(at('src.mp4'), { seconds: 1.5, fps: 30, width: 160, height: 90 });
});
afterAll(() => remove());

/** Mean absolute difference per RGB value of two images of one size. */
async function meanAbsDiff(a: sharp.Sharp, b: sharp.Sharp): Promise<number> {
  const [x, y] = await Promise.all([a.removeAlpha().raw().toBuffer(), b.removeAlpha().raw().toBuffer()]);
  expect(x.length).toBe(y.length);
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += Math.abs(x[i]! - y[i]!);
  return sum / x.length;
}

async function meanRgb(img: sharp.Sharp): Promise<number[]> {
  const { channels } = await img.stats();
  return channels.slice(0, 3).map((c) => c.mean);
}

describe('renderVideo', () => {
  it('writes H.264 yuv420p at exactly 24 fps: 5s → 120 frames, 16:9 360p → 640x360', async () => {
    const outPath = at('v169.mp4');
    const r = await renderVideo({
      prompt: 'waves',
      aspectRatio: '16:9',
      duration: '5s',
      resolution: '360p',
      outPath,
    });
    expect(r).toMatchObject({
      path: outPath,
      mime: 'video/mp4',
      width: 640,
      height: 360,
      durationSeconds: 5,
    });
    const p = await probeVideo(outPath);
    expect(p).toMatchObject({
      codec: 'h264',
      pixelFormat: 'yuv420p',
      fps: 24,
      frames: 120,
      width: 640,
      height: 360,
    });
    expect(p.durationSeconds).toBeCloseTo(5, 2);
    expect(p.hasAudio).toBe(false);
  });

  it('a portrait ratio puts the resolution on the short side (9:16 360p → 360x640)', async () => {
    const r = await renderVideo({
      prompt: 'a tall tower',
      aspectRatio: '9:16',
      duration: '5s',
      resolution: '360p',
      outPath: at('v916.mp4'),
    });
    expect(await probeVideo(r.path)).toMatchObject({ width: 360, height: 640, frames: 120, fps: 24 });
  });

  it('opens on the start frame and closes on the end frame', async () => {
    await sharp({
      create: { width: 64, height: 36, channels: 3, background: { r: 220, g: 30, b: 30 } },
    }).toFile(at('red.png'));
    await sharp({
      create: { width: 64, height: 36, channels: 3, background: { r: 30, g: 30, b: 220 } },
    }).toFile(at('blue.png'));
    const r = await renderVideo({
      prompt: 'red to blue',
      aspectRatio: '16:9',
      duration: '5s',
      resolution: '360p',
      outPath: at('anchors.mp4'),
      startFramePath: at('red.png'),
      endFramePath: at('blue.png'),
    });
    expect(await probeVideo(r.path)).toMatchObject({ frames: 120, width: 640, height: 360 });
    expect((await readdir(dir)).filter((f) => f.includes('anchors.mp4.'))).toEqual([]);
    const [r0, g0, b0] = await meanRgb(await firstFrame(r.path, dir));
    expect(r0! - b0!).toBeGreaterThan(120);
    expect(g0).toBeLessThan(80);
    const lastPng = at('last.png');
    await runFfmpeg(['-sseof', '-0.2', '-i', r.path, '-update', '1', lastPng]);
    const [r1, , b1] = await meanRgb(sharp(lastPng));
    expect(b1! - r1!).toBeGreaterThan(120);
  });

  it('is killed when aborted and leaves no output', async () => {
    const ac = new AbortController();
    ac.abort();
    const outPath = at('aborted.mp4');
    await expect(
      renderVideo({
        prompt: 'x',
        aspectRatio: '1:1',
        duration: '5s',
        resolution: '360p',
        outPath,
        signal: ac.signal,
      }),
    ).rejects.toMatchObject({ name: 'MediaError', code: 'aborted' });
    await expect(probeVideo(outPath)).rejects.toMatchObject({ code: 'missing' });
  });
});

describe('editVideo', () => {
  it('keeps the source duration and size, at 24 fps, with visibly changed colours', async () => {
    const r = await editVideo({ sourcePath: at('src.mp4'), prompt: 'noir', outPath: at('edit.mp4') });
    const p = await probeVideo(r.path);
    expect(p).toMatchObject({ width: 160, height: 90, fps: 24, frames: 36, codec: 'h264' });
    expect(p.durationSeconds).toBeCloseTo(1.5, 1);
    expect(r.durationSeconds).toBeCloseTo(1.5, 5);
    const diff = await meanAbsDiff(await firstFrame(at('src.mp4'), dir), await firstFrame(r.path, dir));
    expect(diff).toBeGreaterThan(25);
  });

  it('scales to a new short side when a resolution is given', async () => {
    const r = await editVideo({
      sourcePath: at('src.mp4'),
      prompt: 'x',
      resolution: '360p',
      outPath: at('edit360.mp4'),
    });
    expect(await probeVideo(r.path)).toMatchObject({ width: 640, height: 360, frames: 36 });
  });

  it('fails with a plain reason on an undecodable source', async () => {
    await truncated(at('src.mp4'), at('cut.mp4'), 0.3);
    const err = await editVideo({ sourcePath: at('cut.mp4'), prompt: 'x', outPath: at('bad.mp4') }).catch(
      (e) => e,
    );
    expect(err).toMatchObject({ name: 'MediaError', code: 'corrupt' });
    expect(err.message).toMatch(/^video could not be decoded: /);
  });
});

describe('reframeVideo', () => {
  it('changes the frame shape to the target ratio and keeps the duration', async () => {
    const r = await reframeVideo({ sourcePath: at('src.mp4'), aspectRatio: '9:16', outPath: at('rf.mp4') });
    const p = await probeVideo(r.path);
    expect(p).toMatchObject({ width: 90, height: 160, fps: 24, frames: 36 });
    expect(p.durationSeconds).toBeCloseTo(1.5, 1);
  });

  it('honours a resolution and a source position', async () => {
    const r = await reframeVideo({
      sourcePath: at('src.mp4'),
      aspectRatio: '1:1',
      resolution: '360p',
      sourcePosition: { x_norm: 0, y_norm: 0, w_norm: 0.5, h_norm: 0.5 },
      outPath: at('rfpos.mp4'),
    });
    expect(await probeVideo(r.path)).toMatchObject({ width: 360, height: 360, frames: 36 });
    // The source sits in the top-left quarter (squeezed to 180x180); the rest is the blurred, dimmed fill.
    const frame = await (await firstFrame(r.path, dir)).png().toBuffer();
    const source = await (await firstFrame(at('src.mp4'), dir))
      .resize(180, 180, { fit: 'fill' })
      .png()
      .toBuffer();
    const quarter = (left: number, top: number) =>
      sharp(frame).extract({ left, top, width: 180, height: 180 });
    const inside = await meanAbsDiff(quarter(0, 0), sharp(source));
    const outside = await meanAbsDiff(quarter(180, 180), sharp(source));
    expect(inside).toBeLessThan(20);
    expect(outside).toBeGreaterThan(inside + 20);
  });

  it('places the source: fitted and centred by default, else where the position says', () => {
    const canvas = { width: 360, height: 640 };
    expect(placeSource({ width: 640, height: 360 }, canvas)).toEqual({
      canvas,
      x: 0,
      y: 219,
      width: 360,
      height: 202,
    });
    expect(placeSource({ width: 640, height: 360 }, canvas, { x_norm: -0.5, w_norm: 2 })).toEqual({
      canvas,
      x: -180,
      y: 117,
      width: 720,
      height: 406,
    });
  });
});
