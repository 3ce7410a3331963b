import { timerDelay } from './sleep.ts';

/**
 * One pending wake-up for a queue that re-checks itself (the pacer and the concurrency governor):
 * asking for an earlier wake-up replaces a later one, asking for a later one keeps the earlier.
 */
export class WakeTimer {
  private timer: NodeJS.Timeout | null = null;
  private at = 0;

  /**
   * @param now - the clock the queue uses (ms)
   * @param wake - what to run when the time comes
   */
  constructor(
    private readonly now: () => number,
    private readonly wake: () => void,
  ) {}

  /** Wakes the queue in `ms` at the latest (never later than an already pending wake-up). */
  arm(ms: number): void {
    const at = this.now() + ms;
    if (this.timer && this.at <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.wake();
    }, timerDelay(ms));
  }

  /** Cancels the pending wake-up, if any. */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
