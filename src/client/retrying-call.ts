/**
 * The retry loop shared by every call: run an attempt, and on failure ask the policy whether and how
 * long to wait (shouldRetry / retryDelay), tell the hooks, wait (cancellably), go again.
 */
import { GenpipeError } from './errors.ts';
import { type RetryClass, type RetryPolicy, retryBudget, retryDelay, shouldRetry } from './retry-policy.ts';
import { sleep, throwIfAborted } from './sleep.ts';

/** What a retry hook hears before each wait. */
export interface RetryInfo {
  /** `METHOD /path` of the call. */
  what: string;
  /** The attempt that just failed (1 = the first). */
  attempt: number;
  /** The wait before the next attempt. */
  delayMs: number;
  error: GenpipeError;
  requestId: string | null;
}

/** What a transfer hook hears once a file's bytes are all at the service, or all on disk. */
export interface TransferInfo {
  /** `upload`: a file put at the service (files.upload); `download`: an output written in full. */
  direction: 'upload' | 'download';
  /** The file's bytes (once, however many attempts it took). */
  bytes: number;
}

/** Optional observers of the client's work, for the CLI and tests. No secret ever reaches them. */
export interface ClientHooks {
  /** Called before every retry wait; a returned promise is awaited before the wait starts. */
  onRetry?: (info: RetryInfo) => void | Promise<void>;
  /** Called once per file uploaded and per output downloaded in full. */
  onTransfer?: (info: TransferInfo) => void;
  /** Human-readable notes (retries, pacing waits, URL refreshes). */
  log?: (message: string) => void;
}

/** How a call is retried. */
export interface RetryingCallOptions<T> {
  what: string;
  retryClass: RetryClass;
  policy: RetryPolicy;
  signal?: AbortSignal | undefined;
  requestId?: string | null;
  hooks?: ClientHooks | undefined;
  random?: () => number;
  /** One attempt; `attempt` is 1-based. */
  run: (attempt: number) => Promise<T>;
  /**
   * The wait between attempts; defaults to a plain cancellable sleep. Creates use it to wait on the
   * pacer or the concurrency governor instead.
   */
  wait?: (error: GenpipeError, delayMs: number, signal: AbortSignal | undefined) => Promise<void>;
  /** Decides retries instead of shouldRetry (for calls whose body cannot be sent twice). */
  canRetry?: (error: unknown, attempt: number) => boolean;
  /**
   * When the retry is sent, in words, where `wait` knows better than the delay (a create held until one
   * of its client's jobs ends); undefined: "in <delay>".
   */
  whenText?: (error: GenpipeError, delayMs: number) => string | undefined;
}

/** The answer a retry follows, in the service's words: `429 "Too many concurrent jobs"`. */
function answerText(err: GenpipeError): string {
  const status = err.status ? `${err.status} ` : '';
  return err.detail ? `${status}"${err.detail}"` : `${status}${err.name}`;
}

/**
 * Runs `run` until it succeeds, the policy gives up, or the signal aborts.
 *
 * @returns what the successful attempt returned
 * @throws the last attempt's error when it may not be retried; the signal's reason when aborted
 */
export async function retryingCall<T>(options: RetryingCallOptions<T>): Promise<T> {
  const { policy, signal } = options;
  for (let attempt = 1; ; attempt++) {
    throwIfAborted(signal);
    try {
      return await options.run(attempt);
    } catch (err) {
      throwIfAborted(signal);
      const allowed = options.canRetry
        ? options.canRetry(err, attempt)
        : shouldRetry(err, attempt, options.retryClass, policy);
      if (!allowed || !(err instanceof GenpipeError)) throw err;
      const delayMs = retryDelay(err, attempt, policy, options.random);
      const info: RetryInfo = {
        what: options.what,
        attempt,
        delayMs,
        error: err,
        requestId: err.requestId ?? options.requestId ?? null,
      };
      const when = options.whenText?.(err, delayMs) ?? `in ${delayMs} ms`;
      options.hooks?.log?.(
        `retrying ${info.what} ${when} after ${answerText(err)}` +
          ` (attempt ${attempt} of ${retryBudget(err, policy) + 1}${info.requestId ? `, request id ${info.requestId}` : ''})`,
      );
      await options.hooks?.onRetry?.(info);
      if (options.wait) await options.wait(err, delayMs, signal);
      else await sleep(delayMs, signal);
    }
  }
}
