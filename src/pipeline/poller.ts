/**
 * The one poll loop of a batch: every submitted job is waited on through it, not through a timer of
 * its own. Each job is read (GET /v1/generations/{id}) every `intervalMs` — the interface recommends
 * 2 to 5 s and accepts 1 to 5 — starting `intervalMs` after it joined; reads are made one at a time,
 * at least `1000 / maxGetsPerSecond` ms apart, so a large batch stretches its cycle instead of
 * approaching the service's API-wide abuse ceiling. A 429 that outlasts the client's retries pushes
 * that job's next read back by its Retry-After.
 *
 * Reads go through the client's `generations.get`, which also tells the client's concurrency governor
 * about jobs that ended, so held creates are released as soon as a slot frees.
 */
import { abortReason, type Generation, RateLimitError } from '../client/index.ts';
import { TERMINAL_GENERATION_STATES } from '../spec/index.ts';

/** Defaults of the poll loop, in one place. */
export const POLL_DEFAULTS = {
  /** Time between two reads of the same job (the interface recommends 2–5 s). */
  intervalMs: 2_000,
  /** Shortest interval accepted against a real service (the interface's lower bound, 1 s). */
  minIntervalMs: 1_000,
  /**
   * Reads per second at most, across all jobs. The abuse ceiling's value is not shown; 20/s stays far
   * below any plausible per-client ceiling (the emulator's default is 6000 per minute) while reading 40
   * jobs per 2 s cycle.
   */
  maxGetsPerSecond: 20,
  /** Wait before the next read after a 429 without Retry-After. */
  rateLimitedBackoffMs: 1_000,
} as const;

/** Settings of a poller. */
export interface PollerOptions {
  /** Reads one generation (the client's generations.get). */
  get: (id: string, options: { signal?: AbortSignal }) => Promise<Generation>;
  /** Time between two reads of the same job. */
  intervalMs?: number;
  /** Reads per second at most, across all jobs. */
  maxGetsPerSecond?: number;
  /** Stops the loop: every waiter rejects with the signal's reason. */
  signal?: AbortSignal;
  now?: () => number;
}

interface Job {
  id: string;
  /** When the job is read next (ms since the epoch). */
  nextAt: number;
  waiters: Array<{ resolve: (g: Generation) => void; reject: (e: unknown) => void }>;
}

function isTerminal(state: string): boolean {
  return (TERMINAL_GENERATION_STATES as readonly string[]).includes(state);
}

/** The shared poll loop (see the module comment). */
export class GenerationPoller {
  readonly intervalMs: number;
  private readonly gapMs: number;
  private readonly getFn: PollerOptions['get'];
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
    this.intervalMs = Math.max(1, options.intervalMs ?? POLL_DEFAULTS.intervalMs);
    this.gapMs = 1000 / Math.max(0.001, options.maxGetsPerSecond ?? POLL_DEFAULTS.maxGetsPerSecond);
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
   * @param signal - stops waiting for this job only (rejects with its reason)
   * @throws what the read threw when it was not a rate limit (NotFoundError, a batch-stopping error)
   * @example const done = await poller.wait(gen.id, signal);
   */
  wait(id: string, signal?: AbortSignal): Promise<Generation> {
    if (this.closed) return Promise.reject(new Error('the poller is closed'));
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<Generation>((resolve, reject) => {
      let job = this.jobs.get(id);
      if (!job) {
        job = { id, nextAt: this.now() + this.intervalMs, waiters: [] };
        this.jobs.set(id, job);
      }
      const waiter = {
        resolve: (g: Generation) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(g);
        },
        reject: (e: unknown) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
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
          if (isTerminal(generation.state)) this.settle(job, { ok: true, value: generation });
          else job.nextAt = this.now() + this.intervalMs;
        } catch (error) {
          if (this.closed || this.jobs.get(job.id) !== job) continue;
          if (error instanceof RateLimitError) {
            job.nextAt = this.now() + (error.retryAfterMs ?? POLL_DEFAULTS.rateLimitedBackoffMs);
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
