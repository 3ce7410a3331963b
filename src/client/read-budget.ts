/**
 * The poll loop's cap on reads across all jobs: at most `perSecond` reads in any one second (a
 * sliding window, as a service counts), so the reads of jobs that end together go out at once instead
 * of one every 1/perSecond s, while no second ever holds more than the cap. A cap below 1 a second
 * is one read per 1/perSecond s.
 */
export class ReadBudget {
  /** Reads allowed per window. */
  private readonly count: number;
  /** The window, ms. */
  private readonly windowMs: number;
  /** Times of the last `count` reads, oldest first. */
  private readonly times: number[] = [];

  /** @param perSecond - reads per second at most (Infinity: no cap) */
  constructor(perSecond: number) {
    const rate = Math.max(0.001, perSecond);
    this.count = Number.isFinite(rate) ? Math.max(1, Math.floor(rate)) : Number.POSITIVE_INFINITY;
    this.windowMs = Number.isFinite(rate) ? (this.count * 1000) / rate : 0;
  }

  /**
   * The earliest time at or after `at` a read may be sent.
   *
   * @example new ReadBudget(2).nextAt(0) // 0 (none sent yet)
   */
  nextAt(at: number): number {
    if (this.times.length < this.count) return at;
    return Math.max(at, (this.times[0] as number) + this.windowMs);
  }

  /** Counts a read sent at `at`. */
  took(at: number): void {
    if (!Number.isFinite(this.count)) return;
    this.times.push(at);
    if (this.times.length > this.count) this.times.shift();
  }
}
