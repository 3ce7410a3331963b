/**
 * Who waits for a row in flight here to end: a file with the same content as one this session works
 * on (same-content.ts's `wait`), woken when that row's item is saved finished or unbound, or when the
 * store closes — and, at the latest, after a timeout, to look at the row again.
 */
export class RowWaiters {
  private readonly byRow = new Map<number, Set<() => void>>();

  /**
   * Resolves once row `id` ended (ended), after `ms` at the latest, or when `signal` aborts.
   *
   * @example await waiters.wait(7, TWIN_POLL_MS, signal)
   */
  wait(id: number, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const waiters = this.byRow.get(id) ?? new Set<() => void>();
      this.byRow.set(id, waiters);
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && this.byRow.get(id) === waiters) this.byRow.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Tells who waits for row `id` that it may have ended. */
  ended(id: number): void {
    const waiters = this.byRow.get(id);
    if (!waiters) return;
    this.byRow.delete(id);
    for (const wake of [...waiters]) wake();
  }

  /** Wakes every waiter (the store closes). */
  endAll(): void {
    for (const id of [...this.byRow.keys()]) this.ended(id);
  }
}
