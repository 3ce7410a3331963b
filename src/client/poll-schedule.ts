/**
 * How often wait() reads a generation (or a file): the interface recommends every 2 to 5 seconds and
 * accepts 1 to 5. The first wait is `intervalMs`, each next one 1.5 times longer up to `maxIntervalMs`,
 * each stretched by up to `jitter` so that many waiters do not poll in step.
 */

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
}

/** The defaults, in one place. */
export const DEFAULT_POLL_SETTINGS: Readonly<PollSettings> = Object.freeze({
  intervalMs: 2_000,
  maxIntervalMs: 5_000,
  floorMs: 1_000,
  jitter: 0.2,
});

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
