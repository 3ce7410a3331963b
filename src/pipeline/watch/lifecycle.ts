/**
 * The watcher's two switches and its close policy.
 *
 * - Paused: the folder is missing or unreadable. Pausing stops the file events and turns the main loop
 *   to retrying the folder (the hooks say how); nothing is forgotten while paused. Pausing again with
 *   another reason only tells the listener the new reason.
 * - Closed: for good. Closing aborts the running rescan, stops every part (timers, file events), then
 *   waits for the work in flight (checks, looks at paths, rescans) that was `track`ed, so no onReady
 *   comes after close() resolved.
 */
import type { WatchListeners } from './listeners.ts';

/** What pausing, resuming and closing do to the other parts of the watcher. */
export interface LifecycleHooks {
  /** The watcher has just paused (not called again while it stays paused). */
  onFirstPause(): void;
  /** The watcher goes on after a pause (called before the listener hears of it). */
  onResume(): void;
  /** Stops every part's timers and file events (the work in flight is waited for afterwards). */
  onClose(): Promise<void>;
}

/** The paused and closed switches, and the work in flight (see the module comment). */
export class WatchLifecycle {
  #closed = false;
  #paused = false;
  #pauseReason: string | null = null;
  #pauses = 0;
  readonly #inFlight = new Set<Promise<unknown>>();
  readonly #closing = new AbortController();

  constructor(
    private readonly listeners: WatchListeners,
    private readonly hooks: LifecycleHooks,
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Why the watcher is paused; null when it is not. */
  get pauseReason(): string | null {
    return this.#pauseReason;
  }

  /** Pauses so far. */
  get pauses(): number {
    return this.#pauses;
  }

  /** Neither paused nor closed: the watcher looks at files. */
  get live(): boolean {
    return !this.#paused && !this.#closed;
  }

  /** Aborted when the watcher closes (stops a running rescan). */
  get signal(): AbortSignal {
    return this.#closing.signal;
  }

  /** Work that close() waits for; returns `p`. */
  track<T>(p: Promise<T>): Promise<T> {
    this.#inFlight.add(p);
    void p.finally(() => this.#inFlight.delete(p)).catch(() => undefined);
    return p;
  }

  /** Pauses with a plain message saying why (see the module comment); nothing once closed. */
  pause(message: string): void {
    if (this.#closed) return;
    if (this.#paused && message === this.#pauseReason) return;
    const first = !this.#paused;
    this.#paused = true;
    this.#pauseReason = message;
    if (first) {
      this.#pauses += 1;
      this.hooks.onFirstPause();
    }
    this.listeners.paused(message);
  }

  /** The folder is back: goes on. */
  resume(): void {
    this.#paused = false;
    this.#pauseReason = null;
    this.hooks.onResume();
    this.listeners.resumed();
  }

  /** Closes for good (see the module comment). Safe to call twice. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#closing.abort(new Error('watcher closed'));
    await this.hooks.onClose();
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }
}
