/**
 * The caller's callbacks, called so that a listener's own failure never becomes the watcher's: a
 * throwing onPause / onResume / onProblem / onScan is ignored, and onReady's failure (thrown or
 * rejected) is reported through onProblem.
 */
import { WATCH_TEXTS } from './defaults.ts';
import type { WatcherOptions } from './options.ts';
import type { ReadyFile } from './ready-file.ts';
import type { RescanResult } from './rescan.ts';

type Callbacks = Pick<WatcherOptions, 'onReady' | 'onPause' | 'onResume' | 'onProblem' | 'onScan'>;

/** Calls `fn`, ignoring what it throws. */
function shielded(fn: () => void): void {
  try {
    fn();
  } catch {
    // a listener's own failure is not the watcher's
  }
}

/** The watcher's side of the callbacks (see the module comment). */
export class WatchListeners {
  constructor(private readonly callbacks: Callbacks) {}

  /** Something worth telling that does not pause the watcher. */
  problem(message: string): void {
    shielded(() => this.callbacks.onProblem?.(message));
  }

  paused(message: string): void {
    shielded(() => this.callbacks.onPause?.(message));
  }

  resumed(): void {
    shielded(() => this.callbacks.onResume?.());
  }

  scanned(result: RescanResult): void {
    shielded(() => this.callbacks.onScan?.(result));
  }

  /** Hands `file` over; a failure of onReady is a problem, not the watcher's failure. */
  ready(file: ReadyFile): void {
    try {
      const r = this.callbacks.onReady(file);
      if (r && typeof (r as Promise<void>).then === 'function') {
        (r as Promise<void>).catch((err) => this.problem(WATCH_TEXTS.onReadyFailed(file.input, String(err))));
      }
    } catch (err) {
      this.problem(WATCH_TEXTS.onReadyFailed(file.input, err instanceof Error ? err.message : String(err)));
    }
  }
}
