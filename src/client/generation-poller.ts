/**
 * The one poll loop of generations: every job waited on through a poller is read (GET
 * /v1/generations/{id}) from its own schedule — every `intervalMs`, or the n-th wait of an interval
 * function (generations.wait uses the client's growing, jittered pollDelay) — by one loop that makes
 * its reads one at a time, at least `1000 / maxGetsPerSecond` ms apart, so a large batch stretches its
 * cycle instead of approaching the service's API-wide abuse ceiling. A 429 that outlasts the client's
 * retries pushes that job's next read back by its Retry-After (or, with `rateLimitedReads: 'fail'`,
 * ends its wait with the RateLimitError).
 *
 * The pipeline keeps one poller for a whole batch; generations.wait makes one per call. Reads go
 * through the client's `generations.get`, which also tells the client's concurrency governor about
 * jobs that ended, so held creates are released as soon as a slot frees.
 */
import { TERMINAL_GENERATION_STATES } from '../spec/index.ts';
import { RateLimitError } from './errors.ts';
import { DEFAULT_RETRY_POLICY } from './retry-policy.ts';
import { abortReason } from './sleep.ts';
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
  /** Wait before the next read after a 429 without Retry-After. */
  rateLimitedBackoffMs: DEFAULT_RETRY_POLICY.rateLimitFallbackMs,
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
}

function isTerminal(state: string): boolean {
  return (TERMINAL_GENERATION_STATES as readonly string[]).includes(state);
}

/** The poll loop (see the module comment). */
export class GenerationPoller {
  /** Time between two reads of the same job (null when given as a function). */
  readonly intervalMs: number | null;
  private readonly interval: (n: number) => number;
  private readonly gapMs: number;
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
    this.gapMs = 1000 / Math.max(0.001, options.maxGetsPerSecond ?? POLLER_DEFAULTS.maxGetsPerSecond);
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
    const { signal, readNow, onRead } = options instanceof AbortSignal ? { signal: options } : options;
    if (this.closed) return Promise.reject(new Error('the poller is closed'));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<Generation>((resolve, reject) => {
      let job = this.jobs.get(id);
      if (!job) {
        job = { id, nextAt: this.now(), waits: 0, waiters: [] };
        if (!readNow) job.nextAt += this.interval(job.waits++);
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

  /** Sleeps `ms` unless closed meanwhile. */
  private sleep(ms: number): Promise<void> {
    if (this.closed || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.wake = null;
        resolve();
      }, ms);
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
    for (const job of this.jobs.values()) if (!best || job.nextAt < best.nextAt) best = job;
    return best;
  }

  private async loop(): Promise<void> {
    this.running = true;
    let lastGetAt = Number.NEGATIVE_INFINITY;
    try {
      while (!this.closed) {
        const job = this.nextDue();
        if (!job) break;
        const now = this.now();
        const at = Math.max(job.nextAt, lastGetAt + this.gapMs);
        if (at > now) {
          await this.sleep(at - now);
          continue; // the set of jobs may have changed meanwhile
        }
        lastGetAt = now;
        this.gets++;
        try {
          const generation = await this.getFn(job.id, this.signal ? { signal: this.signal } : {});
          if (this.jobs.get(job.id) !== job) continue; // abandoned meanwhile
          for (const w of [...job.waiters]) w.onRead?.(generation);
          if (this.jobs.get(job.id) !== job) continue; // a waiter left on what it read
          if (isTerminal(generation.state)) this.settle(job, { ok: true, value: generation });
          else job.nextAt = this.now() + this.interval(job.waits++);
        } catch (error) {
          if (this.closed || this.jobs.get(job.id) !== job) continue;
          if (error instanceof RateLimitError && !this.failRateLimited) {
            job.nextAt = this.now() + (error.retryAfterMs ?? POLLER_DEFAULTS.rateLimitedBackoffMs);
          } else {
            this.settle(job, { ok: false, error });
          }
        }
      }
    } finally {
      this.running = false;
    }
  }
}
