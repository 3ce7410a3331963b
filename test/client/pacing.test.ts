/**
 * The request-rate pacer against an emulator with a short window (5 creates per 1 s): a burst of
 * creates finishes with zero 429s close to the ideal schedule; an RPM 429 caused by someone else is
 * honoured (one 429, then nothing until Retry-After); and foreign use of the same key, read from
 * X-RateLimit-Remaining, is paced around without a 429.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type GenpipeClient, Pacer } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { clientFor, KEY, startTestEmulator, stats } from './client-helpers.ts';

const LIMIT = 5;
const WINDOW_MS = 1000;
/** Moderated at once after processing: no rendering, so many creates stay cheap. */
const CHEAP = { type: 'image', prompt: 'a paced triangle', aspect_ratio: '1:1' } as const;

let emu: RunningEmulator | null = null;
const clients: GenpipeClient[] = [];

async function start(): Promise<RunningEmulator> {
  emu = await startTestEmulator({
    clients: [{ id: 'a', rpm: LIMIT, concurrency: 100 }],
    keys: [{ key: KEY, client: 'a' }],
    rate_window_s: WINDOW_MS / 1000,
    blocked_words: ['paced'],
  });
  return emu;
}

function paced(e: RunningEmulator): GenpipeClient {
  const c = clientFor(e, { rateWindowMs: WINDOW_MS });
  clients.push(c);
  return c;
}

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await emu?.close();
  emu = null;
});

describe('pacing', () => {
  it('20 creates against 5 per second: zero 429s, wall time within 1.1x of the ideal schedule', async () => {
    const e = await start();
    const client = paced(e);
    const n = 20;
    const started = Date.now();
    const created = await Promise.all(Array.from({ length: n }, () => client.generations.create(CHEAP)));
    const wall = Date.now() - started;
    expect(new Set(created.map((g) => g.id)).size).toBe(n);
    const s = await stats(e);
    expect(s.rate_limited.rpm).toBe(0);
    expect(s.responses['429']).toBeUndefined();
    expect(client.pacer.limit).toBe(LIMIT);
    // Ideal: batches of 5 at 0, 1, 2 and 3 s.
    const ideal = (Math.ceil(n / LIMIT) - 1) * WINDOW_MS;
    expect(wall).toBeGreaterThanOrEqual(ideal);
    expect(wall).toBeLessThanOrEqual(ideal * 1.1);
  });

  it('honours the Retry-After of an RPM 429 caused by another process, then sends without 429s', async () => {
    const e = await start();
    const other = paced(e);
    await Promise.all(Array.from({ length: LIMIT }, () => other.generations.create(CHEAP)));
    const client = paced(e);
    const started = Date.now();
    const mine = await Promise.all(Array.from({ length: 3 }, () => client.generations.create(CHEAP)));
    const elapsed = Date.now() - started;
    expect(mine).toHaveLength(3);
    // Only the first (probing) create met the full window; the others waited for its Retry-After.
    expect((await stats(e)).rate_limited.rpm).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(WINDOW_MS - 100);
    expect(elapsed).toBeLessThan(WINDOW_MS * 2.5);
  });

  it('paces around foreign use of the same key read from X-RateLimit-Remaining: no 429', async () => {
    const e = await start();
    const other = paced(e);
    await Promise.all(Array.from({ length: 3 }, () => other.generations.create(CHEAP)));
    const client = paced(e);
    const started = Date.now();
    // 3 of 5 are taken by the other client: 2 go now, 2 wait for the window to turn.
    await Promise.all(Array.from({ length: 4 }, () => client.generations.create(CHEAP)));
    const elapsed = Date.now() - started;
    expect((await stats(e)).rate_limited.rpm).toBe(0);
    expect(elapsed).toBeGreaterThanOrEqual(WINDOW_MS - 100);
  });

  it('does not take its own entry, aged out while an answer travelled, for foreign use', async () => {
    // limit 2 per 1000 ms, a fake clock. Two creates answered at t=10 and t=30 (counted by the service a
    // little earlier). At t=1015 the first slot is free again; the service checks that create at ~1017,
    // still counting the t=30 entry, and answers Remaining 0, which arrives at t=1035, when the pacer's
    // own log has just dropped that entry. It is not somebody else's create: the next slot is free.
    let now = 0;
    const pacer = new Pacer({ windowMs: 1000, limit: 2, now: () => now });
    const headers = (remaining: number) => ({
      'x-ratelimit-limit': '2',
      'x-ratelimit-remaining': String(remaining),
    });
    const [a, b] = [await pacer.acquire(), await pacer.acquire()];
    now = 10;
    a?.done({ status: 201, headers: headers(1) });
    now = 30;
    b?.done({ status: 201, headers: headers(0) });
    now = 1015;
    const x = await pacer.acquire();
    now = 1035;
    x.done({ status: 201, headers: headers(0) });
    expect(pacer.used).toBe(1);
    const next = await Promise.race([pacer.acquire(), new Promise((r) => setTimeout(() => r('held'), 50))]);
    expect(next).not.toBe('held');
  });
});
