/**
 * The adaptive poll schedule on a fake clock (no sleeps): the one poll loop reading fake jobs that end
 * at known times. Unknown kinds are read from 1 s after their create at growing intervals; a known kind
 * first near its learned end, never sooner than 1 s after its create; every job's reads at least 1 s
 * apart; the reads of all jobs within the loop's rate cap; a job much longer than expected falls back
 * to the growing intervals; the fixed schedule keeps the old beat.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  expectFrom,
  type Generation,
  GenerationPoller,
  type PollerOptions,
  RecentJobDurations,
} from '../../src/client/index.ts';
import { ReadBudget } from '../../src/client/read-budget.ts';

const KIND = 'image|m|';

/** Fake jobs ending at given times; every read is logged with its job and time. */
class FakeService {
  readonly endsAt = new Map<string, number>();
  readonly reads: { id: string; at: number }[] = [];

  add(id: string, endsAt: number): void {
    this.endsAt.set(id, endsAt);
  }

  get = async (id: string): Promise<Generation> => {
    const at = Date.now();
    this.reads.push({ id, at });
    const done = at >= (this.endsAt.get(id) as number);
    return {
      id,
      type: 'image',
      state: done ? 'completed' : 'processing',
      model: 'm',
      created_at: new Date(0).toISOString(),
      output: [],
      failure_reason: null,
      failure_code: null,
    };
  };

  readsOf(id: string): number[] {
    return this.reads.filter((r) => r.id === id).map((r) => r.at);
  }
}

let t0: number;
beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(1_700_000_000_000);
  t0 = Date.now();
});
afterEach(() => {
  vi.useRealTimers();
});

function poller(service: FakeService, options: Partial<PollerOptions> = {}): GenerationPoller {
  return new GenerationPoller({ get: service.get, intervalMs: 2_000, ...options });
}

/** Creates a job ending `lengthMs` from now and waits on it; resolves with the time it was seen ended. */
function job(
  p: GenerationPoller,
  service: FakeService,
  id: string,
  lengthMs: number,
  kind: string = KIND,
): Promise<number> {
  const now = Date.now();
  service.add(id, now + lengthMs);
  return p.wait(id, { kind, createdAt: now }).then(() => Date.now());
}

describe('the adaptive poll schedule', () => {
  it('reads a job of an unknown kind 1 s after its create, then at growing intervals up to the interval', async () => {
    const service = new FakeService();
    const p = poller(service, { durations: new RecentJobDurations() });
    const seen = job(p, service, 'a', 7_000);
    await vi.advanceTimersByTimeAsync(10_000);
    await seen;
    expect(service.readsOf('a').map((t) => t - t0)).toEqual([1_000, 2_000, 3_500, 5_500, 7_500]);
  });

  it('reads a job of a kind known to take 5 s first just after 5 s, and once', async () => {
    const service = new FakeService();
    const durations = new RecentJobDurations({
      seed: [[KIND, [{ runningAtMs: 4_950, doneByMs: 5_000 }]]],
    });
    const p = poller(service, { durations });
    const seen = job(p, service, 'a', 4_980);
    await vi.advanceTimersByTimeAsync(6_000);
    // A moment (50 ms) after the end seen: a job ending a moment later is still read once.
    expect((await seen) - t0).toBe(5_050);
    expect(service.readsOf('a').map((t) => t - t0)).toEqual([5_050]);
  });

  it('never reads a job sooner than 1 s after its create, whatever the model expects', async () => {
    const service = new FakeService();
    const durations = new RecentJobDurations({ seed: [[KIND, [{ runningAtMs: 0, doneByMs: 200 }]]] });
    const p = poller(service, { durations });
    const seen = job(p, service, 'a', 100);
    await vi.advanceTimersByTimeAsync(2_000);
    await seen;
    expect(service.readsOf('a').map((t) => t - t0)).toEqual([1_000]);
  });

  it('falls back to the growing intervals for a job much longer than expected', async () => {
    const service = new FakeService();
    const durations = new RecentJobDurations({
      seed: [[KIND, [{ runningAtMs: 1_950, doneByMs: 2_000 }]]],
    });
    const p = poller(service, { durations, intervalMs: 5_000 });
    const seen = job(p, service, 'a', 12_000);
    await vi.advanceTimersByTimeAsync(20_000);
    await seen;
    const reads = service.readsOf('a').map((t) => t - t0);
    expect(reads).toEqual([2_050, 3_050, 4_550, 6_800, 10_175, 15_175]);
    // What it showed is learned: running at 10.2 s, ended by 15.2 s.
    expect(durations.samples(KIND).at(-1)).toEqual({ runningAtMs: 10_175, doneByMs: 15_175 });
  });

  it('learns a kind within a batch: later jobs of 1.2 s are read about once, soon after they end', async () => {
    const service = new FakeService();
    const durations = new RecentJobDurations();
    const p = poller(service, { durations });
    const lag: number[] = [];
    for (let n = 0; n < 12; n++) {
      const created = Date.now();
      const seen = job(p, service, `j${n}`, 1_200);
      await vi.advanceTimersByTimeAsync(3_000);
      lag.push((await seen) - created - 1_200);
    }
    const reads = (n: number) => service.readsOf(`j${n}`).length;
    expect(reads(0)).toBe(2); // 1 s (running), 2 s (ended)
    // Bisecting the bracket costs a few early reads; then one read per job, under 100 ms late.
    for (let n = 8; n < 12; n++) {
      expect(reads(n)).toBe(1);
      expect(lag[n]).toBeLessThanOrEqual(100);
    }
    expect(durations.expectedMs(KIND)).toBeGreaterThanOrEqual(1_200);
    expect(durations.expectedMs(KIND)).toBeLessThanOrEqual(1_300);
  });

  it('reads each job at least 1 s apart and all jobs within the rate cap, 50 jobs at once', async () => {
    const service = new FakeService();
    const durations = new RecentJobDurations({ seed: [[KIND, [{ runningAtMs: 0, doneByMs: 1_000 }]]] });
    const p = poller(service, { durations, maxGetsPerSecond: 10 });
    const all = Array.from({ length: 50 }, (_, n) => job(p, service, `j${n}`, 1_000 + (n % 7) * 900));
    await vi.advanceTimersByTimeAsync(60_000);
    await Promise.all(all);
    for (let n = 0; n < 50; n++) {
      const at = service.readsOf(`j${n}`);
      for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(1_000);
    }
    const times = service.reads.map((r) => r.at);
    // No window of one second holds more than the cap.
    for (const start of times)
      expect(times.filter((t) => t >= start && t < start + 1_000).length).toBeLessThanOrEqual(10);
    expect(p.outstanding).toBe(0);
  });

  it('does not learn from a job that joined long after its create (resumed from an earlier run)', async () => {
    const service = new FakeService();
    const durations = new RecentJobDurations();
    const p = poller(service, { durations });
    service.add('old', t0 - 1);
    const seen = p.wait('old', { kind: KIND, createdAt: t0 - 60_000 });
    await vi.advanceTimersByTimeAsync(10);
    await seen;
    expect(service.readsOf('old').map((t) => t - t0)).toEqual([0]); // read at once: long due
    expect(durations.samples(KIND)).toEqual([]);
  });
});

