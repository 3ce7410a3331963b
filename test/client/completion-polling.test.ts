/**
 * The adaptive poll loop over real HTTP against the emulator: 9 jobs of 1 s through a job ceiling of
 * 3 (learned by the client from the service's 429s), each waited on through one poller naming its kind
 * and create time. Once the first jobs have shown how long the kind takes, a job is read about once,
 * when it has ended; a job is never read sooner than 1 s after its create or its previous read; and
 * no job completes before the jobs whose slots it needed. Nothing is asserted on wall time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createClient,
  GenerationPoller,
  type GenerationRequest,
  type GenpipeClient,
  jobKindOf,
  RecentJobDurations,
} from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { KEY, startTestEmulator } from '../helpers/emulator.ts';

let emu: RunningEmulator;
let client: GenpipeClient;

beforeAll(async () => {
  emu = await startTestEmulator({
    clients: [{ id: 'a', state: 'active', rpm: 1000, concurrency: 3, balance: 1_000_000 }],
    keys: [{ key: KEY, client: 'a' }],
    queue_ms: 0,
    processing_ms: { image: 1_000, video: 1_000 },
  });
  client = createClient({ apiKey: KEY, baseUrl: emu.url });
});
afterAll(async () => {
  await client?.close();
  await emu?.close();
});

describe('completion-aware polling against the emulator', () => {
  it('reads 9 jobs of 1 s through a ceiling of 3 about once each, never sooner than 1 s apart', async () => {
    const request: GenerationRequest = { type: 'image', prompt: 'a lighthouse at dusk' };
    const kind = jobKindOf(request);
    const readsOf = new Map<string, number[]>();
    const durations = new RecentJobDurations();
    const poller = new GenerationPoller({
      get: (id, o) => {
        readsOf.set(id, [...(readsOf.get(id) ?? []), Date.now()]);
        return client.generations.get(id, o);
      },
      durations,
    });
    const createdAt = new Map<string, number>();
    const completed: string[] = [];
    const created: string[] = [];
    const jobs = Array.from({ length: 9 }, async () => {
      const g = await client.generations.create(request);
      const at = Date.now();
      created.push(g.id);
      createdAt.set(g.id, at);
      const done = await poller.wait(g.id, { kind, createdAt: at });
      completed.push(done.id);
      expect(done.state).toBe('completed');
    });
    await Promise.all(jobs);

    // The ceiling: the n-th job created had at least n - 2 others completed before it completed.
    for (const [n, id] of created.entries()) {
      expect(completed.indexOf(id)).toBeGreaterThanOrEqual(n - 2);
    }
    // Spacing: 1 s from the create, and between two reads of a job (a timer fires no earlier).
    for (const id of created) {
      const at = [createdAt.get(id)!, ...readsOf.get(id)!];
      for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(995);
    }
    // Few reads: at most 3 for any job, 2 on average (the fixed 2 s schedule reads once, 1 s late).
    const counts = created.map((id) => readsOf.get(id)!.length);
    expect(Math.max(...counts)).toBeLessThanOrEqual(3);
    expect(counts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(18);
    expect(durations.samples(kind)).toHaveLength(9);
    // Learned: about the 1 s the jobs take (the first read may come before it, never before 1 s).
    expect(durations.expectedMs(kind)).toBeGreaterThanOrEqual(500);
    expect(durations.expectedMs(kind)).toBeLessThanOrEqual(2_000);
  });
});
