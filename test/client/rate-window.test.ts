/**
 * The pacer learns the service's rate window from X-RateLimit-Reset, in virtual time: timers and Date
 * are fake, so the pacer's wake-ups happen exactly when the test advances the clock, and the schedule
 * is the pacer's alone. The service is a sliding log following the interface's rate-limit rules (whole
 * seconds in the headers, a Date header), whose window the test can change mid-stream.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Pacer } from '../../src/client/index.ts';

/** A Unix time (ms) that is not on a whole second, as a real clock rarely is. */
const T0 = 1_790_000_000_123;
/**
 * Just before a whole second: the first answers' Reset, rounded up, is then only a few ms past the
 * window's end, and the window is learned within a few ms of its length.
 */
const T0_TIGHT = 1_790_000_000_990;
/** Time between a create's sending and its counting, and between its counting and its answer. */
const HOP_MS = 2;

interface Answer {
  status: number;
  headers: Record<string, string>;
  retryAfterMs?: number;
}

/** A sliding-window service with the interface's headers; `windowMs` may change at any time. */
class FakeService {
  readonly counted: number[] = [];
  /** When each refused create arrived. */
  readonly refusedAt: number[] = [];
  /**
   * @param skewMs - the service's clock minus ours
   */
  constructor(
    public windowMs: number,
    readonly limit: number,
    readonly skewMs = 0,
  ) {}

  answer(ourNow: number): Answer {
    const now = ourNow + this.skewMs;
    const live = this.counted.filter((t) => now - t < this.windowMs);
    const date = new Date(Math.floor(now / 1000) * 1000).toUTCString();
    const base = { 'x-ratelimit-limit': String(this.limit), date };
    if (live.length >= this.limit) {
      this.refusedAt.push(now);
      const oldest = live[live.length - this.limit] as number;
      const retryAfter = Math.max(1, Math.ceil((oldest + this.windowMs - now) / 1000));
      return {
        status: 429,
        headers: {
          ...base,
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(Math.ceil((oldest + this.windowMs) / 1000)),
          'retry-after': String(retryAfter),
        },
        retryAfterMs: retryAfter * 1000,
      };
    }
    this.counted.push(now);
    return {
      status: 201,
      headers: {
        ...base,
        'x-ratelimit-remaining': String(this.limit - live.length - 1),
        'x-ratelimit-reset': String(Math.ceil((now + this.windowMs) / 1000)),
      },
    };
  }
}

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One create through the pacer, sent again after a 429 (as generations.create does). */
async function create(pacer: Pacer, service: FakeService): Promise<void> {
  for (;;) {
    const ticket = await pacer.acquire();
    await tick(HOP_MS);
    const answer = service.answer(Date.now());
    await tick(HOP_MS);
    ticket.done(answer);
    if (answer.status === 201) return;
  }
}

/** Runs `n` creates at once (or `atMs` after the start) until all are done, in virtual time. */
async function run(pacer: Pacer, service: FakeService, n: number, atMs = 0): Promise<void> {
  const all = Promise.all(
    Array.from({ length: n }, async () => {
      if (atMs > 0) await tick(atMs);
      await create(pacer, service);
    }),
  );
  let done = false;
  void all.then(() => {
    done = true;
  });
  for (let i = 0; i < 100_000 && !done; i++) await vi.advanceTimersByTimeAsync(10);
  await all;
}

/** Seconds between the first and the last create the service counted. */
function spanMs(service: FakeService): number {
  return (service.counted.at(-1) as number) - (service.counted[0] as number);
}

afterEach(() => {
  vi.useRealTimers();
});

