/**
 * The one poll loop of a batch: every submitted job is waited on through it, not through a timer of
 * its own. It is the client's GenerationPoller (src/client/generation-poller.ts), the loop
 * generations.wait uses too, kept for the whole batch. Under the adaptive schedule (the default) each
 * job is read first when jobs of its kind were seen ended — in this batch, or in earlier ones when the
 * store seeded the model — and no sooner than 1 s after its create, then 1 s later, growing to
 * `intervalMs` (the interface recommends 2 to 5 s and accepts 1 to 5); under the fixed one, every
 * `intervalMs` from `intervalMs` after it joined. Reads due together go out together (up to
 * `maxReadsInFlight` at once), at most `maxGetsPerSecond` in any one second, so a large batch stretches its cycle instead of approaching
 * the service's API-wide abuse ceiling. A 429 that outlasts the client's retries pushes that job's next
 * read back by its Retry-After.
 */
// From the modules that define them, not the client's index: the defaults are read by the commands'
// definitions (their --help), which load no HTTP client.
import { POLLER_DEFAULTS } from '../client/generation-poller.ts';

export { GenerationPoller, type PollerOptions } from '../client/generation-poller.ts';
export { type JobDurations, jobKindOf, RecentJobDurations } from '../client/job-durations.ts';

/** Defaults of the batch's poll loop, in one place. */
export const POLL_DEFAULTS = {
  /** Time between two reads of the same job (the interface recommends 2–5 s). */
  intervalMs: POLLER_DEFAULTS.intervalMs,
  /** Shortest interval accepted (the interface's lower bound, 1 s). */
  minIntervalMs: POLLER_DEFAULTS.minIntervalMs,
  /** Reads per second at most, across all jobs (see POLLER_DEFAULTS). */
  maxGetsPerSecond: POLLER_DEFAULTS.maxGetsPerSecond,
  /** Wait before the next read after a 429 without Retry-After. */
  rateLimitedBackoffMs: POLLER_DEFAULTS.rateLimitedBackoffMs,
  /** How reads are timed: adaptive (learned durations) or fixed (every interval). */
  schedule: POLLER_DEFAULTS.schedule,
} as const;
