/**
 * The request-rate window of POST /v1/generations and the API-wide abuse ceiling of GET
 * /v1/generations/{id}, per client, as exact sliding windows of `config.rate_window_s`.
 */
import {
  abuseRejectedHeaders,
  agedOutCount,
  DETAILS,
  decideRate,
  RATE_LIMIT_DETAILS,
  rateLimitHeaders,
  rpmRejectedHeaders,
} from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { HttpError } from '../http-error.ts';
import type { ClientRec } from '../store.ts';

/** A create that passed the request-rate check: the headers of its 201, and how to take its slot. */
export interface RpmPass {
  headers: Record<string, string>;
  /** True when the rate backend was "down" and the create passed unchecked. */
  backendDown: boolean;
  /** Counts the request in the window; call once the create is sure to be counted. */
  commit(): void;
}

function prune(log: number[], now: number, windowSeconds: number): void {
  const n = agedOutCount(log, now, windowSeconds);
  if (n > 0) log.splice(0, n);
}

/**
 * Checks a create against the client's request-rate window at `now` (ms).
 * When the rate backend is "down" (fault rate_backend_down) the create passes without headers and is
 * not counted (rule 5).
 * @throws HttpError 429 `Rate limit exceeded` with X-RateLimit-* and Retry-After (kind rpm)
 */
export function checkRpm(ctx: EmulatorContext, client: ClientRec, now: number): RpmPass {
  if (ctx.rng.chance(ctx.config.faults.rate_backend_down))
    return { headers: {}, backendDown: true, commit: () => {} };
  const windowSeconds = ctx.config.rate_window_s;
  prune(client.rateLog, now, windowSeconds);
  const d = decideRate(client.rateLog, now, client.rpm, windowSeconds);
  if (!d.allowed) {
    throw new HttpError(
      429,
      RATE_LIMIT_DETAILS.rpm,
      rpmRejectedHeaders(client.rpm, d.reset, d.retryAfter),
      'rpm',
    );
  }
  return {
    headers: rateLimitHeaders(client.rpm, d.remaining, d.reset),
    backendDown: false,
    commit: () => {
      client.rateLog.push(now);
    },
  };
}

/**
 * Counts a GET against the API-wide abuse ceiling (`config.abuse_ceiling` per rate window).
 * Rejected GETs are not counted.
 * @throws HttpError 429 with only Retry-After (kind abuse)
 */
export function checkAbuseCeiling(ctx: EmulatorContext, client: ClientRec, now: number): void {
  const windowSeconds = ctx.config.rate_window_s;
  prune(client.getLog, now, windowSeconds);
  const d = decideRate(client.getLog, now, ctx.config.abuse_ceiling, windowSeconds);
  if (!d.allowed) {
    throw new HttpError(429, DETAILS.abuseCeiling, abuseRejectedHeaders(d.retryAfter), 'abuse');
  }
  client.getLog.push(now);
}
