/**
 * The legacy surface through the client: modifyVideo's local check, a modify run to completion with
 * its callbacks caught (and their signatures checked) by the client's callback receiver, a failing
 * source observed through get/wait and callbacks, and the receiver's refusals and de-duplication.
 */
import { execFile } from 'node:child_process';
import { createReadStream, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CallbackReceiver,
  GenerationFailedError,
  type GenpipeClient,
  type LegacyCallback,
  NotFoundError,
  PreflightError,
  startCallbackReceiver,
} from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { ffmpegPath } from '../../src/media/index.ts';
import {
  LEGACY_CHOICES,
  LEGACY_CONCEPTS,
  validateImageRequest,
  validateModifyRequest,
} from '../../src/spec/index.ts';
import { clientFor, KEY, startTestEmulator, stats, until } from './client-helpers.ts';

let dir: string;
let emu: RunningEmulator;
let client: GenpipeClient;
let receiver: CallbackReceiver;
let media: Server;
let mediaBase: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-client-legacy-'));
  const source = join(dir, 'source.mp4');
  await promisify(execFile)(ffmpegPath(), [
    ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=1:size=160x90:rate=12'],
    ...['-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', source],
  ]);
  media = createServer((req, res) => {
    if (req.url === '/source.mp4') {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': statSync(source).size });
      createReadStream(source).pipe(res);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => media.listen(0, '127.0.0.1', () => r()));
  mediaBase = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
  emu = await startTestEmulator();
  client = clientFor(emu);
  receiver = await startCallbackReceiver({ signingKey: KEY });
});

afterAll(async () => {
  await receiver.close();
  await client.close();
  await emu.close();
  await new Promise((r) => media.close(r));
  await rm(dir, { recursive: true, force: true });
});

function callbacksOf(id: string): LegacyCallback[] {
  return receiver.received.filter((c) => c.generation.id === id);
}

describe('legacy modifyVideo', () => {
  it('rejects locally what the service would reject, with its detail', async () => {
    const bad = { media: { url: `${mediaBase}/source.mp4` }, model: 'ray-2', mode: 'wild_9' } as const;
    const expected = validateModifyRequest(bad);
    expect(expected.ok).toBe(false);
    const before = (await stats(emu)).responses;
    const err = await client.legacy.modifyVideo(bad as never).catch((e) => e);
    expect(err).toBeInstanceOf(PreflightError);
    expect(err).toMatchObject({ status: 400, detail: (expected as { detail: string }).detail });
    expect((await stats(emu)).responses).toEqual({ ...before, 200: (before['200'] ?? 0) + 1 });
  });

  it('runs a modify to completion; the receiver gets signed dreaming and completed callbacks', async () => {
    const gen = await client.legacy.modifyVideo(
      {
        media: { url: `${mediaBase}/source.mp4` },
        model: 'ray-flash-2',
        mode: 'flex_1',
        prompt: 'watercolor',
        callback_url: `${receiver.url}/hooks/done`,
      },
      { requestId: 'legacy-modify-1' },
    );
    expect(gen.state).toBe('queued');
    const done = await client.legacy.wait(gen.id);
    expect(done.state).toBe('completed');
    expect(done.assets?.video).toMatch(/^http/);
    const cbs = await until(async () => {
      const got = callbacksOf(gen.id);
      return got.some((c) => c.generation.state === 'completed') ? got : null;
    });
    expect(cbs.map((c) => c.generation.state)).toEqual(['dreaming', 'completed']);
    for (const cb of cbs) {
      expect(cb).toMatchObject({
        verified: true,
        path: '/hooks/done',
        requestId: 'legacy-modify-1',
        attempt: 1,
      });
    }
    expect((await client.legacy.get(gen.id)).state).toBe('completed');
  });

  it('a source that cannot be fetched fails: wait throws, the callbacks say failed', async () => {
    const gen = await client.legacy.modifyVideo({
      media: { url: `${mediaBase}/missing.mp4` },
      model: 'ray-2',
      mode: 'adhere_1',
      callback_url: `${receiver.url}/hooks/failed`,
    });
    const err = await client.legacy.wait(gen.id).catch((e) => e);
    expect(err).toBeInstanceOf(GenerationFailedError);
    expect(err).toMatchObject({ retryable: false, failureCode: null });
    expect(err.failureReason).toContain('media.url');
    const cbs = await until(async () => {
      const got = callbacksOf(gen.id);
      return got.some((c) => c.generation.state === 'failed') ? got : null;
    });
    expect(cbs.at(-1)?.generation.failure_reason).toBe(err.failureReason);
  });
});