describe('the fixed poll schedule', () => {
  it('reads every interval from one interval after the wait began, learning nothing', async () => {
    const service = new FakeService();
    const durations = new RecentJobDurations({ seed: [[KIND, [{ runningAtMs: 0, doneByMs: 1_000 }]]] });
    const p = poller(service, { schedule: 'fixed', durations });
    const seen = job(p, service, 'a', 4_500);
    await vi.advanceTimersByTimeAsync(8_000);
    await seen;
    expect(service.readsOf('a').map((t) => t - t0)).toEqual([2_000, 4_000, 6_000]);
    expect(durations.samples(KIND)).toHaveLength(1);
  });
});

describe('expectFrom', () => {
  it('bisects agreeing brackets, settles just after the earliest end once they are close, and takes a low quantile of spread ones', () => {
    expect(expectFrom([])).toBeNull();
    expect(expectFrom([{ runningAtMs: 0, doneByMs: 1_000 }])).toBe(900); // creeping down
    expect(
      expectFrom([
        { runningAtMs: 0, doneByMs: 1_000 },
        { runningAtMs: 920, doneByMs: 2_000 },
      ]),
    ).toBe(1_050); // settled: a moment after the earliest end
    expect(expectFrom([{ runningAtMs: 1_000, doneByMs: 2_000 }])).toBe(1_500);
    expect(
      expectFrom([
        { runningAtMs: 1_000, doneByMs: 2_000 },
        { runningAtMs: 1_150, doneByMs: 1_220 },
      ]),
    ).toBe(1_270); // 1,220 + 50
    // Lengths of 1 to 20 s: the brackets disagree; a tenth of the jobs are done by the answer.
    const spread = [2, 6, 10, 14, 18].map((s) => ({ runningAtMs: s * 1000 - 500, doneByMs: s * 1000 + 500 }));
    expect(expectFrom(spread)).toBe(3_600);
    // Jobs found ended at a late first read do not pin the expectation at that read's time.
    const late = [
      { runningAtMs: 2_000, doneByMs: 3_000 },
      ...[1, 2, 3, 4, 5].map(() => ({ runningAtMs: 0, doneByMs: 9_000 })),
      ...[1, 2, 3].map(() => ({ runningAtMs: 10_000, doneByMs: 11_000 })),
    ];
    expect(expectFrom(late)).toBe(4_100); // was 7,700 when a late read counted as the job's length
  });
});

describe('ReadBudget', () => {
  it('lets a burst up to the cap go at once, then holds the next read until the oldest is a second old', () => {
    const budget = new ReadBudget(3);
    for (const at of [0, 10, 20]) {
      expect(budget.nextAt(at)).toBe(at);
      budget.took(at);
    }
    expect(budget.nextAt(30)).toBe(1_000);
    budget.took(1_000);
    expect(budget.nextAt(1_000)).toBe(1_010);
    // Below one a second: one read per 1/rate seconds.
    const slow = new ReadBudget(0.5);
    slow.took(0);
    expect(slow.nextAt(1)).toBe(2_000);
    const free = new ReadBudget(Number.POSITIVE_INFINITY);
    for (let i = 0; i < 100; i++) free.took(0);
    expect(free.nextAt(5)).toBe(5);
  });
});

describe('a longest wait given alone (--poll-interval of a single command)', () => {
  it('bounds every wait, the first one too; a longer one lets the default first wait grow to it', async () => {
    const { pollDelay, pollSettingsOf } = await import('../../src/client/poll-schedule.ts');
    const oneSecond = pollSettingsOf({ maxIntervalMs: 1_000 });
    for (const n of [0, 1, 5]) {
      expect(pollDelay(n, oneSecond, () => 0.99)).toBeLessThanOrEqual(1_000);
    }
    const tenSeconds = pollSettingsOf({ maxIntervalMs: 10_000 });
    expect(pollDelay(0, tenSeconds, () => 0)).toBe(2_000);
    expect(pollDelay(10, tenSeconds, () => 0)).toBe(10_000);
  });
});
