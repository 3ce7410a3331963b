/**
 * Request-rate window, concurrent-job ceiling, rate backend down and the GET abuse ceiling, over real
 * HTTP. Header math and waits for a window to turn run against an injected clock; concurrent jobs are
 * held queued until the test lets them go.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import {
  agedOutCount,
  decideRate,
  liveEntries,
  RATE_HEADERS,
  retryAfterSeconds,
} from '../../src/spec/index.ts';
import { call, heldGenerations, hold, KEY_B, release, testConfig, until } from '../helpers/emulator.ts';

const IMAGE = { type: 'image', prompt: 'a red square', aspect_ratio: '1:1' };
const RL = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'];

let emu: RunningEmulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

function rl(headers: Record<string, string>) {
  return {
    limit: headers['x-ratelimit-limit'],
    remaining: headers['x-ratelimit-remaining'],
    reset: headers['x-ratelimit-reset'],
    retryAfter: headers['retry-after'],
  };
}

describe('sliding-window math (src/spec/rate-limit)', () => {
  it('ages an entry out exactly one window after it was made', () => {
    expect(agedOutCount([0, 30_000], 59_999, 60)).toBe(0);
    expect(agedOutCount([0, 30_000], 60_000, 60)).toBe(1);
    expect(liveEntries([0, 30_000, 45_000], 90_000, 60)).toEqual([45_000]);
  });

  it('gives Retry-After = ceil(oldest + window - now), at least 1', () => {
    expect(retryAfterSeconds(0, 15_000, 60)).toBe(45);
    expect(retryAfterSeconds(0, 15_001, 60)).toBe(45);
    expect(retryAfterSeconds(0, 59_999, 60)).toBe(1);
    expect(retryAfterSeconds(0, 60_000, 60)).toBe(1);
  });

  it('decides allowed with remaining and reset = now + window (rounded up to seconds)', () => {
    expect(decideRate([], 500, 2, 60)).toEqual({ allowed: true, remaining: 1, reset: 61 });
    expect(decideRate([0, 10_000], 15_000, 2, 60)).toEqual({
      allowed: false,
      remaining: 0,
      reset: 60,
      retryAfter: 45,
    });
    expect(RATE_HEADERS.retryAfter).toBe('Retry-After');
  });
});

describe('request rate on POST /v1/generations (injected clock)', () => {
  it('counts creates in a sliding window with exact headers, Retry-After and Reset', async () => {
    const t0 = 1_800_000_000_500; // half a second past a whole second
    const clock = new ManualClock(t0);
    const cfg = testConfig({ rate_window_s: 60 });
    (cfg.clients as Array<Record<string, unknown>>)[0]!.rpm = 2;
    emu = await startEmulator({ config: cfg, clock });

    const first = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(first.status).toBe(201);
    expect(rl(first.headers)).toEqual({
      limit: '2',
      remaining: '1',
      reset: String(Math.ceil((t0 + 60_000) / 1000)),
      retryAfter: undefined,
    });

    clock.advance(10_000);
    const second = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(second.status).toBe(201);
    expect(second.headers['x-ratelimit-remaining']).toBe('0');
    expect(second.headers['x-ratelimit-reset']).toBe(String(Math.ceil((t0 + 70_000) / 1000)));

    clock.advance(5_000); // now = t0 + 15 s; the oldest (t0) ages out at t0 + 60 s
    const limited = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ detail: 'Rate limit exceeded' });
    expect(rl(limited.headers)).toEqual({
      limit: '2',
      remaining: '0',
      reset: String(Math.ceil((t0 + 60_000) / 1000)),
      retryAfter: '45',
    });

    // A 429 is not counted: the next one still waits for the same oldest request.
    clock.advance(44_999);
    const stillLimited = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(stillLimited.status).toBe(429);
    expect(stillLimited.headers['retry-after']).toBe('1');

    clock.advance(1); // exactly t0 + 60 s: the first create has aged out
    const third = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(third.status).toBe(201);
    expect(third.headers['x-ratelimit-remaining']).toBe('0');

    // Remaining rises as requests age out (rule 3): at t0 + 70 s only the third is in the window.
    clock.advance(10_000);
    const fourth = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(fourth.status).toBe(201);
    expect(fourth.headers['x-ratelimit-remaining']).toBe('0');
    clock.advance(60_000);
    const fifth = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(fifth.headers['x-ratelimit-remaining']).toBe('1');

    // Rejected validation does not consume the window (CHOICES.rpmCountedStatuses).
    clock.advance(60_000);
    for (let i = 0; i < 3; i++) {
      const bad = await call(emu, 'POST', '/v1/generations', { json: { ...IMAGE, model: 'nope' } });
      expect(bad.status).toBe(400);
      for (const h of [...RL, 'retry-after']) expect(bad.headers[h]).toBeUndefined();
    }
    const afterBad = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(afterBad.headers['x-ratelimit-remaining']).toBe('1');
  });

  it('keeps one bucket per client', async () => {
    const clock = new ManualClock(1_800_000_000_000);
    const cfg = testConfig();
    (cfg.clients as Array<Record<string, unknown>>)[0]!.rpm = 1;
    emu = await startEmulator({ config: cfg, clock });
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(201);
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(429);
    const b = await call(emu, 'POST', '/v1/generations', { json: IMAGE, key: KEY_B });
    expect(b.status).toBe(201);
    expect(b.headers['x-ratelimit-limit']).toBe('1000');
  });
});

describe('request rate with a short window', () => {
  it('lets the caller in again after waiting Retry-After seconds', async () => {
    // The clock moves only when the test waits: the second create is inside the 1 s window however
    // long the first took.
    const clock = new ManualClock();
    const cfg = testConfig({ rate_window_s: 1 });
    (cfg.clients as Array<Record<string, unknown>>)[0]!.rpm = 1;
    emu = await startEmulator({ config: cfg, clock });
    const before = clock.now();
    const ok = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(ok.status).toBe(201);
    const reset = Number(ok.headers['x-ratelimit-reset']);
    expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 1000) / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil((clock.now() + 1000) / 1000));
    const limited = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('1');
    clock.advance(Number(limited.headers['retry-after']) * 1000);
    const again = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(again.status).toBe(201);
  });
});

describe('concurrent jobs', () => {
  it('rejects the job over the ceiling with only Retry-After: 60 and frees the slot at a terminal state', async () => {
    const cfg = testConfig({ processing_ms: { image: 50, video: 50 } });
    (cfg.clients as Array<Record<string, unknown>>)[0]!.concurrency = 2;
    emu = await startEmulator({ config: cfg });
    // Both jobs stay queued until the test lets the first go: the third create meets two running.
    await hold(emu, { state: 'queued' });
    const a = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    const b = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(b.headers['x-ratelimit-remaining']).toBe('998');
    const c = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(c.status).toBe(429);
    expect(c.body).toEqual({ detail: 'Too many concurrent jobs' });
    expect(c.headers['retry-after']).toBe('60');
    for (const h of RL) expect(c.headers[h]).toBeUndefined();
    // The concurrency 429 took no slot of the request-rate window.
    await heldGenerations(emu, 2);
    await release(emu, a.body.id);
    await until(async () => {
      const g = await call(emu!, 'GET', `/v1/generations/${a.body.id}`);
      return ['completed', 'failed'].includes(g.body.state);
    });
    const d = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(d.status).toBe(201);
    expect(d.headers['x-ratelimit-remaining']).toBe('997');
    const stats = await call(emu, 'GET', '/_emulator/stats', { key: null });
    expect(stats.body.rate_limited.concurrency).toBe(1);
  });

  it('prunes active jobs tracked for an hour', async () => {
    const clock = new ManualClock(1_800_000_000_000);
    const cfg = testConfig();
    (cfg.clients as Array<Record<string, unknown>>)[0]!.concurrency = 1;
    emu = await startEmulator({ config: cfg, clock });
    await hold(emu, { state: 'queued' }); // the job never ends by itself
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(201);
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(429);
    clock.advance(3600 * 1000);
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(201);
  });
});

describe('rate-limiting backend down', () => {
  it('lets creates through without X-RateLimit headers and without counting them', async () => {
    const cfg = testConfig({ faults: { rate_backend_down: 1 } });
    (cfg.clients as Array<Record<string, unknown>>)[0]!.rpm = 1;
    emu = await startEmulator({ config: cfg });
    for (let i = 0; i < 3; i++) {
      const r = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
      expect(r.status).toBe(201);
      for (const h of RL) expect(r.headers[h]).toBeUndefined();
    }
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: {} });
    const back = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect(back.status).toBe(201);
    expect(back.headers['x-ratelimit-remaining']).toBe('0');
  });
});

describe('API-wide abuse ceiling on the GETs of the agents surface', () => {
  it('answers 429 with only Retry-After past the ceiling; creates are not affected', async () => {
    const clock = new ManualClock(1_800_000_000_000);
    emu = await startEmulator({ config: testConfig({ abuse_ceiling: 3, rate_window_s: 10 }), clock });
    const created = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    const path = `/v1/generations/${created.body.id}`;
    for (let i = 0; i < 3; i++) {
      const g = await call(emu, 'GET', path);
      expect(g.status).toBe(200);
      for (const h of [...RL, 'retry-after']) expect(g.headers[h]).toBeUndefined();
      clock.advance(1000);
    }
    const over = await call(emu, 'GET', path);
    expect(over.status).toBe(429);
    expect(over.body.detail).toBe('Too many requests');
    expect(over.headers['retry-after']).toBe('7');
    for (const h of RL) expect(over.headers[h]).toBeUndefined();
    // Another client has its own allowance.
    expect((await call(emu, 'GET', path, { key: KEY_B })).status).toBe(404);
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(201);
    clock.advance(7000);
    expect((await call(emu, 'GET', path)).status).toBe(200);
    const stats = await call(emu, 'GET', '/_emulator/stats', { key: null });
    expect(stats.body.rate_limited.abuse).toBe(1);
  });

  it('counts every GET of the agents surface of a client: the file list and a file too', async () => {
    const clock = new ManualClock(1_800_000_000_000);
    emu = await startEmulator({ config: testConfig({ abuse_ceiling: 3, rate_window_s: 10 }), clock });
    const created = await call(emu, 'POST', '/v1/generations', { json: IMAGE });
    expect((await call(emu, 'GET', '/v1/files')).status).toBe(200);
    expect((await call(emu, 'GET', '/v1/files/3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e')).status).toBe(404);
    expect((await call(emu, 'GET', `/v1/generations/${created.body.id}`)).status).toBe(200);
    for (const path of ['/v1/files', `/v1/generations/${created.body.id}`]) {
      const over = await call(emu, 'GET', path);
      expect(over.status, path).toBe(429);
      expect(over.body.detail).toBe('Too many requests');
    }
    // Another client has its own allowance; a legacy GET is another surface's.
    expect((await call(emu, 'GET', '/v1/files', { key: KEY_B })).status).toBe(200);
    const stats = await call(emu, 'GET', '/_emulator/stats', { key: null });
    expect(stats.body.rate_limited.abuse).toBe(2);
  });
});
