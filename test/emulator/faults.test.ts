/**
 * Fault injection on the generations resource: 502/503 before anything is queued, seeded failure codes,
 * content moderation, budget exhaustion, connection resets before and after the work, and latency.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import { call, hold, KEY, startTestEmulator, testConfig, unhold, until } from '../helpers/emulator.ts';

const IMAGE = { type: 'image', prompt: 'a green triangle', aspect_ratio: '1:1' };
const NO_RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'retry-after'];

async function terminal(emu: RunningEmulator, id: string, key = KEY) {
  return until(async () => {
    const g = await call(emu, 'GET', `/v1/generations/${id}`, { key });
    return g.body.state === 'completed' || g.body.state === 'failed' ? g.body : undefined;
  });
}

async function adminRows(emu: RunningEmulator): Promise<Array<Record<string, unknown>>> {
  return (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data;
}

describe('502 / 503 on create', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startTestEmulator();
  });
  afterEach(async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: {} });
  });
  afterAll(async () => {
    await emu.close();
  });

  it('answers 502 upstream unavailable with nothing queued and no rate-limit headers', async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { http_502: 1 } });
    const before = (await adminRows(emu)).length;
    // Faults come before validation: even a bad request gets the 502.
    for (const json of [IMAGE, { ...IMAGE, model: 'nope' }]) {
      const r = await call(emu, 'POST', '/v1/generations', { json });
      expect(r.status).toBe(502);
      expect(r.body).toEqual({ detail: 'Upstream service unavailable' });
      for (const h of NO_RATE_HEADERS) expect(r.headers[h]).toBeUndefined();
      expect(r.headers['x-request-id']).toBeTruthy();
    }
    expect((await adminRows(emu)).length).toBe(before);
  });

  it('answers 503 ingestion unavailable with nothing queued, after auth', async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { http_503: 1 } });
    const before = (await adminRows(emu)).length;
    const r = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ detail: 'Image ingestion unavailable' });
    for (const h of NO_RATE_HEADERS) expect(r.headers[h]).toBeUndefined();
    expect((await adminRows(emu)).length).toBe(before);
    const unauth = await call(emu, 'POST', '/v1/generations', { json: IMAGE, key: 'svc-api-nobody' });
    expect(unauth.status).toBe(401);
  });
});

describe('seeded failure codes', () => {
  async function outcomes(seed: number): Promise<Array<string | null>> {
    const emu = await startTestEmulator({
      seed,
      faults: { failure_codes: { rate_limited: 0.35, output_not_found: 0.35 } },
    });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 10; i++)
        ids.push((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).body.id);
      const codes: Array<string | null> = [];
      for (const id of ids) {
        const g = await terminal(emu, id);
        if (g.state === 'failed') {
          expect(g.output).toEqual([]);
          expect(typeof g.failure_reason).toBe('string');
          expect(g.failure_reason.length).toBeGreaterThan(10);
        } else {
          expect(g.output).toHaveLength(1);
          expect(g.failure_code).toBeNull();
        }
        codes.push(g.failure_code);
      }
      return codes;
    } finally {
      await emu.close();
    }
  }

  it('gives the same outcome sequence for the same seed, another for another seed', async () => {
    const first = await outcomes(42);
    const again = await outcomes(42);
    expect(again).toEqual(first);
    expect(new Set(first)).toEqual(new Set(['rate_limited', 'output_not_found', null]));
    const other = await outcomes(7);
    expect(other).not.toEqual(first);
  });
});

describe('content moderation and budget', () => {
  it('fails a prompt with a blocked word (whole word, any case) as content_moderated', async () => {
    const emu = await startTestEmulator({ blocked_words: ['Zombie'] });
    try {
      const bad = await call(emu, 'POST', '/v1/generations', {
        json: { ...IMAGE, prompt: 'a ZOMBIE at dawn' },
      });
      expect(bad.status).toBe(201);
      expect(bad.body.state).toBe('queued');
      const g = await terminal(emu, bad.body.id);
      expect(g).toMatchObject({ state: 'failed', failure_code: 'content_moderated', output: [] });
      expect(g.failure_reason).toMatch(/content guidelines/);
      const fine = await call(emu, 'POST', '/v1/generations', {
        json: { ...IMAGE, prompt: 'zombies at dawn' },
      });
      expect((await terminal(emu, fine.body.id)).failure_code).not.toBe('content_moderated');
    } finally {
      await emu.close();
    }
  });

  it('fails the late ones of several concurrent jobs with budget_exhausted when the balance runs out', async () => {
    const cfg = testConfig({ queue_ms: 50, processing_ms: { image: 50, video: 50 } });
    (cfg.clients as Array<Record<string, unknown>>)[0]!.balance = 2; // two images' worth
    const emu = await startEmulator({ config: cfg });
    try {
      // Held queued until all three are created: none is debited before the third create.
      const queued = await hold(emu, { state: 'queued' });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
        expect(r.status).toBe(201); // the balance is only debited at completion
        ids.push(r.body.id);
      }
      await unhold(emu, queued);
      const results = await Promise.all(ids.map((id) => terminal(emu, id)));
      expect(results.filter((g) => g.state === 'completed')).toHaveLength(2);
      const late = results.filter((g) => g.state === 'failed');
      expect(late).toHaveLength(1);
      expect(late[0]).toMatchObject({ failure_code: 'budget_exhausted', output: [] });
      expect(late[0].failure_reason).toMatch(/add funds/);
      const none = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
      expect(none.status).toBe(402);
    } finally {
      await emu.close();
    }
  });

  it('answers 402 with the exact detail, no headers and nothing queued when the balance is short', async () => {
    const cfg = testConfig();
    (cfg.clients as Array<Record<string, unknown>>)[0]!.balance = 0;
    (cfg.clients as Array<Record<string, unknown>>)[0]!.rpm = 2;
    const emu = await startEmulator({ config: cfg });
    try {
      const r = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
      expect(r.status).toBe(402);
      expect(r.body).toEqual({ detail: 'Insufficient balance. Please add funds to continue.' });
      for (const h of NO_RATE_HEADERS) expect(r.headers[h]).toBeUndefined();
      expect(await adminRows(emu)).toEqual([]);
      // A 402 passed both limit checks and took a slot of the request-rate window (CHOICES.rpmCountedStatuses).
      await call(emu, 'POST', '/v1/generations', { json: IMAGE });
      const third = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
      expect(third.status).toBe(429);
      expect(third.body.detail).toBe('Rate limit exceeded');
    } finally {
      await emu.close();
    }
  });
});

describe('connection resets and latency', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await startTestEmulator();
  });
  afterEach(async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: {} });
  });
  afterAll(async () => {
    await emu.close();
  });

  it('reset_before drops the connection before anything is created', async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { reset_before: 1 } });
    const before = (await adminRows(emu)).length;
    await expect(
      call(emu, 'POST', '/v1/generations', { json: IMAGE, headers: { 'x-request-id': 'lost-before' } }),
    ).rejects.toThrow();
    const rows = await adminRows(emu);
    expect(rows.length).toBe(before);
    expect(rows.some((r) => r.request_id === 'lost-before')).toBe(false);
  });

  it('reset_after creates the generation, then drops the response', async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { reset_after: 1 } });
    const resetsBefore = (await call(emu, 'GET', '/_emulator/stats', { key: null })).body.resets;
    await expect(
      call(emu, 'POST', '/v1/generations', { json: IMAGE, headers: { 'x-request-id': 'lost-after' } }),
    ).rejects.toThrow();
    const row = (await adminRows(emu)).find((r) => r.request_id === 'lost-after');
    expect(row).toMatchObject({ client_id: 'a', surface: 'agents', type: 'image' });
    // GETs are not POSTs: the caller can still find out what happened.
    const g = await call(emu, 'GET', `/v1/generations/${row!.id}`);
    expect(g.status).toBe(200);
    expect((await call(emu, 'GET', '/_emulator/stats', { key: null })).body.resets).toBe(resetsBefore + 1);
  });

  it('latency delays every agents response', async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { latency_ms: 150 } });
    const t = Date.now();
    const r = await call(emu, 'GET', '/v1/generations/00000000-0000-4000-8000-000000000000');
    expect(r.status).toBe(404);
    expect(Date.now() - t).toBeGreaterThanOrEqual(140);
  });
});
