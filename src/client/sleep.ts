/** A wait that an AbortSignal can cut short. */

/**
 * The longest delay a Node timer takes (2^31 - 1 ms, about 24.8 days): a longer one fires at once
 * (with a TimeoutOverflowWarning), so every timer is capped at it; a queue woken early re-checks.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a timer delay: at least 0, at most MAX_TIMER_MS. */
export function timerDelay(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, Number.isNaN(ms) ? 0 : ms));
}

/** The reason to throw when `signal` is aborted (its own reason, or a standard AbortError). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Resolves after `ms` milliseconds; rejects with the signal's reason as soon as it aborts.
 *
 * @param ms - how long to wait (negative counts as 0)
 * @param signal - optional; aborting it ends the wait early with a rejection
 * @example await sleep(250, controller.signal)
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal as AbortSignal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, timerDelay(ms));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Throws the signal's reason when it has been aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}
