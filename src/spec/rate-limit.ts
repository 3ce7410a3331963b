/**
 * Sliding-window rate-limit math and the rate-limit headers, as pure functions of timestamps.
 * The emulator enforces limits with them; the client can use them to read headers the same way.
 *
 * A request made at `t` (ms) is inside the window at `now` while `now - t < window`; it ages out at
 * exactly `t + window`. Header times are whole seconds, rounded up so that a caller who waits until
 * them is never early (rules 1 and 2 of the interface).
 */
import { LIMITS } from './limits.ts';

/** Header names, spelled once. */
export const RATE_HEADERS = {
  limit: 'X-RateLimit-Limit',
  remaining: 'X-RateLimit-Remaining',
  reset: 'X-RateLimit-Reset',
  retryAfter: 'Retry-After',
} as const;

/** `detail` of the two 429s of POST /v1/generations, as the interface gives them. */
export const RATE_LIMIT_DETAILS = {
  rpm: 'Rate limit exceeded',
  concurrency: 'Too many concurrent jobs',
} as const;

/** `detail` of the 402 of POST /v1/generations (the other admission check, after both limits). */
export const INSUFFICIENT_BALANCE_DETAIL = 'Insufficient balance. Please add funds to continue.';

function windowMs(windowSeconds: number): number {
  return windowSeconds * 1000;
}

/**
 * How many of the oldest entries of an ascending log have aged out at `now`.
 * @example agedOutCount([0, 30_000], 60_000, 60) // 1
 */
export function agedOutCount(log: readonly number[], now: number, windowSeconds: number): number {
  const w = windowMs(windowSeconds);
  let n = 0;
  while (n < log.length && now - (log[n] as number) >= w) n += 1;
  return n;
}

/** The entries of an ascending log still inside the window at `now` (a new array). */
export function liveEntries(log: readonly number[], now: number, windowSeconds: number): number[] {
  return log.slice(agedOutCount(log, now, windowSeconds));
}

/**
 * Seconds to wait before the oldest entry ages out: ceil((oldest + window) - now), at least 1
 * (rule 1).
 */
export function retryAfterSeconds(oldest: number, now: number, windowSeconds: number): number {
  return Math.max(1, Math.ceil((oldest + windowMs(windowSeconds) - now) / 1000));
}

/** Unix seconds (rounded up) at which an entry made at `t` ages out. */
export function agesOutAt(t: number, windowSeconds: number): number {
  return Math.ceil((t + windowMs(windowSeconds)) / 1000);
}

export type RateDecision =
  | {
      allowed: true;
      /** Allowance left after this request is counted. */
      remaining: number;
      /** Unix seconds: now + window (rule 2). */
      reset: number;
    }
  | {
      allowed: false;
      remaining: 0;
      /** Unix seconds at which the oldest entry ages out (rule 2). */
      reset: number;
      /** Seconds until a slot frees up, at least 1 (rule 1). */
      retryAfter: number;
    };

/**
 * Decides one request against a sliding window.
 * @param live ascending timestamps (ms) already inside the window (see liveEntries)
 * @param now the request's time (ms)
 * @param limit allowance per window
 * @param windowSeconds window length in seconds
 * @example
 * decideRate([], 0, 2, 60) // { allowed: true, remaining: 1, reset: 60 }
 * decideRate([0, 10_000], 15_000, 2, 60) // { allowed: false, remaining: 0, reset: 60, retryAfter: 45 }
 */
export function decideRate(
  live: readonly number[],
  now: number,
  limit: number,
  windowSeconds: number,
): RateDecision {
  if (live.length < limit) {
    return { allowed: true, remaining: limit - live.length - 1, reset: agesOutAt(now, windowSeconds) };
  }
  // The slot that frees first is that of the oldest entry that keeps the count at the limit.
  const oldest = live[live.length - limit] as number;
  return {
    allowed: false,
    remaining: 0,
    reset: agesOutAt(oldest, windowSeconds),
    retryAfter: retryAfterSeconds(oldest, now, windowSeconds),
  };
}

/** Headers of a request inside its allowance (201): X-RateLimit-Limit, -Remaining, -Reset (rule 6). */
export function rateLimitHeaders(limit: number, remaining: number, reset: number): Record<string, string> {
  return {
    [RATE_HEADERS.limit]: String(limit),
    [RATE_HEADERS.remaining]: String(Math.max(0, remaining)),
    [RATE_HEADERS.reset]: String(reset),
  };
}

/** Headers of a request-rate 429: the three X-RateLimit-* (Remaining 0) plus Retry-After (rule 6). */
export function rpmRejectedHeaders(limit: number, reset: number, retryAfter: number): Record<string, string> {
  return { ...rateLimitHeaders(limit, 0, reset), [RATE_HEADERS.retryAfter]: String(retryAfter) };
}

/** Headers of a concurrent-jobs 429: only Retry-After, fixed at 60 (rule 6). */
export function concurrencyRejectedHeaders(): Record<string, string> {
  return { [RATE_HEADERS.retryAfter]: String(LIMITS.concurrencyRetryAfterSeconds) };
}

/** Headers of an abuse-ceiling 429: only Retry-After. */
export function abuseRejectedHeaders(retryAfter: number): Record<string, string> {
  return { [RATE_HEADERS.retryAfter]: String(retryAfter) };
}
