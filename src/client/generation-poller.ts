/**
 * The one poll loop of generations: every job waited on through a poller is read (GET
 * /v1/generations/{id}) from its own schedule by one loop that sends every read due without waiting
 * for the ones still out (so a read's round trip does not cap how many jobs are read per second), at
 * most `maxGetsPerSecond` in any one second (read-budget.ts) and at most `maxReadsInFlight` out at
 * once, so a large batch stretches its cycle instead of approaching the service's API-wide abuse
 * ceiling, while jobs that end together are read at once. A 429 that outlasts the client's retries pushes that job's next
 * read back by its Retry-After (or, with `rateLimitedReads: 'fail'`, ends its wait with the
 * RateLimitError).
 *
 * A job's schedule (poll-schedule.ts):
 * - `adaptive` (default): a job whose wait names its kind and create time is read first when jobs of
 *   its kind were seen ended (the `durations` model), never sooner than `minIntervalMs` (1 s) after its
 *   create; a job of an unknown kind at `minIntervalMs`. Each read that finds it still running is
 *   followed by one `minIntervalMs` later, then 1.5 times longer each time up to the interval
 *   (`intervalMs`, or the n-th wait of an interval function). A job timed from its create teaches the
 *   model what its reads showed (job-durations.ts).
 * - `fixed`: read every interval, from one interval after its wait began.
 *
 * The pipeline keeps one poller for a whole batch; generations.wait makes one per call. Reads go
 * through the client's `generations.get`, which also tells the client's concurrency governor about
 * jobs that ended, so held creates are released as soon as a slot frees.
 */
import { TERMINAL_GENERATION_STATES } from '../spec/index.ts';
import { RateLimitError } from './errors.ts';
import type { JobDurations } from './job-durations.ts';
import { adaptiveDelay, firstReadAt, type PollScheduleName } from './poll-schedule.ts';
import { ReadBudget } from './read-budget.ts';
import { DEFAULT_RETRY_POLICY } from './retry-policy.ts';
import { abortReason, timerDelay } from './sleep.ts';
import type { Generation } from './types.ts';

/** Defaults of a poller, in one place. */
export const POLLER_DEFAULTS = {
  /** Time between two reads of the same job (the interface recommends 2–5 s). */
  intervalMs: 2_000,
  /**
   * Reads per second at most, across all jobs. The abuse ceiling's value is not shown; 20/s stays far
   * below any plausible per-client ceiling (the emulator's default is 6000 per minute) while reading 40
   * jobs per 2 s cycle.
   */
  maxGetsPerSecond: 20,
  /**
   * Reads out at once at most: enough to keep `maxGetsPerSecond` reads a second going over a slow
   * link (20/s with 1.5 s round trips is 30 out), few enough not to open a crowd of connections.
   */
  maxReadsInFlight: 32,
  /** Wait before the next read after a 429 without Retry-After. */
  rateLimitedBackoffMs: DEFAULT_RETRY_POLICY.rateLimitFallbackMs,
  /**
   * Shortest time between two reads of one job, and from a job's create to its first read, under the
   * adaptive schedule: the interface accepts polling every 1 to 5 s.
   */
  minIntervalMs: 1_000,
  schedule: 'adaptive' as PollScheduleName,
} as const;

/** Settings of a poller. */
export interface PollerOptions {
  /** Reads one generation (the client's generations.get). */
  get: (id: string, options: { signal?: AbortSignal }) => Promise<Generation>;
  /**
   * Time between two reads of the same job: a number of ms, or the wait number `n` of a job (0 for
   * the first) in ms.
   */
  intervalMs?: number | ((n: number) => number);
  /** Reads per second at most, across all jobs (Infinity: no cap). */
  maxGetsPerSecond?: number;
  /** Reads out at once at most (default 32). */
  maxReadsInFlight?: number;
  /** How reads are timed (default adaptive; see the module comment). */
  schedule?: PollScheduleName;
  /**
   * The adaptive schedule's shortest wait (default 1000, or the interval when it is a lower number: a
   * test against the emulator). Never lower it against the real service.
   */
  minIntervalMs?: number;
  /** Learns and tells how long jobs of each kind take (adaptive schedule). */
  durations?: JobDurations;
  /** A read that still gets a 429 after the client's retries: read again later (default) or fail. */
  rateLimitedReads?: 'defer' | 'fail';
  /** Stops the loop (and cancels its reads): every waiter rejects with the signal's reason. */
  signal?: AbortSignal;
  now?: () => number;
}

