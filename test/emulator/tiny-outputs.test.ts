/**
 * `tiny_outputs`: every output is a minimal valid file (an 8×8 PNG, a one-frame 16×16 MP4) instead of
 * a rendering, still downloadable and decodable; a chained output stays tiny but keeps what the chain
 * is about (the parent's frames, duration, the asked shape, the source's pixels).
 */

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, resolveConfig } from '../../src/emulator/index.ts';
import { probeVideo, runFfmpeg } from '../../src/media/index.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { decodeImageUrl, decodeVideoUrl, firstAndLast, meanAbsDiff } from './chain-media.ts';
import { settled, uploadInline } from './files-helpers.ts';
import { download, terminal } from './generations-helpers.ts';

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startTestEmulator({ tiny_outputs: true });
});
afterAll(async () => {
  await emu.close();
});

describe('tiny_outputs', () => {
  it('gives an image an 8×8 PNG whatever its aspect ratio', async () => {
    const created = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'image', prompt: 'a lighthouse', aspect_ratio: '16:9' },
    });
    const done = await terminal(emu, created.body.id);
    expect(done.state).toBe('completed');
    const file = await download(done.output[0].url);
    expect(file.type).toBe('image/png');
    const meta = await sharp(file.bytes).metadata();
    expect([meta.width, meta.height]).toEqual([8, 8]);
  });

  it('gives a video a one-frame 16×16 MP4', async () => {
    const created = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'video', prompt: 'waves', aspect_ratio: '16:9', video: { resolution: '360p' } },
    });
    const done = await terminal(emu, created.body.id);
    expect(done.state).toBe('completed');
    const file = await download(done.output[0].url);
    expect(file.type).toBe('video/mp4');
    const path = join(await mkdtemp(join(tmpdir(), 'genpipe-tiny-')), 'v.mp4');
    await writeFile(path, file.bytes);
    const probe = await probeVideo(path);
    expect([probe.width, probe.height]).toEqual([16, 16]);
  });
});

