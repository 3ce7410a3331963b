/**
 * Legacy callbacks: a POST of the Generation JSON to the caller's callback_url when a generation
 * becomes dreaming, completed or failed. Deliveries of one generation are chained so they arrive in
 * order; each is retried with backoff on network errors, timeouts and non-2xx answers; none of it ever
 * blocks the lifecycle or throws out of the background.
 */
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'undici';
import { LEGACY_CHOICES, LEGACY_DETAILS } from '../../spec/index.ts';
import { track } from '../background.ts';
import type { EmulatorContext } from '../context.ts';
import { type LegacyJob, legacyRuntime } from './runtime.ts';

const CB = LEGACY_CHOICES.callback;

/** Host of a URL as the allow-list spells it (IPv6 without brackets, lower case). */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
}

/**
 * Checks a callback_url before a generation is created: http(s) only, host in config.fetch_allow_hosts.
 * @returns null when allowed, else the 400 detail.
 * @example
 * const detail = callbackUrlProblem(ctx, body.callback_url); // null or "callback_url: ..."
 */
export function callbackUrlProblem(ctx: EmulatorContext, raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return LEGACY_DETAILS.callbackUrlInvalid;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return LEGACY_DETAILS.callbackUrlInvalid;
  if (url.username || url.password) return LEGACY_DETAILS.callbackUrlInvalid;
  const host = hostOf(url);
  const allowed = ctx.config.fetch_allow_hosts.some(
    (h) => h.replace(/^\[(.*)\]$/, '$1').toLowerCase() === host,
  );
  return allowed ? null : LEGACY_DETAILS.callbackHostNotAllowed(host);
}

/**
 * The signature header value: `t=<unix seconds>,v1=<hex HMAC-SHA256(apiKey, "<t>.<body>")>`.
 * A receiver that knows the API key recomputes it to check the callback came from the service.
 * @param apiKey the key that created the generation.
 * @param timestamp Unix seconds, also sent in the header.
 * @param body the exact JSON text POSTed.
 */
export function callbackSignature(apiKey: string, timestamp: number, body: string): string {
  const v1 = createHmac('sha256', apiKey).update(`${timestamp}.${body}`).digest('hex');
  return `t=${timestamp},v1=${v1}`;
}

/** Delay before retry number `attempt` (1-based: the wait after the first failed attempt is attempt 1). */
export function callbackBackoffMs(attempt: number): number {
  return Math.min(CB.backoffMaxMs, CB.backoffBaseMs * 2 ** (attempt - 1));
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** One POST; resolves to the HTTP status, or rejects on a network error or timeout. */
async function postOnce(
  ctx: EmulatorContext,
  job: LegacyJob,
  url: string,
  body: string,
  attempt: number,
  signal: AbortSignal,
): Promise<number> {
  const timestamp = Math.floor(ctx.clock.now() / 1000);
  const res = await httpRequest(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'user-agent': CB.userAgent,
      [CB.attemptHeader]: String(attempt),
      [CB.requestIdHeader]: job.requestId,
      [CB.signatureHeader]: callbackSignature(job.apiKey, timestamp, body),
    },
    body,
    signal: AbortSignal.any([signal, AbortSignal.timeout(ctx.config.callback_timeout_ms)]),
    headersTimeout: ctx.config.callback_timeout_ms,
    bodyTimeout: ctx.config.callback_timeout_ms,
  });
  // Drain (and bound) whatever the receiver answers; its content does not matter.
  await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
  return res.statusCode;
}

/** Delivers one callback with retries; never throws. */
async function deliver(
  ctx: EmulatorContext,
  job: LegacyJob,
  url: string,
  body: string,
  log: (msg: string) => void,
): Promise<void> {
  const signal = legacyRuntime(ctx).closing.signal;
  const attempts = Math.max(1, Math.floor(ctx.config.callback_attempts));
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (signal.aborted || ctx.closed) return;
    let problem: string;
    try {
      const status = await postOnce(ctx, job, url, body, attempt, signal);
      if (status >= 200 && status < 300) return;
      problem = `HTTP ${status}`;
    } catch (err) {
      problem = (err as Error).name === 'TimeoutError' ? 'timeout' : 'network error';
    }
    if (attempt === attempts) {
      log(`legacy callback gave up after ${attempts} attempt(s): ${problem}`);
      return;
    }
    await abortableSleep(callbackBackoffMs(attempt), signal);
  }
}

/**
 * Queues a callback of `payload` behind the generation's earlier ones and returns at once.
 * Does nothing when the generation has no callback_url.
 * @param job the generation's runtime entry (its chain is extended).
 * @param payload the Generation JSON as of the state change.
 * @param log where a final delivery failure is reported (no URLs with secrets, no keys).
 */
export function queueCallback(
  ctx: EmulatorContext,
  job: LegacyJob,
  payload: unknown,
  log: (msg: string) => void = () => {},
): void {
  const url = job.callbackUrl;
  if (!url || ctx.closed) return;
  const body = JSON.stringify(payload);
  const next = job.chain.then(() => deliver(ctx, job, url, body, log));
  job.chain = next.catch(() => undefined);
  track(ctx, next);
}
