/**
 * When and how long to retry, following the interface's error table. Every default is in one block,
 * {@link DEFAULT_RETRY_POLICY}; the decision is two small pure functions, {@link shouldRetry} and
 * {@link retryDelay}.
 *
 * Two retry classes:
 * - `idempotent` (GET, DELETE, complete, the PUT of a presigned upload): retried on connection errors,
 *   timeouts, 429, 502 and 503.
 * - `create` (POST /v1/generations, the legacy modify: a paid job): retried only when the service
 *   certainly did not act on it — 429, 502, 503, and a connection that failed before the request was
 *   written in full. Never after a lost response (see LostResponseError). 402 is certain too, but the
 *   interface calls it not retryable (add funds), so it is thrown at once.
 * - `upload` (POST /v1/files): an upload costs nothing, so it is retried as an idempotent call is, a
 *   lost answer (LostUploadError) included; what the lost answer left at the service is the caller's
 *   to delete (files.ts).
 *
 * A 429 may be given a budget of its own (`maxRateLimitRetries`, counted on the same attempts): a
 * caller that would rather wait out a rate limit than fail (the pipeline's submit) raises it per call.
 * Resubmitting a generation that failed with a retryable failure_code — a new create, after the job
 * failed — waits {@link resubmitDelay}, the same backoff computation.
 */
import {
  ConnectionError,
  GenpipeError,
  LostUploadError,
  RateLimitError,
  TimeoutError,
  UpstreamError,
} from './errors.ts';

/** A range of milliseconds a wait is drawn from (uniformly). */
export interface DelayRange {
  minMs: number;
  maxMs: number;
}

/** Every retry knob. Tests shrink the delays through the client's `retry` option. */
export interface RetryPolicy {
  /** Retries after the first attempt (so at most maxRetries + 1 attempts). */
  maxRetries: number;
  /** Attempts after which a 429 is no longer retried (null: maxRetries, like every other error). */
  maxRateLimitRetries: number | null;
  /** First wait after a 502: the interface's "5 to 10 seconds". */
  upstream: DelayRange;
  /** First wait after a 503 (image ingestion unavailable). */
  ingestion: DelayRange;
  /** First wait after a connection error or timeout. */
  connection: DelayRange;
  /** Each further retry of the same kind waits this many times longer. */
  backoffFactor: number;
  /** No computed wait is longer than this (Retry-After of a concurrency 429 is honoured as given). */
  maxDelayMs: number;
  /** Wait after a 429 that carries no Retry-After. */
  rateLimitFallbackMs: number;
  /** First wait before resubmitting a generation that failed with a retryable failure_code. */
  resubmit: DelayRange;
}

/** The defaults, in one place. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 3,
  maxRateLimitRetries: null,
  upstream: { minMs: 5_000, maxMs: 10_000 },
  ingestion: { minMs: 1_000, maxMs: 2_000 },
  connection: { minMs: 250, maxMs: 1_000 },
  backoffFactor: 2,
  maxDelayMs: 60_000,
  rateLimitFallbackMs: 1_000,
  resubmit: { minMs: 2_000, maxMs: 4_000 },
});

/** The policy with the caller's overrides (nested ranges may be given in part). */
export function resolveRetryPolicy(
  overrides: Partial<Omit<RetryPolicy, 'upstream' | 'ingestion' | 'connection' | 'resubmit'>> & {
    upstream?: Partial<DelayRange>;
    ingestion?: Partial<DelayRange>;
    connection?: Partial<DelayRange>;
    resubmit?: Partial<DelayRange>;
  } = {},
  maxRetries?: number,
): RetryPolicy {
  const d = DEFAULT_RETRY_POLICY;
  return {
    ...d,
    ...overrides,
    maxRetries: maxRetries ?? overrides.maxRetries ?? d.maxRetries,
    upstream: { ...d.upstream, ...overrides.upstream },
    ingestion: { ...d.ingestion, ...overrides.ingestion },
    connection: { ...d.connection, ...overrides.connection },
    resubmit: { ...d.resubmit, ...overrides.resubmit },
  };
}

