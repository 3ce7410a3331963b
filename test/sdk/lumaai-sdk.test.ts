/**
 * The public `lumaai` SDK (unchanged) against a started emulator over HTTP: every one of its methods on
 * the legacy surface end to end — generations complete and their asset URLs download real media of the
 * asked kind and shape, sync images answer completed, list/delete/get agree, callbacks arrive, and the
 * SDK's error classes carry the emulator's `detail`.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import LumaAI from 'lumaai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { LEGACY_CONCEPTS, LEGACY_DETAILS } from '../../src/spec/index.ts';
import { KEY, KEY_B, startTestEmulator, until } from '../helpers/emulator.ts';
import { download, type MediaSource, probeDownload, startMediaSource } from './media-source.ts';

const BASE = '/dream-machine/v1';
let emu: RunningEmulator;
let media: MediaSource;
let client: LumaAI;
let receiver: Server;
let callbackUrl: string;
/** Callback bodies received, by generation id. */
const callbacks = new Map<
  string,
  { state: string; generation_type: string; request: Record<string, unknown> }[]
>();
/** Resolves the held response of /slow.png (a source that answers when the test says). */
let releaseSlow: () => void = () => {};
let slowRequested: Promise<void>;

type Gen = Awaited<ReturnType<LumaAI['generations']['get']>>;

async function settled(id: string): Promise<Gen> {
  return until(async () => {
    const g = await client.generations.get(id);
    return g.state === 'completed' || g.state === 'failed' ? g : null;
  });
}

async function completed(id: string): Promise<Gen> {
  const g = await settled(id);
  expect(g.failure_reason ?? null, `generation ${id} failed`).toBeNull();
  expect(g.state).toBe('completed');
  return g;
}

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (c) => {
      text += c;
    });
    req.on('end', () => resolve(JSON.parse(text)));
  });
}

beforeAll(async () => {
  media = await startMediaSource();
  let markSlow: () => void = () => {};
  slowRequested = new Promise((r) => {
    markSlow = r;
  });
  const held = new Promise<void>((r) => {
    releaseSlow = r;
  });
  receiver = createServer(async (req, res) => {
    if (req.url === '/slow.png') {
      markSlow();
      await held;
      const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#aa3300' } })
        .png()
        .toBuffer();
      return void res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    }
    const body = (await readJson(req)) as {
      id: string;
      state: string;
      generation_type: string;
      request: Record<string, unknown>;
    };
    callbacks.set(body.id, [...(callbacks.get(body.id) ?? []), body]);
    res.writeHead(204).end();
  });
  const port = await new Promise<number>((r) =>
    receiver.listen(0, '127.0.0.1', () => r((receiver.address() as AddressInfo).port)),
  );
  callbackUrl = `http://127.0.0.1:${port}/hook`;
  emu = await startTestEmulator({
    clients: [
      { id: 'a', state: 'active', balance: 123_456 },
      { id: 'b', state: 'active', balance: 1_000 },
    ],
    queue_ms: 5,
    processing_ms: { image: 20, video: 20 },
  });
  client = new LumaAI({ authToken: KEY, baseURL: `${emu.url}${BASE}`, maxRetries: 0 });
});

afterAll(async () => {
  releaseSlow();
  await emu?.close();
  await media?.close();
  await new Promise((r) => receiver?.close(r));
});

