/**
 * The shared poll loop against a real emulator: never two reads of one job out at once, each job read about
 * once per interval from an interval after it joined, reads spaced by the rate cap, and a job's waiter
 * leaving on its own signal without disturbing the others. The emulator holds the jobs processing
 * until the reads the test counts on have happened, so no count depends on how long a job takes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Generation, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { GenerationPoller } from '../../src/pipeline/poller.ts';
import { hold, KEY, startTestEmulator } from '../helpers/emulator.ts';

let emu: RunningEmulator;
let client: GenpipeClient;

beforeAll(async () => {
  emu = await startTestEmulator({ queue_ms: 0, processing_ms: { image: 0, video: 0 } });
  client = createClient({ apiKey: KEY, baseUrl: emu.url });
});
afterAll(async () => {
  await client?.close();
  await emu?.close();
});

/** A poller whose reads are counted, timed, and checked never to overlap for one job. */
function countingPoller(intervalMs: number, maxGetsPerSecond: number, afterRead?: () => void) {
  const reads: number[] = [];
  const readsOf = new Map<string, number[]>();
  const open = new Set<string>();
  let overlap = 0;
  // Reads are stamped with the poller's own clock reading for them (the last it took before sending):
  // a stamp of the test's own, taken after, lags on a loaded machine and could crowd a window.
  let lastNow = Date.now();
  const poller = new GenerationPoller({
    intervalMs,
    maxGetsPerSecond,
    now: () => {
      lastNow = Date.now();
      return lastNow;
    },
    get: async (id, o) => {
      if (open.has(id)) overlap++;
      open.add(id);
      reads.push(lastNow);
      readsOf.set(id, [...(readsOf.get(id) ?? []), lastNow]);
      try {
        return await client.generations.get(id, o);
      } finally {
        open.delete(id);
        afterRead?.();
      }
    },
  });
  return { poller, reads, readsOf, overlap: () => overlap };
}

describe('GenerationPoller', () => {
  it('waits for many jobs with one loop, about one read per job per interval', async () => {
    await hold(emu, { prompt: '^job \\d$' });
    const gens = await Promise.all(
      [1, 2, 3, 4].map((n) => client.generations.create({ type: 'image', prompt: `job ${n}` })),
    );
    // The jobs stay processing until each has been read three times; then they finish at once.
    const { poller, reads, readsOf, overlap } = countingPoller(100, 100, () => {
      if (gens.every((g) => (readsOf.get(g.id)?.length ?? 0) >= 3)) emu.app.emu.holds.clear();
    });
    const started = Date.now();
    const done = await Promise.all(gens.map((g) => poller.wait(g.id)));
    expect(done.map((g: Generation) => g.state)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
    ]);
    expect(overlap()).toBe(0);
    // No read before the first interval; each job read once per interval, never a burst.
    expect(reads[0]! - started).toBeGreaterThanOrEqual(95);
    for (const g of gens) {
      const at = readsOf.get(g.id)!;
      expect(Math.min(...at.slice(1).map((t, i) => t - at[i]!))).toBeGreaterThanOrEqual(95);
    }
    expect(reads.length).toBeGreaterThanOrEqual(4 * 3);
    expect(reads.length).toBeLessThanOrEqual(4 * 8);
    expect(poller.outstanding).toBe(0);
  });

  it('keeps reads within the rate cap in any second, stretching the cycle for a large set', async () => {
    await hold(emu, { prompt: '^slow \\d$' });
    const gens = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => client.generations.create({ type: 'image', prompt: `slow ${n}` })),
    );
    // Held until each job has been read twice: at least two whole cycles.
    const { poller, reads, readsOf } = countingPoller(50, 10, () => {
      if (gens.every((g) => (readsOf.get(g.id)?.length ?? 0) >= 2)) emu.app.emu.holds.clear();
    });
    await Promise.all(gens.map((g) => poller.wait(g.id)));
    // No second holds more than the cap of 10 reads (10 reads of 5 jobs need more than one second).
    expect(reads.length).toBeGreaterThanOrEqual(10);
    for (const start of reads) {
      expect(reads.filter((t) => t >= start && t < start + 1000).length).toBeLessThanOrEqual(10);
    }
    expect(reads.at(-1)! - reads[0]!).toBeGreaterThanOrEqual(1000);
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
