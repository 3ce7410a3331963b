/**
 * How often wait() reads a generation (or a file): the interface recommends every 2 to 5 seconds and
 * accepts 1 to 5. The first wait is `intervalMs`, each next one 1.5 times longer up to `maxIntervalMs`,
 * each stretched by up to `jitter` so that many waiters do not poll in step.
 */

/**
 * How a generation's reads are timed: `adaptive` (the default) reads a job first when jobs of its kind
 * were seen ended (src/client/job-durations.ts), no sooner than the lowest interval after its create,
 * then at growing intervals from the lowest one; `fixed` reads it every interval from when its wait
 * began (the schedule of earlier versions, kept as a baseline to measure against).
 */
export type PollScheduleName = 'adaptive' | 'fixed';

/** The schedules, for flags and checks. */
export const POLL_SCHEDULES: readonly PollScheduleName[] = ['adaptive', 'fixed'];

/** Polling settings; all in ms. */
export interface PollSettings {
  /** First wait (default 2000). Raised to floorMs when lower. */
  intervalMs: number;
  /** Longest wait (default 5000). */
  maxIntervalMs: number;
  /**
   * Lowest interval accepted (default 1000, the interface's lower bound). TEST-ONLY knob: tests against
   * the emulator lower it to poll every few ms; never lower it against the real service.
   */
  floorMs: number;
  /** Fraction a wait is stretched by at most (default 0.2). */
  jitter: number;
  /** How generations.wait times its reads (default adaptive; files are always polled by pollDelay). */
  schedule: PollScheduleName;
}

/** The defaults, in one place. */
export const DEFAULT_POLL_SETTINGS: Readonly<PollSettings> = Object.freeze({
  intervalMs: 2_000,
  maxIntervalMs: 5_000,
  floorMs: 1_000,
  jitter: 0.2,
  schedule: 'adaptive',
});

/**
 * The settings from those given, the defaults for the rest: a longest wait given without a first one
 * lowers the default first wait to it (a longest wait of 1 s reads every second from the start).
 *
 * @example pollSettingsOf({ maxIntervalMs: 1_000 }).intervalMs // 1000
 */
export function pollSettingsOf(given: Partial<PollSettings> = {}): PollSettings {
  const settings = { ...DEFAULT_POLL_SETTINGS, ...given };
  if (given.intervalMs === undefined)
    settings.intervalMs = Math.min(settings.intervalMs, settings.maxIntervalMs);
  return settings;
}

const GROWTH = 1.5;

/**
 * The wait before poll number `n` (0 for the wait after the first read).
 *
 * @param n - how many waits came before this one
 * @param settings - the resolved settings
 * @param random - a source in [0, 1), for tests
 * @example pollDelay(0, DEFAULT_POLL_SETTINGS) // 2000..2400
 */
export function pollDelay(n: number, settings: PollSettings, random: () => number = Math.random): number {
  const first = Math.max(settings.floorMs, settings.intervalMs);
  const top = Math.max(first, settings.maxIntervalMs);
  const base = Math.min(top, first * GROWTH ** n);
  return Math.round(Math.min(top, base * (1 + settings.jitter * random())));
}

/**
 * When the adaptive schedule reads a job first: when jobs of its kind were seen ended (`expectedMs`
 * after its create), never sooner than `minMs` after its create, and never before it joined.
 *
 * @param job.createdAt - when the job was created (its create's answer), ms since the epoch
 * @param job.joinedAt - when its wait began
 * @param expectedMs - the duration model's expectation for its kind; null when unknown
 * @example firstReadAt({ createdAt: 0, joinedAt: 10 }, 5_000, 1_000) // 5000
 */
export function firstReadAt(
  job: { createdAt: number; joinedAt: number },
  expectedMs: number | null,
  minMs: number,
): number {
  return Math.max(job.joinedAt, job.createdAt + Math.max(minMs, expectedMs ?? minMs));
}

/**
 * The adaptive schedule's wait after the `n`-th read (0 for the first) that found a job still running:
 * `minMs` growing 1.5 times per read, up to `capMs` (a cap below `minMs` wins: a deadline).
 *
 * @example adaptiveDelay(2, 1_000, 2_000) // 2000 (1000, 1500, then capped)
 */
export function adaptiveDelay(n: number, minMs: number, capMs: number): number {
  return Math.min(capMs, minMs * GROWTH ** n);
}