/** Options of one wait on a poller. */
export interface PollWaitOptions {
  /** Stops waiting for this job only (rejects with its reason). */
  signal?: AbortSignal | undefined;
  /** Read the job at once instead of one interval after it joined. */
  readNow?: boolean;
  /** Hears every read of the job (before a terminal one settles the wait). */
  onRead?: ((generation: Generation) => void) | undefined;
  /** The job's kind (jobKindOf of its request), for the adaptive schedule's duration model. */
  kind?: string | undefined;
  /**
   * When the job was created (its create's answer), ms since the epoch: its first read is timed from
   * it, and a job that joined by its earliest read teaches the duration model.
   */
  createdAt?: number | undefined;
}

interface Waiter {
  resolve: (g: Generation) => void;
  reject: (e: unknown) => void;
  onRead: ((generation: Generation) => void) | undefined;
}

interface Job {
  id: string;
  /** When the job is read next (ms since the epoch). */
  nextAt: number;
  /** Waits scheduled so far (the `n` of an interval function). */
  waits: number;
  waiters: Waiter[];
  /** Its kind and create time when known and it joined in time to be timed (it teaches the model). */
  timed: { kind: string; createdAt: number } | null;
  /** ms from its create to the last read that found it running (0: none). */
  runningAtMs: number;
  /** A read of it is out. */
  reading: boolean;
}

function isTerminal(state: string): boolean {
  return (TERMINAL_GENERATION_STATES as readonly string[]).includes(state);
}

/** The poll loop (see the module comment). */
export class GenerationPoller {
  /** Time between two reads of the same job (null when given as a function). */
  readonly intervalMs: number | null;
  private readonly interval: (n: number) => number;
  private readonly budget: ReadBudget;
  private readonly maxReadsInFlight: number;
  /** Reads out now. */
  private inFlight = 0;
  private readonly adaptive: boolean;
  private readonly minIntervalMs: number;
  private readonly durations: JobDurations | undefined;
  private readonly getFn: PollerOptions['get'];
  private readonly failRateLimited: boolean;
  private readonly signal: AbortSignal | undefined;
  private readonly now: () => number;
  private readonly jobs = new Map<string, Job>();
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private wake: (() => void) | null = null;
  private closed = false;
  /** GETs made so far (for tests and benches). */
  gets = 0;

  constructor(options: PollerOptions) {
    this.getFn = options.get;
    const interval = options.intervalMs ?? POLLER_DEFAULTS.intervalMs;
    if (typeof interval === 'number') {
      const fixed = Math.max(1, interval);
      this.interval = () => fixed;
    } else {
      this.interval = (n) => Math.max(0, interval(n));
    }
    this.intervalMs = typeof interval === 'number' ? Math.max(1, interval) : null;
    this.adaptive = (options.schedule ?? POLLER_DEFAULTS.schedule) === 'adaptive';
    this.minIntervalMs = Math.max(
      1,
      options.minIntervalMs ?? Math.min(POLLER_DEFAULTS.minIntervalMs, this.intervalMs ?? Infinity),
    );
    this.durations = options.durations;
    this.budget = new ReadBudget(options.maxGetsPerSecond ?? POLLER_DEFAULTS.maxGetsPerSecond);
    this.maxReadsInFlight = Math.max(
      1,
      Math.floor(options.maxReadsInFlight ?? POLLER_DEFAULTS.maxReadsInFlight),
    );
    this.failRateLimited = options.rateLimitedReads === 'fail';
    this.signal = options.signal;
    this.now = options.now ?? Date.now;
    this.signal?.addEventListener('abort', () => this.close(abortReason(this.signal as AbortSignal)), {
      once: true,
    });
  }

  /** Jobs being waited on. */
  get outstanding(): number {
    return this.jobs.size;
  }