/** Bytes of a 64x36 one-second clip: red for its first half, blue for its second. */
async function redThenBlue(): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'genpipe-tiny-'));
  const out = join(dir, 'rb.mp4');
  try {
    const half = (c: string) => ['-f', 'lavfi', '-i', `color=c=${c}:s=64x36:r=24:d=0.5`];
    await runFfmpeg([
      ...half('red'),
      ...half('blue'),
      '-filter_complex',
      '[0:v][1:v]concat=n=2:v=1[v]',
      '-map',
      '[v]',
      '-pix_fmt',
      'yuv420p',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      out,
    ]);
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function done(json: Record<string, unknown>) {
  const created = await call(emu, 'POST', '/v1/generations', { json });
  expect(created.status, created.body?.detail).toBe(201);
  const g = await terminal(emu, created.body.id);
  expect(g.state, g.failure_reason).toBe('completed');
  return g as { id: string; output: Array<{ url: string }> };
}

describe('tiny_outputs in a chain', () => {
  const RED = Buffer.from([255, 0, 0]);
  const BLUE = Buffer.from([0, 0, 255]);
  /** How far a frame is from a solid colour, 0..255. */
  const offSolid = (frame: Buffer, rgb: Buffer) =>
    meanAbsDiff(frame, Buffer.concat(Array.from({ length: frame.length / 3 }, () => rgb)));

  it('keeps the source’s frames and duration through an edit, the parent’s frames through an extend, and the asked shape through a reframe', async () => {
    const file = (await uploadInline(emu, await redThenBlue(), { type: 'video/mp4', filename: 'rb.mp4' }))
      .body;
    expect((await settled(emu, file.id)).state).toBe('ready');

    const edit = await done({ type: 'video_edit', prompt: 'keep it', source: { file_id: file.id } });
    const edited = await decodeVideoUrl(edit.output[0]?.url ?? '');
    expect(edited.frames.length).toBe(24);
    expect(edited.probe.width).toBeGreaterThan(edited.probe.height);
    expect(offSolid(firstAndLast(edited).first, RED)).toBeLessThan(40);
    expect(offSolid(firstAndLast(edited).last, BLUE)).toBeLessThan(40);

    const forward = await done({
      type: 'video',
      prompt: 'on',
      video: { start_frame: { generation_id: edit.id } },
    });
    const reverse = await done({
      type: 'video',
      prompt: 'in',
      video: { end_frame: { generation_id: edit.id } },
    });
    expect(
      offSolid(firstAndLast(await decodeVideoUrl(forward.output[0]?.url ?? '')).first, BLUE),
    ).toBeLessThan(40);
    expect(offSolid(firstAndLast(await decodeVideoUrl(reverse.output[0]?.url ?? '')).last, RED)).toBeLessThan(
      40,
    );

    const reframe = await done({
      type: 'video_reframe',
      aspect_ratio: '9:16',
      source: { generation_id: edit.id },
    });
    const reframed = await decodeVideoUrl(reframe.output[0]?.url ?? '');
    expect(reframed.probe.height).toBeGreaterThan(reframed.probe.width);
    expect(reframed.probe.width / reframed.probe.height).toBeCloseTo(9 / 16, 1);
    expect(reframed.frames.length).toBe(24);
  });

  it('completes every step of chains of tiny generations', async () => {
    const clip = await done({ type: 'video', prompt: 'a start', video: { resolution: '360p' } });
    const on = await done({
      type: 'video',
      prompt: 'on',
      video: { start_frame: { generation_id: clip.id } },
    });
    const back = await done({
      type: 'video',
      prompt: 'back',
      video: { end_frame: { generation_id: on.id } },
    });
    const re = await done({
      type: 'video_reframe',
      aspect_ratio: '21:9',
      source: { generation_id: back.id },
    });
    const ed = await done({ type: 'video_edit', prompt: 'dusk', source: { generation_id: re.id } });
    const last = await decodeVideoUrl(ed.output[0]?.url ?? '');
    expect(last.frames.length).toBe(1);
    expect(last.probe.width / last.probe.height).toBeCloseTo(21 / 9, 0);
    // An extend keeps the shape of the video it extends.
    const wide = await done({
      type: 'video',
      prompt: 'wider',
      video: { start_frame: { generation_id: ed.id } },
    });
    const extended = await decodeVideoUrl(wide.output[0]?.url ?? '');
    expect([extended.probe.width, extended.probe.height]).toEqual([last.probe.width, last.probe.height]);

    const still = await done({ type: 'image', prompt: 'a still' });
    const edited = await done({ type: 'image_edit', prompt: 'warm', source: { generation_id: still.id } });
    await done({ type: 'video', prompt: 'go', video: { start_frame: { url: edited.output[0]?.url ?? '' } } });
  });

  it('makes an image_edit of the source’s pixels, and a video opening on an image URL', async () => {
    const halves = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#ff0000' } })
      .composite([
        {
          input: { create: { width: 32, height: 64, channels: 3, background: '#0000ff' } },
          left: 32,
          top: 0,
        },
      ])
      .png()
      .toBuffer();
    const file = (await uploadInline(emu, halves, { type: 'image/png', filename: 'halves.png' })).body;
    expect((await settled(emu, file.id)).state).toBe('ready');
    const edit = await done({ type: 'image_edit', prompt: 'the same', source: { file_id: file.id } });
    const url = edit.output[0]?.url ?? '';
    const image = await decodeImageUrl(url, { width: 8, height: 8 });
    expect([image.width, image.height]).toEqual([8, 8]);
    const left = image.rgb.subarray(0, 3);
    const right = image.rgb.subarray(7 * 3, 8 * 3);
    expect((left[0] ?? 0) - (left[2] ?? 0)).toBeGreaterThan(100);
    expect((right[2] ?? 0) - (right[0] ?? 0)).toBeGreaterThan(100);

    const video = await done({ type: 'video', prompt: 'from it', video: { start_frame: { url } } });
    const opened = firstAndLast(await decodeVideoUrl(video.output[0]?.url ?? '')).first;
    expect(meanAbsDiff(opened, (await decodeImageUrl(url)).rgb)).toBeLessThan(30);
  });
});

describe('tiny_outputs config', () => {
  it('refuses a value that is not true or false', () => {
    expect(() => resolveConfig({ tiny_outputs: 'yes' })).toThrow(/tiny_outputs/);
  });
});
