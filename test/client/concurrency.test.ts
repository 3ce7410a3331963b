/**
 * The concurrency governor against an emulator whose job ceiling is 2: of five creates, two run and the
 * governor holds three back — each released right when one of the client's own jobs is observed
 * terminal, not after the 60 s Retry-After. With maxConcurrentJobs set, no 429 at all. Several wait()
 * loops on one job free exactly one slot. The emulator holds the jobs processing, and the test ends them
 * one at a time, so what is checked is cause and effect, not how long a job takes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Generation, GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, heldGenerations, hold, release, unhold } from '../helpers/emulator.ts';
import { clientFor, KEY, startTestEmulator, stats, until } from './client-helpers.ts';

/** Moderated when processing starts: a job without rendering. */
const JOB = { type: 'image', prompt: 'a governed square', aspect_ratio: '1:1' } as const;

let emu: RunningEmulator | null = null;
const clients: GenpipeClient[] = [];

async function start(concurrency: number): Promise<RunningEmulator> {
  emu = await startTestEmulator({
    clients: [{ id: 'a', rpm: 1000, concurrency }],
    keys: [{ key: KEY, client: 'a' }],
    queue_ms: 10,
    processing_ms: { image: 0, video: 0 },
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

/** Five creates, each waited to its end, through one client; `events` in the order they happened. */
function fiveJobs(client: GenpipeClient): { events: Event[]; done: Promise<Generation[]> } {
  const events: Event[] = [];
  const done = Promise.all(
    Array.from({ length: 5 }, async () => {
      const g = await client.generations.create(JOB);
      events.push({ kind: 'created', at: Date.now() });
      const end = await client.generations.wait(g, { throwOnFailure: false });
      events.push({ kind: 'terminal', at: Date.now() });
      return end;
    }),
  );
  done.catch(() => undefined); // awaited by the test; a failed assertion first must not leave it unhandled
  return { events, done };
}

/**
 * With the first two jobs held and three creates held back by the governor: ends the held jobs one at a
 * time, and checks that each end lets exactly one more create through.
 */
async function endJobsOneByOne(e: RunningEmulator, client: GenpipeClient): Promise<void> {
  for (let admitted = 2; admitted < 5; admitted++) {
    expect(await adminRows(e)).toHaveLength(admitted);
    expect(client.governor.waiting).toBe(5 - admitted);
    const [oldest] = await heldGenerations(e, 1);
    await release(e, oldest!.id);
    // A safety net far below the 60 s Retry-After: the create goes when the job is seen to end.
    await until(async () => (await adminRows(e)).length === admitted + 1);
  }
  expect(client.governor.waiting).toBe(0);
  await unhold(e);
}

/** Every create after the first `free` came after as many jobs had ended. */
function expectAdmittedAfterEnds(events: Event[], free: number): void {
  let created = 0;
  let ended = 0;
  for (const e of events) {
    if (e.kind === 'terminal') ended++;
    else if (++created > free) expect(ended).toBeGreaterThanOrEqual(created - free);
  }
  expect(created).toBe(5);
}

describe('concurrency governor', () => {
  it('learns a ceiling of 2 from the 429s and releases each held create when a job ends', async () => {
    const e = await start(2);
    await hold(e);
    const client = governed(e);
    const { events, done } = fiveJobs(client);
    // Slow start while the ceiling is unknown: creates awaiting their answer fewer than half the jobs
    // running, at least one (1, 1, 1): two created, the third refused — one 429 — and the fourth and
    // fifth never sent. Three held back.
    await until(async () => client.governor.ceiling !== null && client.governor.waiting === 3);
    expect((await stats(e)).rate_limited.concurrency).toBe(1);
    expect(client.governor.ceiling).toBe(2);
    await endJobsOneByOne(e, client);
    expect((await done).map((g) => g.state)).toEqual(Array(5).fill('failed'));
    // Only the first round met the ceiling; afterwards the governor kept creates back.
    expect((await stats(e)).rate_limited.concurrency).toBe(1);
    expectAdmittedAfterEnds(events, 2);
  });

  it('learns the ceiling from the jobs still running when it is refused, not from jobs that ended unread', async () => {
    // Three jobs held processing; two of them end at the service without the client reading them (as
    // when polling lags the jobs' ends). Two more creates take the free slots; the third is refused.
    // The client believes 5 of its jobs run; the service's ceiling is 3. Reading them after the 429, it
    // finds 3 running: the ceiling is 3 or more (the two that ended may have ended after the 429), so
    // one create more goes as a probe, and its 429 settles it.
    const e = await start(3);
    await hold(e);
    const logs: string[] = [];
    const client = governed(e, { hooks: { log: (m: string) => logs.push(m) } });
    const first = [];
    for (let i = 0; i < 3; i++) first.push(await client.generations.create(JOB));
    const held = await heldGenerations(e, 3);
    for (const g of first.slice(0, 2)) await release(e, g.id);
    await until(async () => (await heldGenerations(e, 1)).length === 1);
    await client.generations.create(JOB);
    await client.generations.create(JOB);
    expect(client.governor.activeCount).toBe(5);
    const stop = new AbortController();
    const refused = client.generations.create(JOB, { holdSignal: stop.signal }).catch((err) => err);
    await until(async () => (await stats(e)).rate_limited.concurrency === 2 && client.governor.waiting === 1);
    expect(client.governor.ceiling).toBe(3);
    expect(logs.filter((l) => l.includes('job ceiling learned'))).toEqual([
      'Too many concurrent jobs: job ceiling learned as 3',
    ]);
    expect(client.governor.activeCount).toBe(3);
    expect(held).toHaveLength(3);
    stop.abort();
    await refused;
    await unhold(e);
  });

  it("says a held create is sent when one of its jobs ends, not after the 429's 60 s", async () => {
    const e = await start(2);
    await hold(e);
    const logs: string[] = [];
    const client = governed(e, { hooks: { log: (m: string) => logs.push(m) } });
    const { done } = fiveJobs(client);
    await until(async () => client.governor.ceiling !== null && client.governor.waiting === 3);
    await endJobsOneByOne(e, client);
    await done;
    const retries = logs.filter((l) => l.startsWith('retrying POST /v1/generations'));
    expect(retries.length).toBeGreaterThan(0);
    for (const line of retries) {
      expect(line).toContain("when one of this client's 2 running jobs ends");
      expect(line).toContain('429 "Too many concurrent jobs"');
      expect(line).not.toContain('60000 ms');
    }
  });

  it('with maxConcurrentJobs it never gets a 429', async () => {
    const e = await start(2);
    await hold(e);
    const client = governed(e, { maxConcurrentJobs: 2 });
    const { events, done } = fiveJobs(client);
    await until(async () => client.governor.waiting === 3 && (await adminRows(e)).length === 2);
    await endJobsOneByOne(e, client);
    await done;
    expect((await stats(e)).rate_limited.concurrency).toBe(0);
    expectAdmittedAfterEnds(events, 2);
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