describe('the pacer learns the rate window', () => {
  it('probes with one create, then learns 5 s from its 201', async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({});
    const service = new FakeService(5000, 4);
    expect(pacer.windowMs).toBeNull();
    const first = await pacer.acquire();
    const answer = service.answer(Date.now());
    // Until the first answer, one create at a time.
    const second = pacer.acquire();
    let secondGranted = false;
    void second.then(() => {
      secondGranted = true;
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect(secondGranted).toBe(false);
    first.done(answer);
    await vi.advanceTimersByTimeAsync(0);
    expect(secondGranted).toBe(true);
    // Reset is whole seconds: the window is between 5 s and the next whole second, never below 5 s,
    // minus the second the answer took to arrive after the service counted the create (what is paced
    // by is how long a create counts after its answer).
    expect(pacer.windowMs).toBeGreaterThanOrEqual(4000);
    expect(pacer.windowMs).toBeLessThan(5000);
    const bounds = pacer.windowBounds as { loMs: number; hiMs: number };
    expect(bounds.loMs).toBeLessThan(5000);
    expect(bounds.hiMs).toBeGreaterThanOrEqual(5000);
    expect(pacer.windowUpperMs).toBe(bounds.hiMs);
    (await second).done('not-sent');
  });

  it("narrows its window by bounds other processes learned (a shared quota's), never past its own, and never a given one", async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({});
    const service = new FakeService(5000, 4);
    const first = await pacer.acquire();
    first.done(service.answer(Date.now()));
    const own = pacer.windowBounds;
    expect(own).not.toBeNull();
    // Bounds overlapping its own: the intersection, the one whole second it holds paced by.
    pacer.adoptWindow({ loMs: 4_999, hiMs: 5_001 });
    expect(pacer.windowMs).toBe(5_000);
    // Bounds that exclude its own are not taken (its own answers say whether the window changed).
    pacer.adoptWindow({ loMs: 7_000, hiMs: 8_000 });
    expect(pacer.windowMs).toBe(5_000);
    const given = new Pacer({ windowMs: 9_000 });
    given.adoptWindow({ loMs: 4_999, hiMs: 5_001 });
    expect(given.windowMs).toBe(9_000);
    expect(given.windowBounds).toBeNull();
  });

  it('learns 60 s, and paces 3 windows of creates with zero 429s', async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({});
    const service = new FakeService(60_000, 10);
    await run(pacer, service, 30);
    expect(service.refusedAt.length).toBe(0);
    expect(pacer.windowMs).toBeGreaterThanOrEqual(60_000);
    expect(pacer.windowMs).toBeLessThan(61_000);
    // Three windows: the last create goes two windows after the first, each at most a second (of
    // rounding) longer than 60 s.
    expect(spanMs(service)).toBeGreaterThanOrEqual(120_000);
    expect(spanMs(service)).toBeLessThan(122_000);
  });

  it('re-learns a window that grows from 5 s to 10 s mid-stream: the creates sent together meet one 429 each, then none', async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({});
    const service = new FakeService(5000, 4);
    await run(pacer, service, 12);
    expect(pacer.windowMs).toBeLessThan(6000);
    expect(service.refusedAt.length).toBe(0);
    service.windowMs = 10_000;
    const counted = service.counted.length;
    await run(pacer, service, 12);
    // The creates that met the longer window first were refused (nothing announced it; the 4 were sent
    // in the same instant); their 429s' Reset lengthened the window, and nothing later was refused.
    expect(service.refusedAt.length).toBeGreaterThan(0);
    expect(service.refusedAt.length).toBeLessThanOrEqual(4);
    expect(new Set(service.refusedAt).size).toBe(1);
    expect(pacer.windowMs).toBeGreaterThanOrEqual(10_000);
    expect(pacer.windowMs).toBeLessThan(11_000);
    // The last 4 of the 12 went one 10 s window after the 4 before them.
    const after = service.counted.slice(counted);
    expect((after[8] as number) - (after[4] as number)).toBeGreaterThanOrEqual(10_000);
    expect((after[8] as number) - (after[4] as number)).toBeLessThan(11_000);
  });

  it('re-learns a window that grows while not full, from the next 201: no 429', async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({});
    const service = new FakeService(5000, 4);
    await run(pacer, service, 2);
    service.windowMs = 10_000;
    await run(pacer, service, 1, 6000);
    expect(pacer.windowMs).toBeGreaterThanOrEqual(10_000);
    expect(pacer.windowMs).toBeLessThan(11_000);
    await run(pacer, service, 8);
    expect(service.refusedAt.length).toBe(0);
  });

  it('re-learns a window that shrinks from 10 s to 3 s mid-stream, with zero 429s', async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({});
    const service = new FakeService(10_000, 4);
    await run(pacer, service, 8);
    expect(pacer.windowMs).toBeGreaterThanOrEqual(10_000);
    service.windowMs = 3000;
    const counted = service.counted.length;
    await run(pacer, service, 12);
    expect(service.refusedAt.length).toBe(0);
    expect(pacer.windowMs).toBeGreaterThanOrEqual(3000);
    expect(pacer.windowMs).toBeLessThan(4000);
    // Once re-learned, 4 creates per 3 s: the last 4 went within a second of 3 s after the 4 before.
    const after = service.counted.slice(counted);
    expect((after[11] as number) - (after[7] as number)).toBeLessThan(4000);
  });

  it('never sends a create into a full window, whatever the phase of the clock and the window', async () => {
    // Windows of whole seconds, as the service counts them (X-RateLimit-Reset is whole seconds).
    for (const windowMs of [1000, 3000, 5000, 7000]) {
      for (let phase = 0; phase < 1000; phase += 97) {
        vi.useFakeTimers({ now: T0 - 123 + phase });
        const pacer = new Pacer({});
        const service = new FakeService(windowMs, 3);
        await run(pacer, service, 10);
        expect({ windowMs, phase, rejected: service.refusedAt.length }).toEqual({
          windowMs,
          phase,
          rejected: 0,
        });
        expect(pacer.windowMs).toBeGreaterThanOrEqual(windowMs);
        expect(pacer.windowMs).toBeLessThan(windowMs + 1000);
        // 10 creates at 3 per window: the last goes 3 windows after the first, plus the rounding.
        expect(spanMs(service)).toBeLessThan(3 * (windowMs + 1000 + 20));
        vi.useRealTimers();
      }
    }
  });

  it('a window of a fraction of a second more (outside the interface) costs one round of 429s, then is paced as learned', async () => {
    for (const windowMs of [5500, 7250]) {
      for (let phase = 0; phase < 1000; phase += 97) {
        vi.useFakeTimers({ now: T0 - 123 + phase });
        const pacer = new Pacer({});
        const service = new FakeService(windowMs, 3);
        await run(pacer, service, 10);
        // At most the creates sent together as the first window ended (3 per window), refused once.
        const refused = service.refusedAt;
        expect(refused.length, `${windowMs} ms, phase ${phase}`).toBeLessThanOrEqual(3);
        if (refused.length > 0) expect((refused.at(-1) as number) - (refused[0] as number)).toBeLessThan(100);
        vi.useRealTimers();
      }
    }
  });

  it('once its answers narrow the window to one whole second, paces by exactly that second', async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({});
    const service = new FakeService(5000, 20);
    // 20 creates answered over 0.3 s: the bounds narrow to less than a second around 5 s.
    await run(pacer, service, 20);
    expect(pacer.windowMs).toBe(5000);
    expect(service.refusedAt).toHaveLength(0);
  });

  it("corrects an underestimate from an RPM 429's Reset", async () => {
    // A window 600 ms longer than before: the answers overlap the old ones, so nothing contradicts the
    // learned 5 s until a create meets the full window; its 429's Reset says when the oldest ages out.
    vi.useFakeTimers({ now: T0_TIGHT });
    const pacer = new Pacer({});
    const service = new FakeService(5000, 4);
    await run(pacer, service, 8);
    const before = pacer.windowMs as number;
    expect(before).toBeLessThan(5600);
    service.windowMs = 5600;
    await run(pacer, service, 12);
    expect(service.refusedAt.length).toBeGreaterThan(0);
    expect(new Set(service.refusedAt).size).toBe(1);
    expect(pacer.windowMs).toBeGreaterThanOrEqual(5600);
    expect(pacer.windowMs).toBeLessThan(6600);
  });

  it('is not lengthened by the 429 of a window another user of the key filled', async () => {
    // Our creates aged out of the 5 s window; another process then filled it (4 creates 5.5 s in): the
    // 429 our next create meets has a Reset 10.5 s after our first create, which our creates cannot
    // explain (one of ours in any window up to that length, against an allowance of 4).
    vi.useFakeTimers({ now: T0_TIGHT });
    const notes: string[] = [];
    const pacer = new Pacer({ log: (m) => notes.push(m) });
    const service = new FakeService(5000, 4);
    await run(pacer, service, 1);
    const learned = pacer.windowMs as number;
    expect(learned).toBeLessThan(5600);
    await vi.advanceTimersByTimeAsync(5500);
    for (let i = 0; i < 4; i++) service.answer(Date.now()); // the other user's creates
    await vi.advanceTimersByTimeAsync(500);
    const ticket = await pacer.acquire();
    const answer = service.answer(Date.now());
    expect(answer.status).toBe(429);
    ticket.done(answer);
    expect(pacer.windowMs).toBe(learned);
    expect(notes.filter((n) => n.startsWith('rate window changed'))).toEqual([]);
  });

  it('reads the service clock from the Date header when it is seconds away from ours', async () => {
    for (const skewMs of [-3000, 4500]) {
      vi.useFakeTimers({ now: T0 });
      const pacer = new Pacer({});
      const service = new FakeService(5000, 3, skewMs);
      await run(pacer, service, 10);
      expect({ skewMs, refused: service.refusedAt.length }).toEqual({ skewMs, refused: 0 });
      expect(pacer.windowMs).toBeGreaterThanOrEqual(5000);
      expect(pacer.windowMs).toBeLessThan(7000);
      vi.useRealTimers();
    }
  });

  it('keeps a window given in advance, whatever the headers say', async () => {
    vi.useFakeTimers({ now: T0 });
    const pacer = new Pacer({ windowMs: 8000 });
    const service = new FakeService(5000, 4);
    await run(pacer, service, 8);
    expect(pacer.windowMs).toBe(8000);
    expect(spanMs(service)).toBeGreaterThanOrEqual(8000);
    expect(service.refusedAt.length).toBe(0);
  });
});
