/**
 * The shared poll loop against a real emulator: one read at a time for all jobs, each job read about
 * once per interval from an interval after it joined, reads spaced by the rate cap, and a job's waiter
 * leaving on its own signal without disturbing the others.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Generation, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { GenerationPoller } from '../../src/pipeline/poller.ts';
import { KEY, startTestEmulator } from '../helpers/emulator.ts';

let emu: RunningEmulator;
let client: GenpipeClient;

beforeAll(async () => {
  emu = await startTestEmulator({ queue_ms: 0, processing_ms: { image: 400, video: 400 } });
  client = createClient({ apiKey: KEY, baseUrl: emu.url });
});
afterAll(async () => {
  await client?.close();
  await emu?.close();
});

/** A poller whose reads are counted, timed, and checked never to overlap. */
function countingPoller(intervalMs: number, maxGetsPerSecond: number) {
  const reads: number[] = [];
  let open = 0;
  let overlap = 0;
  const poller = new GenerationPoller({
    intervalMs,
    maxGetsPerSecond,
    get: async (id, o) => {
      if (++open > 1) overlap++;
      reads.push(Date.now());
      try {
        return await client.generations.get(id, o);
      } finally {
        open--;
      }
    },
  });
  return { poller, reads, overlap: () => overlap };
}

describe('GenerationPoller', () => {
  it('waits for many jobs with one sequential loop, about one read per job per interval', async () => {
    const gens = await Promise.all(
      [1, 2, 3, 4].map((n) => client.generations.create({ type: 'image', prompt: `job ${n}` })),
    );
    const { poller, reads, overlap } = countingPoller(100, 100);
    const started = Date.now();
    const done = await Promise.all(gens.map((g) => poller.wait(g.id)));
    expect(done.map((g: Generation) => g.state)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
    ]);
    expect(overlap()).toBe(0);
    // No read before the first interval; ~400 ms of processing → about 4-6 reads per job, never a burst.
    expect(reads[0]! - started).toBeGreaterThanOrEqual(95);
    expect(reads.length).toBeGreaterThanOrEqual(4 * 3);
    expect(reads.length).toBeLessThanOrEqual(4 * 8);
    expect(poller.outstanding).toBe(0);
  });

  it('spaces reads by the rate cap, stretching the cycle for a large set', async () => {
    const gens = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => client.generations.create({ type: 'image', prompt: `slow ${n}` })),
    );
    const { poller, reads } = countingPoller(50, 10);
    await Promise.all(gens.map((g) => poller.wait(g.id)));
    const gaps = reads.slice(1).map((t, i) => t - reads[i]!);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(95);
  });

  it('lets one waiter leave on its signal while the others are still served', async () => {
    const [a, b] = await Promise.all([
      client.generations.create({ type: 'image', prompt: 'left' }),
      client.generations.create({ type: 'image', prompt: 'kept' }),
    ]);
    const { poller } = countingPoller(100, 100);
    const leave = new AbortController();
    const left = poller.wait(a!.id, leave.signal);
    const kept = poller.wait(b!.id);
    leave.abort(new Error('left early'));
    await expect(left).rejects.toThrow('left early');
    expect((await kept).state).toBe('completed');
  });
});
