/**
 * A service whose rate window is days long (the emulator's rate_window_s 3,000,000: X-RateLimit-Reset
 * and Retry-After a month away): the pacer paces by 24 h at most and says so, and holds creates
 * without a timer Node cannot arm (a delay over 2^31 - 1 ms fires at once with a
 * TimeoutOverflowWarning, which made the pacer spin). Real HTTP to the emulator; the pacer is fed the
 * answers as the client feeds it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Pacer } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, KEY, startTestEmulator } from '../helpers/emulator.ts';

let emu: RunningEmulator;
const warnings: Error[] = [];
const onWarning = (w: Error) => warnings.push(w);

beforeAll(async () => {
  emu = await startTestEmulator({
    clients: [{ id: 'a', state: 'active', rpm: 1, concurrency: 10, balance: 1_000_000 }],
    keys: [{ key: KEY, client: 'a' }],
    rate_window_s: 3_000_000,
  });
  process.on('warning', onWarning);
});
afterAll(async () => {
  process.off('warning', onWarning);
  await emu?.close();
});
afterEach(() => {
  warnings.length = 0;
});

/** One create through `pacer`, its answer fed back as the client does. */
async function pacedCreate(pacer: Pacer): Promise<number> {
  const ticket = await pacer.acquire();
  const r = await call(emu, 'POST', '/v1/generations', { json: { type: 'image', prompt: 'a long window' } });
  const retryAfter = r.headers['retry-after'];
  ticket.done({
    status: r.status,
    headers: r.headers,
    retryAfterMs: retryAfter === undefined ? null : Number(retryAfter) * 1000,
  });
  return r.status;
}

/** A turn of the event loop, so that a warning emitted on the next tick has been heard. */
const turn = () => new Promise((r) => setImmediate(r));

describe('a rate window of days', () => {
  it('is paced by as 24 h, said, and held without an overflowing timer', async () => {
    const notes: string[] = [];
    const pacer = new Pacer({ log: (m) => notes.push(m) });
    expect(await pacedCreate(pacer)).toBe(201);
    expect(pacer.windowMs).toBe(24 * 3600 * 1000);
    expect(notes.join('\n')).toMatch(/rate window: 86400\.0 s .*implies 3000000\.\d s.*24 h/);

    // Another process on the key (a pacer that knows nothing yet) gets the 429 of a month-long window.
    const other = new Pacer({});
    expect(await pacedCreate(other)).toBe(429);
    const stop = new AbortController();
    const held = other.acquire(stop.signal).catch(() => 'left');
    await turn();
    await turn();
    stop.abort();
    expect(await held).toBe('left');
    expect(warnings.filter((w) => w.name === 'TimeoutOverflowWarning')).toEqual([]);
  });
});
