/**
 * One timer for "call me when the earliest of these moments comes": asking for a later moment than the
 * one already set changes nothing, an earlier one moves the timer. The watcher's checks use it to look
 * at a file as soon as its quiet period ends, rather than up to a tick later.
 */

/** A timer set for the earliest moment asked (see the module comment). */
export class WakeTimer {
  #timer: NodeJS.Timeout | null = null;
  #at = Number.POSITIVE_INFINITY;
  #stopped = false;

  /** `wake` runs when the moment comes. */
  constructor(private readonly wake: () => void) {}

  /** Wakes at `at` (ms since the epoch) unless a wake-up is set no later than that. */
  wakeAt(at: number): void {
    if (this.#stopped || at >= this.#at) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#at = Number.POSITIVE_INFINITY;
        this.wake();
      },
      Math.max(0, at - Date.now()),
    );
  }

  /** No more wake-ups. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
  }
}