describe('lumaai against genpipe serve', () => {
  it('ping, credits (the balance in cents) and the concepts list', async () => {
    expect(await client.ping.check()).toEqual({ message: 'pong' });
    expect(await client.credits.get()).toEqual({ credit_balance: 123_456 });
    expect(await client.generations.concepts.list()).toEqual([...LEGACY_CONCEPTS]);
  });

  it('image: async photon-1 as jpg of the asked shape, with a callback per state', async () => {
    const created = await client.generations.image.create({
      model: 'photon-1',
      prompt: 'a lighthouse at dusk',
      aspect_ratio: '16:9',
      callback_url: callbackUrl,
      image_ref: [{ url: media.imageUrl, weight: 0.5 }],
    });
    expect([created.state, created.generation_type, created.model]).toEqual(['queued', 'image', 'photon-1']);
    expect(created.request).toMatchObject({ generation_type: 'image', format: 'jpg', aspect_ratio: '16:9' });
    const done = await completed(created.id!);
    const { path, type } = await download(done.assets!.image!, media.dir, 'image.jpg');
    const meta = await sharp(path).metadata();
    expect([type, meta.format]).toEqual(['image/jpeg', 'jpeg']);
    expect(meta.width! / meta.height!).toBeCloseTo(16 / 9, 1);
    await until(async () => (callbacks.get(created.id!)?.length ?? 0) >= 2);
    expect(callbacks.get(created.id!)!.map((c) => c.state)).toEqual(['dreaming', 'completed']);
    expect(callbacks.get(created.id!)![1]).toMatchObject({
      generation_type: 'image',
      request: { model: 'photon-1' },
    });
  });

  it('image: sync answers the completed photon-flash-1 png; a sync_timeout that runs out answers it as it stands', async () => {
    const done = await client.generations.image.create({
      model: 'photon-flash-1',
      prompt: 'a red square',
      aspect_ratio: '1:1',
      format: 'png',
      sync: true,
    });
    expect(done.state).toBe('completed');
    const { path } = await download(done.assets!.image!, media.dir, 'sync.png');
    const meta = await sharp(path).metadata();
    expect([meta.format, meta.width === meta.height]).toEqual(['png', true]);

    const slowUrl = callbackUrl.replace('/hook', '/slow.png');
    const pending = await client.generations.image.create({
      model: 'photon-1',
      prompt: 'an edit',
      modify_image_ref: { url: slowUrl, weight: 1 },
      sync: true,
      sync_timeout: 1,
    });
    await slowRequested;
    expect(pending.state).toBe('dreaming');
    releaseSlow();
    const later = await completed(pending.id!);
    expect(later.assets?.image).toMatch(/^http/);
  });

  it('video: text-to-video, extend and interpolate, then upscale and add audio', async () => {
    const t2v = await client.generations.create({
      model: 'ray-flash-2',
      prompt: 'waves on a beach',
      aspect_ratio: '9:16',
      resolution: '360p',
      duration: '1s',
      concepts: [{ key: 'zoom_in' }],
      callback_url: callbackUrl,
    });
    expect([t2v.state, t2v.generation_type]).toEqual(['queued', 'video']);
    const first = await completed(t2v.id!);
    const p1 = await probeDownload(first.assets!.video!, media.dir, 't2v.mp4');
    expect([p1.type, p1.width, p1.height]).toEqual(['video/mp4', 360, 640]);
    expect(p1.durationSeconds).toBeCloseTo(1, 1);
    await until(async () => (callbacks.get(t2v.id!)?.length ?? 0) >= 2);
    expect(callbacks.get(t2v.id!)!.map((c) => c.state)).toEqual(['dreaming', 'completed']);

    // image-to-video: starts on an image, ends on the first frame of the first video (interpolate).
    const i2v = await client.generations.video.create({
      model: 'ray-2',
      aspect_ratio: '4:3',
      resolution: '360p',
      duration: '1s',
      loop: false,
      keyframes: {
        frame0: { type: 'image', url: media.imageUrl },
        frame1: { type: 'generation', id: t2v.id! },
      },
    });
    const p2 = await probeDownload((await completed(i2v.id!)).assets!.video!, media.dir, 'i2v.mp4');
    expect([p2.width, p2.height]).toEqual([480, 360]);

    // extend: continues from the last frame of the first video, in its shape; a loop.
    const ext = await client.generations.create({
      model: 'ray-2',
      prompt: 'more waves',
      duration: '1s',
      loop: true,
      keyframes: { frame0: { type: 'generation', id: t2v.id! } },
    });
    const p3 = await probeDownload((await completed(ext.id!)).assets!.video!, media.dir, 'ext.mp4');
    expect([p3.width, p3.height]).toEqual([360, 640]);

    const up = await client.generations.upscale(t2v.id!, {
      generation_type: 'upscale_video',
      resolution: '1080p',
    });
    expect(up.request).toMatchObject({ generation_type: 'upscale_video', resolution: '1080p' });
    const p4 = await probeDownload((await completed(up.id!)).assets!.video!, media.dir, 'up.mp4');
    expect([p4.width, p4.height]).toEqual([1080, 1920]);

    const audio = await client.generations.audio(t2v.id!, {
      generation_type: 'add_audio',
      prompt: 'seagulls',
    });
    const p5 = await probeDownload((await completed(audio.id!)).assets!.video!, media.dir, 'audio.mp4');
    expect([p5.hasAudio, p5.width, p5.height]).toEqual([true, 360, 640]);
  });

  it('reframe an image and a video, and modify a video', async () => {
    const ri = await client.generations.image.reframe({
      generation_type: 'reframe_image',
      media: { url: media.imageUrl },
      model: 'photon-flash-1',
      aspect_ratio: '9:16',
      format: 'png',
      resized_width: 200,
      grid_position_y: 10,
    });
    expect(ri.generation_type).toBe('image');
    const { path } = await download((await completed(ri.id!)).assets!.image!, media.dir, 'ri.png');
    const meta = await sharp(path).metadata();
    expect([meta.format, meta.width]).toEqual(['png', 240]);
    expect(meta.height! / meta.width!).toBeCloseTo(16 / 9, 1);

    const rv = await client.generations.video.reframe({
      generation_type: 'reframe_video',
      media: { url: media.videoUrl },
      model: 'ray-flash-2',
      aspect_ratio: '1:1',
      callback_url: callbackUrl,
    });
    const pv = await probeDownload((await completed(rv.id!)).assets!.video!, media.dir, 'rv.mp4');
    expect([pv.width, pv.height]).toEqual([360, 360]);
    await until(async () => (callbacks.get(rv.id!)?.length ?? 0) >= 2);
    expect(
      callbacks.get(rv.id!)!.map((c) => [c.state, c.generation_type, c.request.generation_type]),
    ).toEqual([
      ['dreaming', 'video', 'reframe_video'],
      ['completed', 'video', 'reframe_video'],
    ]);

    const mod = await client.generations.video.modify({
      generation_type: 'modify_video',
      media: { url: media.videoUrl },
      model: 'ray-2',
      mode: 'flex_1',
    });
    const pm = await probeDownload((await completed(mod.id!)).assets!.video!, media.dir, 'mod.mp4');
    expect([pm.width, pm.height]).toEqual([640, 360]);
  });

  it('list is newest first with limit/offset; delete makes get a 404; another client sees none of it', async () => {
    const a = await client.generations.image.create({ model: 'photon-flash-1', prompt: 'one', sync: true });
    const b = await client.generations.image.create({ model: 'photon-flash-1', prompt: 'two', sync: true });
    const page = await client.generations.list({ limit: 2, offset: 0 });
    expect(page.generations.map((g) => g.id)).toEqual([b.id, a.id]);
    expect([page.count, page.has_more, page.limit, page.offset]).toEqual([2, true, 2, 0]);
    const next = await client.generations.list({ limit: 1, offset: 1 });
    expect(next.generations.map((g) => g.id)).toEqual([a.id]);

    const other = new LumaAI({ authToken: KEY_B, baseURL: `${emu.url}${BASE}`, maxRetries: 0 });
    expect((await other.generations.list()).generations).toEqual([]);
    await expect(other.generations.delete(b.id!)).rejects.toBeInstanceOf(LumaAI.NotFoundError);

    await client.generations.delete(b.id!);
    const err = await client.generations.get(b.id!).catch((e) => e);
    expect(err).toBeInstanceOf(LumaAI.NotFoundError);
    expect(err.error).toEqual({ detail: 'Generation not found' });
    expect((await client.generations.list({ limit: 1 })).generations.map((g) => g.id)).toEqual([a.id]);
  });

  it('error classes carry the emulator detail', async () => {
    const bad = await client.generations.create({ model: 'ray-3' as 'ray-2' }).catch((e) => e);
    expect(bad).toBeInstanceOf(LumaAI.BadRequestError);
    expect(bad.error).toEqual({
      detail: "Expected one of 'ray-2', 'ray-flash-2' for model but received 'ray-3'",
    });

    const concept = await client.generations
      .create({ model: 'ray-2', concepts: [{ key: 'moonwalk' }] })
      .catch((e) => e);
    expect(concept).toBeInstanceOf(LumaAI.BadRequestError);
    expect(concept.error.detail).toMatch(/^Unknown concept 'moonwalk' for concepts\[0\]\.key/);

    const hook = await client.generations.image
      .create({ model: 'photon-1', callback_url: 'http://example.invalid/hook' })
      .catch((e) => e);
    expect(hook.error).toEqual({ detail: LEGACY_DETAILS.callbackHostNotAllowed('example.invalid') });

    const noKey = new LumaAI({ authToken: 'svc-api-unknown', baseURL: `${emu.url}${BASE}`, maxRetries: 0 });
    const auth = await noKey.credits.get().catch((e) => e);
    expect(auth).toBeInstanceOf(LumaAI.AuthenticationError);
    expect(typeof auth.error.detail).toBe('string');

    const missing = await client.generations
      .upscale('00000000-0000-4000-8000-000000000000', {})
      .catch((e) => e);
    expect(missing).toBeInstanceOf(LumaAI.NotFoundError);

    const ghost = '00000000-0000-4000-8000-000000000000';
    const frame = await client.generations
      .create({ model: 'ray-2', keyframes: { frame0: { type: 'generation', id: ghost } } })
      .catch((e) => e);
    expect(frame).toBeInstanceOf(LumaAI.BadRequestError);
    expect(frame.error).toEqual({ detail: `keyframes.frame0.id: generation '${ghost}' not found` });

    const still = await client.generations.image.create({
      model: 'photon-flash-1',
      prompt: 'still',
      sync: true,
    });
    const notVideo = await client.generations.upscale(still.id!, {}).catch((e) => e);
    expect(notVideo).toBeInstanceOf(LumaAI.BadRequestError);
    expect(notVideo.error).toEqual({ detail: `generation '${still.id}' is not a video generation` });
  });

  it('a reference that cannot be fetched fails the generation with a reason naming the field', async () => {
    const created = await client.generations.image.create({
      model: 'photon-1',
      prompt: 'x',
      style_ref: [{ url: media.imageUrl.replace('source.png', 'missing.png'), weight: 0.8 }],
      callback_url: callbackUrl,
    });
    const done = await settled(created.id!);
    expect([done.state, done.failure_reason, done.assets]).toEqual([
      'failed',
      'style_ref[0].url: failed to fetch URL (HTTP 404)',
      null,
    ]);
    await until(async () => (callbacks.get(created.id!)?.length ?? 0) >= 2);
    expect(callbacks.get(created.id!)!.map((c) => c.state)).toEqual(['dreaming', 'failed']);
  });
});
