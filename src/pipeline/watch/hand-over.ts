/**
 * The hand-over of a file: marked handed in the tracker, counted, and given to onReady as a ReadyFile.
 * Nothing is handed over once the watcher is closed.
 */
import type { CompleteVerdict } from './complete-check.ts';
import type { WatchLifecycle } from './lifecycle.ts';
import type { WatchListeners } from './listeners.ts';
import { type HandOverCause, readyFileOf } from './ready-file.ts';
import type { StabilityTracker, TrackedFile } from './stability.ts';

/** Hand-overs so far, by cause. */
export interface HandOverCounts {
  /** Every hand-over (a file handed over again after a change counts again). */
  handedOver: number;
  /** Of those, after the give-up period without passing the completeness check. */
  gaveUp: number;
  /** Of those, of files `known` said were finished (not checked). */
  known: number;
}

/** Hands files over (see the module comment). */
export class HandOver {
  readonly counts: HandOverCounts = { handedOver: 0, gaveUp: 0, known: 0 };

  constructor(
    private readonly tracker: StabilityTracker,
    private readonly life: WatchLifecycle,
    private readonly listeners: WatchListeners,
  ) {}

  /** Hands `f` over: after its check passed, after the give-up period, or at once as known. */
  give(f: TrackedFile, verdict: CompleteVerdict | undefined, cause: HandOverCause): void {
    if (this.life.closed) return;
    this.tracker.markHanded(f);
    this.counts.handedOver += 1;
    if (cause === 'gaveUp') this.counts.gaveUp += 1;
    if (cause === 'known') this.counts.known += 1;
    this.listeners.ready(readyFileOf(f, verdict, cause, Date.now()));
  }
}