/** Which retry rules a call follows. */
export type RetryClass = 'idempotent' | 'create' | 'upload';

/** The knobs of how many retries an error gets. */
export type RetryBudget = Pick<RetryPolicy, 'maxRetries'> & Partial<Pick<RetryPolicy, 'maxRateLimitRetries'>>;

/**
 * Retries allowed after an attempt that failed with `error`: `maxRateLimitRetries` for a 429 when
 * set, else `maxRetries`.
 */
export function retryBudget(error: unknown, policy: RetryBudget): number {
  if (error instanceof RateLimitError) return policy.maxRateLimitRetries ?? policy.maxRetries;
  return policy.maxRetries;
}

/**
 * Whether a failed attempt may be repeated.
 *
 * @param error - what the attempt threw
 * @param attempt - 1 for the first attempt
 * @param retryClass - `idempotent`, `create` or `upload` (see the module comment)
 * @param policy - for maxRetries (and maxRateLimitRetries)
 * @example shouldRetry(new UpstreamError(...502...), 1, 'create', DEFAULT_RETRY_POLICY) // true
 */
export function shouldRetry(
  error: unknown,
  attempt: number,
  retryClass: RetryClass,
  policy: RetryBudget,
): boolean {
  if (attempt > retryBudget(error, policy)) return false;
  if (!(error instanceof GenpipeError)) return false;
  if (error instanceof RateLimitError || error instanceof UpstreamError) return true;
  if (retryClass === 'upload' && error instanceof LostUploadError) return true;
  if (retryClass !== 'create') return error instanceof ConnectionError || error instanceof TimeoutError;
  // create: only when the request certainly did not reach the service whole.
  return notActedOn(error);
}

/**
 * True when a create that failed with `error` certainly queued nothing: a 429, 502 or 503 answer, or a
 * connection that failed before the request was written in full (the errors a create is retried on).
 */
export function notActedOn(error: unknown): boolean {
  if (error instanceof RateLimitError || error instanceof UpstreamError) return true;
  return (error instanceof ConnectionError || error instanceof TimeoutError) && !error.sent;
}

function draw(range: DelayRange, random: () => number): number {
  return range.minMs + (range.maxMs - range.minMs) * random();
}

/** `range` scaled by backoffFactor^(n-1), drawn uniformly, capped at maxDelayMs. */
export function backoffDelay(
  range: DelayRange,
  n: number,
  policy: Pick<RetryPolicy, 'backoffFactor' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number {
  const scaled = draw(range, random) * policy.backoffFactor ** Math.max(0, n - 1);
  return Math.round(Math.min(policy.maxDelayMs, scaled));
}

/**
 * How long to wait before the next attempt.
 * 429: Retry-After as given (seconds or HTTP date), else rateLimitFallbackMs. 502: 5–10 s, then with
 * backoff. 503: the ingestion range with backoff. Connection errors and timeouts: the connection
 * range with backoff.
 *
 * @param error - what the attempt threw
 * @param attempt - 1 for the first attempt (the wait after it is the first wait)
 * @param policy - the resolved policy
 * @param random - a source in [0, 1), for tests
 */
export function retryDelay(
  error: unknown,
  attempt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  if (error instanceof RateLimitError) return error.retryAfterMs ?? policy.rateLimitFallbackMs;
  if (error instanceof UpstreamError) {
    return backoffDelay(error.status === 502 ? policy.upstream : policy.ingestion, attempt, policy, random);
  }
  return backoffDelay(policy.connection, attempt, policy, random);
}

/**
 * How long to wait before creating a generation again after its `attempt`-th create failed with a
 * retryable failure_code: the resubmit range with backoff. Used by generations.resubmit and by the
 * pipeline's resubmission alike.
 *
 * @example resubmitDelay(1, DEFAULT_RETRY_POLICY) // 2000–4000
 */
export function resubmitDelay(
  attempt: number,
  policy: Pick<RetryPolicy, 'resubmit' | 'backoffFactor' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number {
  return backoffDelay(policy.resubmit, attempt, policy, random);
}
