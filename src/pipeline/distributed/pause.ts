import type { StoreReachability } from '../store/postgres/index.ts';

/**
 * After a failed read of the store: true once the store is reachable again (the read is to be made
 * again), false when the error was of another kind, when there is no reachability to ask, or when
 * `signal` aborted meanwhile (a follower told to stop does not wait for a store that may never come
 * back: the demo removes its own).
 */
export async function storeBack(
  reach: StoreReachability | undefined,
  err: unknown,
  signal?: AbortSignal,
): Promise<boolean> {
  if (!reach || signal?.aborted) return false;
  let onAbort: () => void = () => undefined;
  const aborted = new Promise<false>((resolve) => {
    onAbort = () => resolve(false);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([reach.failed(err), aborted]);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

/** Waits `ms`, or until `signal` aborts (never rejects): the looks of a run following its jobs. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
