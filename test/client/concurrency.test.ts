/**
 * The concurrency governor against an emulator whose job ceiling is 2: five creates finish in about
 * three job lengths, not after a 60 s Retry-After — each held create is released right when one of the
 * client's own jobs is observed terminal. With maxConcurrentJobs set, no 429 at all. Several wait()
 * loops on one job free exactly one slot.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Generation, GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { clientFor, KEY, startTestEmulator, stats, until } from './client-helpers.ts';

const JOB_MS = 300;
/** Moderated after processing_ms: a job of known length without rendering. */
const JOB = { type: 'image', prompt: 'a governed square', aspect_ratio: '1:1' } as const;

let emu: RunningEmulator | null = null;
const clients: GenpipeClient[] = [];

async function start(concurrency: number): Promise<RunningEmulator> {
  emu = await startTestEmulator({
    clients: [{ id: 'a', rpm: 1000, concurrency }],
    keys: [{ key: KEY, client: 'a' }],
    queue_ms: 10,
    processing_ms: { image: JOB_MS, video: JOB_MS },
    blocked_words: ['governed'],
  });
  return emu;
}

function governed(e: RunningEmulator, extra: Parameters<typeof clientFor>[1] = {}): GenpipeClient {
  const c = clientFor(e, extra);
  clients.push(c);
  return c;
}

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await emu?.close();
  emu = null;
});

interface Event {
  kind: 'created' | 'terminal';
  at: number;
}

async function fiveJobs(
  client: GenpipeClient,
): Promise<{ events: Event[]; done: Generation[]; wall: number }> {
  const t0 = Date.now();
  const events: Event[] = [];
  const done = await Promise.all(
    Array.from({ length: 5 }, async () => {
      const g = await client.generations.create(JOB);
      events.push({ kind: 'created', at: Date.now() - t0 });
      const end = await client.generations.wait(g, { throwOnFailure: false });
      events.push({ kind: 'terminal', at: Date.now() - t0 });
      return end;
    }),
  );
  return { events, done, wall: Date.now() - t0 };
}

/** Every create after the first `free` was admitted shortly after some job was seen to end. */
function expectReleasedOnCompletion(events: Event[], free: number): void {
  const created = events.filter((e) => e.kind === 'created').map((e) => e.at);
  const ended = events.filter((e) => e.kind === 'terminal').map((e) => e.at);
  for (const at of created.slice(free)) {
    const gap = Math.min(...ended.filter((t) => t <= at).map((t) => at - t));
    expect(gap).toBeLessThan(250);
  }
}

describe('concurrency governor', () => {
  it('learns a ceiling of 2 from the 429s and releases each held create when a job ends', async () => {
    const e = await start(2);
    const client = governed(e);
    const { events, done, wall } = await fiveJobs(client);
    expect(done.map((g) => g.state)).toEqual(Array(5).fill('failed'));
    expect(client.governor.ceiling).toBe(2);
    // Three waves of jobs of 300 ms, not a 60 s Retry-After.
    expect(wall).toBeLessThan(3 * JOB_MS + 1500);
    // Only the first wave met the ceiling; afterwards the governor kept creates back.
    expect((await stats(e)).rate_limited.concurrency).toBe(3);
    expectReleasedOnCompletion(events, 2);
  });

  it('with maxConcurrentJobs it never gets a 429', async () => {
    const e = await start(2);
    const client = governed(e, { maxConcurrentJobs: 2 });
    const { events, wall } = await fiveJobs(client);
    expect((await stats(e)).rate_limited.concurrency).toBe(0);
    expect(wall).toBeLessThan(3 * JOB_MS + 1500);
    expectReleasedOnCompletion(events, 2);
  });

  it('several wait() loops on one job free exactly one slot', async () => {
    const e = await start(1);
    const client = governed(e, { maxConcurrentJobs: 1 });
    const a = await client.generations.create(JOB);
    const b = client.generations.create(JOB);
    const c = client.generations.create(JOB);
    await until(async () => client.governor.waiting === 2);
    // Three loops watch job a; its end is observed three times.
    await Promise.all([1, 2, 3].map(() => client.generations.wait(a, { throwOnFailure: false })));
    const gb = await b;
    expect(client.governor.activeCount).toBe(1);
    expect(client.governor.waiting).toBe(1); // c still held: one end freed one slot
    await client.generations.wait(gb, { throwOnFailure: false });
    const gc = await c;
    expect(gc.id).not.toBe(gb.id);
    expect((await stats(e)).rate_limited.concurrency).toBe(0);
  });

  it('a create held by the governor can be cancelled', async () => {
    const e = await start(1);
    const client = governed(e, { maxConcurrentJobs: 1 });
    await client.generations.create(JOB);
    const controller = new AbortController();
    const held = client.generations.create(JOB, { signal: controller.signal });
    await until(async () => client.governor.waiting === 1);
    controller.abort();
    await expect(held).rejects.toMatchObject({ name: 'AbortError' });
    expect(client.governor.waiting).toBe(0);
    expect((await stats(e)).responses['201']).toBe(1);
  });
});
