/**
 * The poll loop sends the reads due at once side by side, over real HTTP against the emulator with a
 * round trip of 300 ms (`PUT /_emulator/faults {latency_ms}`): 40 jobs that have all ended at the
 * service are waited on together, and their reads overlap (one at a time, 40 reads would take 12 s),
 * never more than the read budget per second nor the in-flight cap. Asserted on the reads' recorded
 * send and answer times, not on wall time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, GenerationPoller, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, call, KEY, startTestEmulator, until } from '../helpers/emulator.ts';

let emu: RunningEmulator;
let client: GenpipeClient;
let ids: string[];

beforeAll(async () => {
  emu = await startTestEmulator({
    clients: [{ id: 'a', state: 'active', rpm: 10_000, concurrency: 100, balance: 1_000_000 }],
    keys: [{ key: KEY, client: 'a' }],
    queue_ms: 0,
    processing_ms: { image: 20, video: 20 },
  });
  client = createClient({ apiKey: KEY, baseUrl: emu.url });
  ids = await Promise.all(
    Array.from(
      { length: 40 },
      async (_, i) => (await client.generations.create({ type: 'image', prompt: `p${i}` })).id,
    ),
  );
  await until(async () => (await adminRows(emu)).every((r) => r.state === 'completed'));
  const r = await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { latency_ms: 300 } });
  expect(r.status).toBe(200);
});
afterAll(async () => {
  await client?.close();
  await emu?.close();
});

interface Read {
  sentAt: number;
  backAt: number;
}

/** Waits on every job through one poller; returns each read's send and answer times. */
async function readAll(options: { maxGetsPerSecond: number; maxReadsInFlight?: number }): Promise<Read[]> {
  const reads: Read[] = [];
  const poller = new GenerationPoller({
    get: async (id, o) => {
      const read = { sentAt: Date.now(), backAt: Number.POSITIVE_INFINITY };
      reads.push(read);
      try {
        return await client.generations.get(id, o);
      } finally {
        read.backAt = Date.now();
      }
    },
    ...options,
  });
  const done = await Promise.all(ids.map((id) => poller.wait(id, { readNow: true })));
  expect(done.every((g) => g.state === 'completed')).toBe(true);
  return reads;
}

/** The most reads out at the same time. */
function mostOut(reads: Read[]): number {
  return Math.max(
    ...reads.map((r) => reads.filter((o) => o.sentAt <= r.sentAt && o.backAt > r.sentAt).length),
  );
}

/**
 * How far the time this test stamps on a read (in its `get`, after the poll loop's turn) may lag the time
 * the loop's budget counted it at: on a loaded machine a few ms (CI saw 21 reads in one 1000 ms window of
 * the test's stamps, the budget's own window holding 20).
 */
const STAMP_LAG_MS = 20;

/** The most reads sent within any second, less the lag of the test's stamps. */
function mostPerSecond(reads: Read[]): number {
  const window = 1000 - STAMP_LAG_MS;
  return Math.max(
    ...reads.map((r) => reads.filter((o) => o.sentAt >= r.sentAt && o.sentAt < r.sentAt + window).length),
  );
}

describe('reads due at once go out side by side', () => {
  it('reads 40 ended jobs with reads overlapping, at most the budget a second', async () => {
    const reads = await readAll({ maxGetsPerSecond: 20 });
    expect(reads).toHaveLength(40);
    // The budget's first 20 go out together (each takes 300 ms; the loop sends them in one turn).
    expect(mostOut(reads)).toBeGreaterThanOrEqual(10);
    expect(mostPerSecond(reads)).toBeLessThanOrEqual(20);
  });

  it('keeps at most maxReadsInFlight reads out', async () => {
    const reads = await readAll({ maxGetsPerSecond: Number.POSITIVE_INFINITY, maxReadsInFlight: 8 });
    expect(reads).toHaveLength(40);
    expect(mostOut(reads)).toBe(8);
  });
});