  /**
   * Resolves with the generation once a read finds it completed or failed.
   *
   * @param id - the generation id
   * @param options - a signal that stops waiting for this job only (rejects with its reason), or the
   *   signal itself; readNow; onRead
   * @throws what the read threw when it was not a rate limit (NotFoundError, a batch-stopping error)
   * @example const done = await poller.wait(gen.id, signal);
   */
  wait(id: string, options: PollWaitOptions | AbortSignal = {}): Promise<Generation> {
    const opts: PollWaitOptions = options instanceof AbortSignal ? { signal: options } : options;
    const { signal, readNow, onRead } = opts;
    if (this.closed) return Promise.reject(new Error('the poller is closed'));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<Generation>((resolve, reject) => {
      let job = this.jobs.get(id);
      if (!job) {
        job = this.newJob(id, opts);
        this.jobs.set(id, job);
      } else if (readNow) {
        job.nextAt = Math.min(job.nextAt, this.now());
      }
      const waiter: Waiter = {
        resolve: (g: Generation) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(g);
        },
        reject: (e: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
        onRead,
      };
      const onAbort = () => {
        const j = this.jobs.get(id);
        if (j) {
          j.waiters = j.waiters.filter((w) => w !== waiter);
          if (j.waiters.length === 0) this.jobs.delete(id);
        }
        reject(abortReason(signal as AbortSignal));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      job.waiters.push(waiter);
      if (!this.running) void this.loop();
      else if (job.waiters.length === 1) this.interrupt(); // the loop may sleep past this job's first read
    });
  }

  /** A job joining now, with its first read scheduled. */
  private newJob(id: string, opts: PollWaitOptions): Job {
    const now = this.now();
    const job: Job = {
      id,
      nextAt: now,
      waits: 0,
      waiters: [],
      timed: null,
      runningAtMs: 0,
      reading: false,
    };
    const { kind, createdAt } = opts;
    if (!this.adaptive) {
      if (!opts.readNow) job.nextAt += this.interval(job.waits++);
      return job;
    }
    const since = createdAt === undefined ? now : Math.min(createdAt, now);
    if (kind !== undefined && createdAt !== undefined && now - since <= this.minIntervalMs) {
      job.timed = { kind, createdAt: since };
    }
    if (!opts.readNow) {
      const expected = kind === undefined ? null : (this.durations?.expectedMs(kind) ?? null);
      job.nextAt = firstReadAt({ createdAt: since, joinedAt: now }, expected, this.minIntervalMs);
    }
    return job;
  }

  /** When a job that a read sent at `sentAt` found still running is read next. */
  private nextReadAt(job: Job, sentAt: number): number {
    if (!this.adaptive) return this.now() + this.interval(job.waits++);
    if (job.timed) job.runningAtMs = sentAt - job.timed.createdAt;
    return sentAt + adaptiveDelay(job.waits, this.minIntervalMs, this.interval(job.waits++));
  }

  /** A timed job found ended by the read sent at `sentAt`: the model learns its bracket. */
  private learn(job: Job, sentAt: number): void {
    if (!job.timed || !this.durations) return;
    const doneByMs = sentAt - job.timed.createdAt;
    this.durations.record(job.timed.kind, { runningAtMs: job.runningAtMs, doneByMs });
  }

  /** Stops the loop; waiters still pending reject with `reason`. */
  close(reason: unknown = new Error('the poller was closed')): void {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.jobs.values()) for (const w of job.waiters) w.reject(reason);
    this.jobs.clear();
    this.interrupt();
  }

  private interrupt(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Sleeps `ms` (null: until interrupted, as when a read comes back) unless closed meanwhile. */
  private sleep(ms: number | null): Promise<void> {
    if (this.closed || (ms !== null && ms <= 0)) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
      if (ms === null) return;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.wake = null;
        resolve();
      }, timerDelay(ms));
    });
  }

  private settle(job: Job, outcome: { ok: true; value: Generation } | { ok: false; error: unknown }): void {
    this.jobs.delete(job.id);
    for (const w of job.waiters) {
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    }
  }

  private nextDue(): Job | null {
    let best: Job | null = null;
    for (const job of this.jobs.values()) {
      if (!job.reading && (!best || job.nextAt < best.nextAt)) best = job;
    }
    return best;
  }

  private async loop(): Promise<void> {
    this.running = true;
    try {
      while (!this.closed) {
        if (this.jobs.size === 0) break;
        const job = this.inFlight < this.maxReadsInFlight ? this.nextDue() : null;
        if (!job) {
          await this.sleep(null); // every job is being read, or too many reads are out
          continue;
        }
        const now = this.now();
        const at = this.budget.nextAt(job.nextAt);
        if (at > now) {
          await this.sleep(at - now);
          continue; // the set of jobs may have changed meanwhile
        }
        this.budget.took(now);
        this.gets++;
        void this.read(job, now);
      }
    } finally {
      this.running = false;
    }
  }

  /** One read of `job`, sent at `sentAt`, out alongside the others; wakes the loop when it is back. */
  private async read(job: Job, sentAt: number): Promise<void> {
    job.reading = true;
    this.inFlight++;
    try {
      const generation = await this.getFn(job.id, this.signal ? { signal: this.signal } : {});
      if (this.jobs.get(job.id) !== job) return; // abandoned meanwhile
      for (const w of [...job.waiters]) w.onRead?.(generation);
      if (this.jobs.get(job.id) !== job) return; // a waiter left on what it read
      if (isTerminal(generation.state)) {
        this.learn(job, sentAt);
        this.settle(job, { ok: true, value: generation });
      } else {
        job.nextAt = this.nextReadAt(job, sentAt);
      }
    } catch (error) {
      if (this.closed || this.jobs.get(job.id) !== job) return;
      if (error instanceof RateLimitError && !this.failRateLimited) {
        job.nextAt = this.now() + (error.retryAfterMs ?? POLLER_DEFAULTS.rateLimitedBackoffMs);
      } else {
        this.settle(job, { ok: false, error });
      }
    } finally {
      job.reading = false;
      this.inFlight--;
      this.interrupt();
    }
  }
}
