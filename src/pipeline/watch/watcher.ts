/**
 * `genpipe watch`'s file watching: hands over each input file of a folder once it is really complete,
 * and again only after it changed.
 *
 * - Source of truth: a full rescan of the tree every `rescanMs` (discovery itself, so `run` and `watch`
 *   agree on what an input is). chokidar events are hints that make one path be looked at soon.
 * - A file is handed over only when its size and mtime have been unchanged for `quietMs` (looked at
 *   again after the quiet period, not just "no event came") AND it is complete (see complete-check.ts:
 *   full image decode, video container length + ffprobe, nothing more for other kinds). Files found at
 *   start-up go through the same wait. A stable file that is not complete is held back until it changes,
 *   or until `giveUpMs` passes: then it is handed over as it is (`complete: false` with the reason), so
 *   the pipeline fails it with that reason locally, before any upload.
 * - A file the caller already finished with the same size and mtime (`known`: the journal, on a restart)
 *   is handed over as soon as it is seen, without the quiet period or the check: a restart over
 *   thousands of finished files does not decode them all again before it looks at a new one.
 * - If the folder disappears or becomes unreadable, the watcher PAUSES (onPause with a plain message),
 *   tries again every `retryMs` and resumes (onResume) when it is back. Nothing is forgotten while paused,
 *   and a rescan only ever forgets after it walked the whole tree with the folder sound before and after.
 * - A file is looked at as soon as its quiet period ends, and due files are checked one after another
 *   (`checkConcurrency` at once), not a few per tick.
 * - A rescan waits (at most `hintsReadyWaitMs`) for chokidar to have read the tree: a file that arrives
 *   while chokidar starts may get no event, and the rescan finds it instead of the next periodic one.
 *
 * The parts, each owning its state: options.ts (options and their resolution into settings),
 * folders.ts (the start-up refusals, what is an input), lifecycle.ts (paused / closed, the close
 * policy), settler.ts (sightings, quiet periods, completeness checks, give-ups), hand-over.ts and
 * ready-file.ts (what onReady gets), hint-intake.ts (file events), scan-loop.ts (the rescans and the
 * retries while paused), listeners.ts (the caller's callbacks, shielded). This module wires them.
 *
 * @example
 * const w = await startWatcher({ dir: 'inbox', outDir: 'out', onReady: (f) => queue.push(f), onPause: console.warn });
 * // … later
 * await w.close();
 */

import type { HeldBackFile } from '../report/held-back.ts';
import { watchPathRules } from './folders.ts';
import { HandOver, type HandOverCounts } from './hand-over.ts';
import { HintIntake } from './hint-intake.ts';
import { WatchLifecycle } from './lifecycle.ts';
import { WatchListeners } from './listeners.ts';
import { createMountGuard } from './mount-guard.ts';
import { resolveWatchSettings, type WatcherOptions } from './options.ts';
import type { RescanResult } from './rescan.ts';
import { ScanLoop, type ScanRecord } from './scan-loop.ts';
import { Settler } from './settler.ts';
import { StabilityTracker, type TrackerCounts } from './stability.ts';

export interface WatcherStats extends TrackerCounts, HandOverCounts {
  /** Rescans run (complete or not). */
  scans: number;
  lastScan: ScanRecord | null;
  paused: boolean;
  pauseReason: string | null;
  pauses: number;
  /** Completeness checks run. */
  checks: number;
  /** The files held back now (`held` of them), each with why and since when, by input path. */
  heldBack: HeldBackFile[];
}

export interface Watcher {
  /** The watched folder's real path. */
  readonly dir: string;
  /** Resolves once the first rescan has run (files found then are pending, not yet handed over). */
  readonly firstScan: Promise<void>;
  stats(): WatcherStats;
  /** The files settling now (StabilityTracker.settling). */
  settling(): { input: string; since: number }[];
  /** Forgets `input` (after --on-done moved it away), so a new file of that name is handed over. */
  forget(input: string): void;
  /** Runs a rescan now (or joins the running one); null while paused or closed. */
  rescanNow(): Promise<RescanResult | null>;
  /** Stops watching: no onReady after it resolves. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Starts watching `opts.dir` (see the module comment).
 *
 * @throws Error when the folder does not exist, or the out dir overlaps it (the folder, inside it, or
 *   holding it)
 */
export async function startWatcher(opts: WatcherOptions): Promise<Watcher> {
  const settings = resolveWatchSettings(opts);
  const guard = await createMountGuard(settings.dir);
  const rules = await watchPathRules(settings);

  const { quietMs, giveUpMs, forgetAfterMs } = settings;
  const tracker = new StabilityTracker({ quietMs, giveUpMs, forgetAfterMs, heldEarlier: opts.heldEarlier });
  const listeners = new WatchListeners(opts);
  const life: WatchLifecycle = new WatchLifecycle(listeners, {
    onFirstPause: () => {
      void life.track(hints.stop());
      scans.schedule(settings.retryMs);
    },
    onResume: () => hints.start(),
    onClose: async () => {
      settler.stop();
      scans.stop();
      await hints.stop();
    },
  });
  const handOver = new HandOver(tracker, life, listeners);
  const settler = new Settler(settings, tracker, life, handOver, listeners);
  const hints = new HintIntake(settings.hints, rules, guard, life, settler, listeners);
  const scans = new ScanLoop({ settings, rules, guard, life, hints, tracker, sightings: settler, listeners });

  const close = () => life.close();
  if (opts.signal) {
    if (opts.signal.aborted) await close();
    else opts.signal.addEventListener('abort', () => void close(), { once: true });
  }

  hints.start();
  const firstScan = scans.turn();

  return {
    dir: rules.root,
    firstScan,
    settling: () => tracker.settling(),
    stats: () => ({
      ...tracker.counts(),
      scans: scans.scans,
      pauses: life.pauses,
      handedOver: handOver.counts.handedOver,
      gaveUp: handOver.counts.gaveUp,
      checks: settler.checks,
      heldBack: tracker.heldBack(),
      known: handOver.counts.known,
      lastScan: scans.lastScan,
      paused: life.paused,
      pauseReason: life.pauseReason,
    }),
    forget: (input) => tracker.forget(input),
    rescanNow: () => (life.live ? scans.rescan() : Promise.resolve(null)),
    close,
  };
}
