/**
 * The legacy surface (/dream-machine/v1) over real HTTP: auth, validation, the modify lifecycle to a
 * downloadable edit of the source's duration, failure on an unreachable source, balance, and the
 * public `lumaai` client as an outside witness.
 */
import { execFile } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import LumaAI from 'lumaai';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { ffmpegPath, probeVideo } from '../../src/media/index.ts';
import {
  INSUFFICIENT_BALANCE_DETAIL,
  LEGACY_DETAILS,
  LEGACY_FAILURE_REASONS,
  validateModifyRequest,
} from '../../src/spec/index.ts';
import { call, KEY, KEY_B, startTestEmulator, until } from '../helpers/emulator.ts';

const BASE = '/dream-machine/v1';
const MODIFY = `${BASE}/generations/video/modify`;

let dir: string;
let sourcePath: string;
let sourceServer: Server;
let sourceUrl: string;
let deadUrl: string;
let emu: RunningEmulator;

function listen(server: Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function modifyBody(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    generation_type: 'modify_video',
    media: { url: sourceUrl },
    model: 'ray-flash-2',
    mode: 'flex_1',
    prompt: 'make it look like a watercolor',
    ...extra,
  };
}

async function waitTerminal(id: string, key = KEY) {
  return until(async () => {
    const r = await call(emu, 'GET', `${BASE}/generations/${id}`, { key });
    return r.body.state === 'completed' || r.body.state === 'failed' ? r : null;
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-legacy-test-'));
  sourcePath = join(dir, 'source.mp4');
  // 1 s, 640x360, 24 fps: tiny and quick to edit.
  await promisify(execFile)(ffmpegPath(), [
    ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=1:size=640x360:rate=24'],
    ...['-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', sourcePath],
  ]);
  sourceServer = createServer((req, res) => {
    if (req.url === '/source.mp4') {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': statSync(sourcePath).size });
      createReadStream(sourcePath).pipe(res);
    } else if (req.url === '/garbage.mp4') {
      res.writeHead(200, { 'content-type': 'video/mp4' }).end(Buffer.alloc(4096, 7));
    } else if (req.url === '/page.html') {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<p>not a video</p>');
    } else {
      res.writeHead(404).end();
    }
  });
  const port = await listen(sourceServer);
  sourceUrl = `http://127.0.0.1:${port}/source.mp4`;
  // A port nothing listens on: bind, note it, close.
  const dead = createServer();
  const deadPort = await listen(dead);
  await new Promise((r) => dead.close(r));
  deadUrl = `http://127.0.0.1:${deadPort}/gone.mp4`;
  emu = await startTestEmulator({
    clients: [
      { id: 'a', state: 'active', balance: 1_000_000 },
      { id: 'b', state: 'active', balance: 1_000_000 },
      { id: 'poor', state: 'active', balance: 5 },
      { id: 'once', state: 'active', balance: 10 },
      { id: 'gone', state: 'suspended' },
    ],
    keys: [
      { key: KEY, client: 'a' },
      { key: KEY_B, client: 'b' },
      { key: 'svc-api-poor', client: 'poor' },
      { key: 'svc-api-once', client: 'once' },
      { key: 'svc-api-gone', client: 'gone' },
      { key: 'svc-api-revoked', client: 'a', revoked: true },
    ],
    costs: { video_edit: 10 },
  });
});

afterAll(async () => {
  await emu?.close();
  await new Promise((r) => sourceServer?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

describe('legacy auth and headers', () => {
  it('answers 401/403 with the /v1 details', async () => {
    const cases: [string | null, number, string][] = [
      [null, 401, 'Missing or invalid API key'],
      ['not-a-svc-key', 401, 'Missing or invalid API key'],
      ['svc-api-unknown', 401, 'Invalid API key'],
      ['svc-api-revoked', 401, 'API key has been revoked'],
      ['svc-api-gone', 403, 'API client is suspended'],
    ];
    for (const [key, status, detail] of cases) {
      const r = await call(emu, 'POST', MODIFY, { key, json: modifyBody() });
      expect([r.status, r.body]).toEqual([status, { detail }]);
      const g = await call(emu, 'GET', `${BASE}/generations/00000000-0000-4000-8000-000000000000`, { key });
      expect(g.status).toBe(status);
    }
  });

  it('echoes X-Request-Id, sends no X-API-Version and no X-RateLimit headers', async () => {
    const r = await call(emu, 'POST', MODIFY, {
      json: modifyBody(),
      headers: { 'x-request-id': 'req-legacy-1' },
    });
    expect(r.status).toBe(201);
    expect(r.headers['x-request-id']).toBe('req-legacy-1');
    expect(r.headers['x-api-version']).toBeUndefined();
    expect(Object.keys(r.headers).filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
    const e = await call(emu, 'POST', MODIFY, { key: null, json: modifyBody() });
    expect(e.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('legacy validation', () => {
  it('rejects invalid bodies with the validator’s 400 detail', async () => {
    const bodies: Record<string, unknown>[] = [
      { ...modifyBody(), media: undefined },
      modifyBody({ model: 'ray-3.2' }),
      modifyBody({ mode: 'adhere_9' }),
      modifyBody({ media: { url: 'not a url' } }),
      modifyBody({ generation_type: 'video' }),
    ];
    for (const body of bodies) {
      const expected = validateModifyRequest(JSON.parse(JSON.stringify(body)));
      expect(expected.ok).toBe(false);
      const r = await call(emu, 'POST', MODIFY, { json: body });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ detail: (expected as { detail: string }).detail });
    }
  });

  it('rejects a callback_url whose host is not allowed, and a non-http one', async () => {
    const r = await call(emu, 'POST', MODIFY, {
      json: modifyBody({ callback_url: 'https://example.com/hook' }),
    });
    expect([r.status, r.body]).toEqual([
      400,
      { detail: LEGACY_DETAILS.callbackHostNotAllowed('example.com') },
    ]);
    const f = await call(emu, 'POST', MODIFY, { json: modifyBody({ callback_url: 'ftp://127.0.0.1/hook' }) });
    expect(f.status).toBe(400);
  });

  it('answers 402 when the balance cannot cover a video edit', async () => {
    const r = await call(emu, 'POST', MODIFY, { key: 'svc-api-poor', json: modifyBody() });
    expect([r.status, r.body]).toEqual([402, { detail: INSUFFICIENT_BALANCE_DETAIL }]);
  });
});

describe('legacy lifecycle', () => {
  it('goes queued → completed with a downloadable edit of the source duration', async () => {
    const created = await call(emu, 'POST', MODIFY, { json: modifyBody() });
    expect(created.status).toBe(201);
    const g = created.body;
    expect(g).toMatchObject({
      generation_type: 'video',
      state: 'queued',
      failure_reason: null,
      assets: null,
      model: 'ray-flash-2',
      request: { generation_type: 'modify_video', media: { url: sourceUrl }, mode: 'flex_1' },
    });
    expect(g.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Date.parse(g.created_at)).not.toBeNaN();
    expect(g).not.toHaveProperty('failure_code');

    const done = await waitTerminal(g.id);
    expect(done.body.state).toBe('completed');
    expect(done.body.failure_reason).toBeNull();
    expect(done.body.created_at).toBe(g.created_at);
    const videoUrl: string = done.body.assets.video;
    expect(videoUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);

    const out = join(dir, `${g.id}.mp4`);
    const res = await undiciRequest(videoUrl);
    expect(res.statusCode).toBe(200);
    await pipeline(res.body, createWriteStream(out));
    const [src, edited] = await Promise.all([probeVideo(sourcePath), probeVideo(out)]);
    expect(Math.abs(edited.durationSeconds - src.durationSeconds)).toBeLessThan(0.15);
  });

  it('fails with a failure_reason when the source is unreachable', async () => {
    const created = await call(emu, 'POST', MODIFY, { json: modifyBody({ media: { url: deadUrl } }) });
    expect(created.status).toBe(201);
    const done = await waitTerminal(created.body.id);
    expect(done.body).toMatchObject({ state: 'failed', assets: null });
    expect(done.body.failure_reason).toBe(LEGACY_FAILURE_REASONS.fetchFailed('media.url'));
    expect(done.body).not.toHaveProperty('failure_code');
  });

  it('fails when the source answers an HTTP error', async () => {
    const created = await call(emu, 'POST', MODIFY, {
      json: modifyBody({ media: { url: sourceUrl.replace('source.mp4', 'missing.mp4') } }),
    });
    const done = await waitTerminal(created.body.id);
    expect(done.body.state).toBe('failed');
    expect(done.body.failure_reason).toBe(LEGACY_FAILURE_REASONS.fetchHttp('media.url', 404));
  });

  it('fails when the source is not a video or does not decode', async () => {
    const cases: [string, string][] = [
      ['garbage.mp4', LEGACY_FAILURE_REASONS.undecodable('media.url')],
      ['page.html', LEGACY_FAILURE_REASONS.notVideo('media.url')],
    ];
    for (const [name, reason] of cases) {
      const created = await call(emu, 'POST', MODIFY, {
        json: modifyBody({ media: { url: sourceUrl.replace('source.mp4', name) } }),
      });
      const done = await waitTerminal(created.body.id);
      expect([done.body.state, done.body.failure_reason]).toEqual(['failed', reason]);
    }
  });

  it('charges at completion: a balance of exactly one edit allows one, then 402', async () => {
    const first = await call(emu, 'POST', MODIFY, { key: 'svc-api-once', json: modifyBody() });
    expect(first.status).toBe(201);
    expect((await waitTerminal(first.body.id, 'svc-api-once')).body.state).toBe('completed');
    const second = await call(emu, 'POST', MODIFY, { key: 'svc-api-once', json: modifyBody() });
    expect([second.status, second.body]).toEqual([402, { detail: INSUFFICIENT_BALANCE_DETAIL }]);
  });

  it('hides generations of other clients, unknown ids, and legacy ids on the agents GET', async () => {
    const created = await call(emu, 'POST', MODIFY, { json: modifyBody() });
    const other = await call(emu, 'GET', `${BASE}/generations/${created.body.id}`, { key: KEY_B });
    expect([other.status, other.body]).toEqual([404, { detail: 'Generation not found' }]);
    const unknown = await call(emu, 'GET', `${BASE}/generations/nope`);
    expect([unknown.status, unknown.body]).toEqual([404, { detail: 'Generation not found' }]);
    const agents = await call(emu, 'GET', `/v1/generations/${created.body.id}`);
    expect([agents.status, agents.body]).toEqual([404, { detail: 'Generation not found' }]);
    await waitTerminal(created.body.id);
  });
});

describe('lumaai client as an outside witness', () => {
  it('modifies a video and polls it to completed, unchanged', async () => {
    const client = new LumaAI({ authToken: KEY, baseURL: `${emu.url}${BASE}`, maxRetries: 0 });
    const created = await client.generations.video.modify({
      generation_type: 'modify_video',
      media: { url: sourceUrl },
      mode: 'reimagine_2',
      model: 'ray-2',
      prompt: 'neon city',
    });
    expect(created.state).toBe('queued');
    expect(created.id).toBeTypeOf('string');
    const done = await until(async () => {
      const g = await client.generations.get(created.id!);
      return g.state === 'completed' || g.state === 'failed' ? g : null;
    });
    expect(done.state).toBe('completed');
    expect(done.model).toBe('ray-2');
    expect(done.assets?.video).toMatch(/^http:\/\//);
    const head = await undiciRequest(done.assets!.video!);
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toMatch(/^video\/mp4/);
    await head.body.dump();

    await expect(
      new LumaAI({
        authToken: 'svc-api-unknown',
        baseURL: `${emu.url}${BASE}`,
        maxRetries: 0,
      }).generations.get(created.id!),
    ).rejects.toMatchObject({ status: 401 });
    await expect(client.generations.get('00000000-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(
      LumaAI.NotFoundError,
    );
  });
});