describe('callback receiver', () => {
  it('refuses a bad signature, and emits a repeated delivery once', async () => {
    const r = await startCallbackReceiver({ signingKey: 'svc-api-some-key' });
    const events: LegacyCallback[] = [];
    const iterating = (async () => {
      for await (const cb of r) events.push(cb);
    })();
    const body = JSON.stringify({ id: 'g-1', state: 'completed', assets: {} });
    const t = Math.floor(Date.now() / 1000);
    const { createHmac } = await import('node:crypto');
    const good = `t=${t},v1=${createHmac('sha256', 'svc-api-some-key').update(`${t}.${body}`).digest('hex')}`;
    const post = async (signature: string) =>
      (
        await request(`${r.url}/cb`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            [LEGACY_CHOICES.callback.signatureHeader]: signature,
          },
          body,
        })
      ).statusCode;
    expect(await post('t=1,v1=00')).toBe(401);
    expect(await post(good)).toBe(204);
    expect(await post(good)).toBe(204);
    await r.close();
    await iterating;
    expect(events.map((e) => e.generation.id)).toEqual(['g-1']);
    expect(r.received).toHaveLength(1);
  });
});

describe('legacy creates beyond modify', () => {
  it('a bad create is refused locally with the spec detail; nothing is sent', async () => {
    const bad = { prompt: 'x', format: 'gif' };
    const expected = validateImageRequest(bad);
    expect(expected.ok).toBe(false);
    const before = (await stats(emu)).responses;
    const err = await client.legacy.createImage(bad as never).catch((e) => e);
    expect(err).toBeInstanceOf(PreflightError);
    expect(err).toMatchObject({ status: 400, detail: (expected as { detail: string }).detail });
    const upscale = await client.legacy
      .upscale('0f0e7a52-1111-4222-8333-444455556666', { resolution: 4 } as never)
      .catch((e) => e);
    expect(upscale).toBeInstanceOf(PreflightError);
    expect((await stats(emu)).responses).toEqual({ ...before, 200: (before['200'] ?? 0) + 1 });
  });

  it('image (sync), reframe image, video, upscale and add audio complete; list and delete agree', async () => {
    const image = await client.legacy.createImage({ prompt: 'a red fox', format: 'png', sync: true });
    const doneImage = image.state === 'completed' ? image : await client.legacy.wait(image.id);
    expect(doneImage.assets?.image).toMatch(/^http/);
    const reframed = await client.legacy.reframeImage({
      media: { url: doneImage.assets!.image! },
      aspect_ratio: '9:16',
      model: 'photon-flash-1',
    });
    expect((await client.legacy.wait(reframed.id)).assets?.image).toMatch(/^http/);
    const video = await client.legacy.wait(
      (await client.legacy.createVideo({ prompt: 'a lighthouse', resolution: '360p', duration: '1s' })).id,
    );
    expect(video.assets?.video).toMatch(/^http/);
    const upscaled = await client.legacy.wait(
      (await client.legacy.upscale(video.id, { resolution: '540p' })).id,
    );
    expect(upscaled.request).toMatchObject({ generation_type: 'upscale_video', resolution: '540p' });
    const voiced = await client.legacy.wait((await client.legacy.addAudio(video.id, { prompt: 'waves' })).id);
    expect(voiced.assets?.video).toMatch(/^http/);

    const page = await client.legacy.list({ limit: 3 });
    expect(page.generations.map((g) => g.id)).toEqual([voiced.id, upscaled.id, video.id]);
    expect(page).toMatchObject({ count: 3, has_more: true, limit: 3, offset: 0 });
    await client.legacy.delete(voiced.id);
    expect((await client.legacy.list({ limit: 1 })).generations[0]?.id).toBe(upscaled.id);
    expect(await client.legacy.get(voiced.id).catch((e) => e)).toBeInstanceOf(NotFoundError);
    expect(await client.legacy.concepts()).toEqual([...LEGACY_CONCEPTS]);
    expect(await client.legacy.ping()).toEqual({ message: 'pong' });
    expect((await client.legacy.credits()).credit_balance).toBeGreaterThan(0);
  });
});

describe('legacy createImage with sync', () => {
  it('waits for the answer as long as sync_timeout asks, beyond the client timeout of an ordinary call', async () => {
    const slow = await startTestEmulator({ processing_ms: { image: 1500, video: 100 } });
    const impatient = clientFor(slow, { timeoutMs: 400 });
    try {
      const g = await impatient.legacy.createImage({ prompt: 'a slow fox', sync: true, sync_timeout: 20 });
      expect(g.state).toBe('completed');
      expect(g.assets?.image).toMatch(/^http/);
    } finally {
      await impatient.close();
      await slow.close();
    }
  });
});
