/**
 * POST /v1/generations and GET /v1/generations/{id} over real HTTP: the 201 and error bodies and headers
 * of every scenario, request ids, client isolation, and the lifecycle to real, downloadable outputs.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import { API_VERSION } from '../../src/spec/index.ts';
import { call, hold, KEY, KEY_B, startTestEmulator, testConfig, unhold, until } from '../helpers/emulator.ts';
import { download, png, terminal, tinyMp4 } from './generations-helpers.ts';

const IMAGE = { type: 'image', prompt: 'a lighthouse at dusk', aspect_ratio: '16:9' };
const RL = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const KEY_REVOKED = 'svc-api-revoked-key';
const KEY_EXPIRED = 'svc-api-expired-key';
const KEY_SUSPENDED = 'svc-api-suspended-key';
const KEY_DEACTIVATED = 'svc-api-deactivated-key';

let emu: RunningEmulator;
beforeAll(async () => {
  const base = testConfig();
  emu = await startTestEmulator({
    tiny_outputs: false,
    clients: [
      ...(base.clients as unknown[]),
      { id: 'c', state: 'suspended', rpm: 10, concurrency: 1, balance: 10 },
      { id: 'd', state: 'deactivated', rpm: 10, concurrency: 1, balance: 10 },
    ],
    keys: [
      ...(base.keys as unknown[]),
      { key: KEY_REVOKED, client: 'a', revoked: true },
      { key: KEY_EXPIRED, client: 'a', expires_at: '2001-01-01T00:00:00Z' },
      { key: KEY_SUSPENDED, client: 'c' },
      { key: KEY_DEACTIVATED, client: 'd' },
    ],
  });
});
afterAll(async () => {
  await emu.close();
});

function expectNoRateHeaders(headers: Record<string, string>) {
  for (const h of [...RL, 'retry-after']) expect(headers[h], h).toBeUndefined();
}

function expectUniversalHeaders(headers: Record<string, string>) {
  expect(headers['x-request-id']).toBeTruthy();
  expect(headers['x-api-version']).toBe(API_VERSION);
}

describe('POST /v1/generations → 201', () => {
  it('returns a queued Generation with the three rate-limit headers and the universal headers', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(UUID_RE),
      type: 'image',
      state: 'queued',
      model: 'uni-1',
      created_at: expect.any(String),
      output: [],
      failure_reason: null,
      failure_code: null,
    });
    // Made no earlier than the second the request left, no later than its answer was read.
    expect(Date.parse(r.body.created_at)).toBeGreaterThanOrEqual(before * 1000);
    expect(Date.parse(r.body.created_at)).toBeLessThanOrEqual(Date.now());
    expectUniversalHeaders(r.headers);
    expect(r.headers['x-request-id']).toMatch(UUID_RE);
    expect(r.headers['x-ratelimit-limit']).toBe('1000');
    expect(Number(r.headers['x-ratelimit-remaining'])).toBeLessThan(1000);
    const reset = Number(r.headers['x-ratelimit-reset']);
    expect(reset).toBeGreaterThanOrEqual(before + 60);
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
    expect(r.headers['retry-after']).toBeUndefined();
  });

  it('echoes the caller X-Request-Id and records it on the generation', async () => {
    const r = await call(emu, 'POST', '/v1/generations', {
      json: IMAGE,
      headers: { 'x-request-id': 'trace-abc-123' },
    });
    expect(r.status).toBe(201);
    expect(r.headers['x-request-id']).toBe('trace-abc-123');
    const rows = (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data;
    expect(rows.find((g: { id: string }) => g.id === r.body.id).request_id).toBe('trace-abc-123');
    // Every response gets its own generated id when none is sent.
    const a = await call(emu, 'GET', `/v1/generations/${r.body.id}`);
    const b = await call(emu, 'GET', `/v1/generations/${r.body.id}`);
    expect(a.headers['x-request-id']).toMatch(UUID_RE);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });
});

describe('POST /v1/generations → errors carry no rate-limit headers', () => {
  it('400 for an invalid request', async () => {
    const r = await call(emu, 'POST', '/v1/generations', { json: { ...IMAGE, model: 'uni-9' } });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ detail: 'Unknown model: uni-9' });
    expectUniversalHeaders(r.headers);
    expectNoRateHeaders(r.headers);
  });

  it('401 with each of the four details, before anything else (even an invalid body)', async () => {
    const cases: Array<[string | null, string]> = [
      [null, 'Missing or invalid API key'],
      ['not-the-prefix-key', 'Missing or invalid API key'],
      ['svc-api-nobody', 'Invalid API key'],
      [KEY_REVOKED, 'API key has been revoked'],
      [KEY_EXPIRED, 'API key has expired'],
    ];
    for (const [key, detail] of cases) {
      const r = await call(emu, 'POST', '/v1/generations', { key, json: { model: 'uni-9' } });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ detail });
      expectUniversalHeaders(r.headers);
      expectNoRateHeaders(r.headers);
      const g = await call(emu, 'GET', '/v1/generations/00000000-0000-4000-8000-000000000000', { key });
      expect(g.status).toBe(401);
    }
  });

  it('403 for a suspended or deactivated client', async () => {
    for (const [key, detail] of [
      [KEY_SUSPENDED, 'API client is suspended'],
      [KEY_DEACTIVATED, 'API client is deactivated'],
    ] as const) {
      const r = await call(emu, 'POST', '/v1/generations', { key, json: IMAGE });
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ detail });
      expectNoRateHeaders(r.headers);
    }
  });

  it('413 for an input image over 8000 px a side', async () => {
    const wide = await png(8001, 1);
    const r = await call(emu, 'POST', '/v1/generations', {
      json: { ...IMAGE, image_ref: [{ data: wide.toString('base64'), media_type: 'image/png' }] },
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({
      detail: 'image_ref[0]: image is 8001x1px but each side must be <= 8000px. Resize and try again.',
    });
    expectNoRateHeaders(r.headers);
  });

  it('422 for a rejected parameter combination and for media that cannot be processed', async () => {
    const manga = await call(emu, 'POST', '/v1/generations', {
      json: { ...IMAGE, style: 'manga', aspect_ratio: '16:9' },
    });
    expect(manga.status).toBe(422);
    expect(manga.body.detail).toBe(
      "aspect_ratio='16:9' is not allowed when style='manga'. Valid aspect_ratio: 1:2, 1:3, 2:3, 9:16",
    );
    expectNoRateHeaders(manga.headers);
    const b64 = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'image_edit', prompt: 'x', source: { data: '@@not base64@@', media_type: 'image/png' } },
    });
    expect(b64.status).toBe(422);
    expect(b64.body).toEqual({ detail: 'source: invalid base64 data' });
    expectNoRateHeaders(b64.headers);
  });

  it('400 for a body that is not JSON', async () => {
    const r = await call(emu, 'POST', '/v1/generations', {
      body: '{ nope',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(400);
    expect(r.body.detail).toBe('Request body is not valid JSON');
    expectNoRateHeaders(r.headers);
  });
});

describe('GET /v1/generations/{id}', () => {
  it('returns the Generation with only the universal headers; 404 for unknown, other client and legacy ids', async () => {
    const created = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    const g = await call(emu, 'GET', `/v1/generations/${created.body.id}`);
    expect(g.status).toBe(200);
    expect(g.body).toMatchObject({ id: created.body.id, type: 'image', model: 'uni-1' });
    expectUniversalHeaders(g.headers);
    expectNoRateHeaders(g.headers);

    const other = await call(emu, 'GET', `/v1/generations/${created.body.id}`, { key: KEY_B });
    const unknown = await call(emu, 'GET', '/v1/generations/00000000-0000-4000-8000-000000000000');
    const junk = await call(emu, 'GET', '/v1/generations/not-an-id');
    for (const r of [other, unknown, junk]) {
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ detail: 'Generation not found' });
      expectNoRateHeaders(r.headers);
    }

    // A legacy generation of the same client is not visible on the agents surface.
    const legacyId = '11111111-1111-4111-8111-111111111111';
    emu.app.emu.store.generations.set(legacyId, {
      ...emu.app.emu.store.generations.get(created.body.id)!,
      id: legacyId,
      surface: 'legacy',
    });
    expect((await call(emu, 'GET', `/v1/generations/${legacyId}`)).status).toBe(404);
    emu.app.emu.store.generations.delete(legacyId);
  });
});

describe('lifecycle to real outputs', () => {
  it('moves queued → processing → completed and serves a real image at a fresh signed URL', async () => {
    // Held processing until the test has seen that state; signed with a clock that moves only when the
    // test says so, so the first URL is valid for its download and expired after it.
    const clock = new ManualClock();
    const slow = await startEmulator({
      config: testConfig({ output_url_ttl_s: 2, tiny_outputs: false }),
      clock,
    });
    try {
      const held = await hold(slow);
      const created = await call(slow, 'POST', '/v1/generations', { json: IMAGE });
      expect(created.body.state).toBe('queued');
      await until(async () => {
        const g = await call(slow, 'GET', `/v1/generations/${created.body.id}`);
        return g.body.state === 'processing' ? g.body : undefined;
      });
      await unhold(slow, held);
      const done = await terminal(slow, created.body.id);
      expect(done).toMatchObject({ state: 'completed', failure_reason: null, failure_code: null });
      expect(done.output).toHaveLength(1);
      expect(done.output[0]).toEqual({ type: 'image', url: expect.any(String), layer: null });
      const file = await download(done.output[0].url);
      expect(file.status).toBe(200);
      expect(file.type).toMatch(/^image\//);
      const meta = await sharp(file.bytes).metadata();
      expect(meta.width! / meta.height!).toBeCloseTo(16 / 9, 1);
      // The active job was released at the terminal state.
      expect(slow.app.emu.store.clients.get('a')!.activeJobs.size).toBe(0);

      // Output URLs expire; every GET signs a fresh one.
      clock.advance(2100);
      expect((await download(done.output[0].url)).status).toBe(403);
      const again = await call(slow, 'GET', `/v1/generations/${created.body.id}`);
      expect(again.body.output[0].url).not.toBe(done.output[0].url);
      expect((await download(again.body.output[0].url)).status).toBe(200);
    } finally {
      await slow.close();
    }
  });

  it('edits an image, and splits one into layers when the prompt says "layers"', async () => {
    const source = (await png(40, 30)).toString('base64');
    const edit = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'image_edit', prompt: 'make it blue', source: { data: source, media_type: 'image/png' } },
    });
    expect(edit.status).toBe(201);
    const edited = await terminal(emu, edit.body.id);
    expect(edited.state).toBe('completed');
    expect(edited.output).toEqual([{ type: 'image', url: expect.any(String), layer: null }]);
    const meta = await sharp((await download(edited.output[0].url)).bytes).metadata();
    expect([meta.width, meta.height]).toEqual([40, 30]);

    const layered = await call(emu, 'POST', '/v1/generations', {
      json: {
        type: 'image_edit',
        prompt: 'Split it into LAYERS please',
        source: { generation_id: edit.body.id },
      },
    });
    expect(layered.status).toBe(201);
    const stack = await terminal(emu, layered.body.id);
    expect(stack.state).toBe('completed');
    expect(stack.output.length).toBeGreaterThanOrEqual(2);
    for (const o of stack.output) {
      expect(o.type).toBe('layering');
      expect(o.layer).toMatchObject({
        alpha_hint: expect.stringMatching(/^(soft|hard|none)$/),
        description: expect.any(String),
        index: expect.any(Number),
        bounds: { canvas_width: 40, canvas_height: 30 },
      });
      expect((await download(o.url)).type).toBe('image/png');
    }
    // The last layer is the opaque background.
    expect(stack.output.at(-1).layer.alpha_hint).toBe('none');
  });

  it('renders a video, edits an inline source video, reframes it and extends the first', async () => {
    const video = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'video', prompt: 'waves', aspect_ratio: '16:9', video: { resolution: '360p' } },
    });
    const clip = (await tinyMp4(1)).toString('base64');
    const edit = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'video_edit', prompt: 'make it night', source: { data: clip, media_type: 'video/mp4' } },
    });
    expect([video.status, edit.status]).toEqual([201, 201]);
    expect(edit.body.model).toBe('ray-3.2');

    const edited = await terminal(emu, edit.body.id);
    expect(edited.state).toBe('completed');
    expect(edited.output).toEqual([{ type: 'video', url: expect.any(String), layer: null }]);
    const mp4 = await download(edited.output[0].url);
    expect(mp4.type).toBe('video/mp4');
    expect(mp4.bytes.subarray(4, 8).toString('latin1')).toBe('ftyp');

    const reframe = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'video_reframe', aspect_ratio: '9:16', source: { generation_id: edit.body.id } },
    });
    expect(reframe.status).toBe(201);
    expect((await terminal(emu, reframe.body.id)).state).toBe('completed');

    const rendered = await terminal(emu, video.body.id, KEY, 60_000);
    expect(rendered.state).toBe('completed');
    const extend = await call(emu, 'POST', '/v1/generations', {
      json: {
        type: 'video',
        prompt: 'more waves',
        video: { resolution: '360p', start_frame: { generation_id: video.body.id } },
      },
    });
    expect(extend.status).toBe(201);
    const extended = await terminal(emu, extend.body.id, KEY, 60_000);
    expect(extended.state).toBe('completed');
    expect(extended.output[0].type).toBe('video');
  });
});
