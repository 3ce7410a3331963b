/**
 * `genpipe watch`'s file watching: the watcher (stable + complete files, pause on a missing folder),
 * the --on-done helper and a queue to feed a runner. See watcher.ts for the rules.
 */
export { type CompleteVerdict, checkComplete } from './complete-check.ts';
export { containerVerdict } from './container-complete.ts';
export { WATCH_DEFAULTS, WATCH_TEXTS } from './defaults.ts';
export { checkWatchFolders } from './folders.ts';
export {
  fileLeftSidecars,
  type InputOutcome,
  moveNoClobber,
  ON_DONE_FOLDERS,
  ON_DONE_MODES,
  ON_DONE_TEXTS,
  type OnDoneMode,
  onDoneDirs,
  onDoneTargets,
  removeEmptiedDirs,
  type SettleResult,
  settleInput,
} from './on-done.ts';
export type { WatcherOptions } from './options.ts';
export { incompleteReason, type ReadyFile, readyItem } from './ready-file.ts';
export { createReadyQueue, type ReadyQueue } from './ready-queue.ts';
export type { RescanResult } from './rescan.ts';
export { type HeldEarlier, sameSignature } from './stability.ts';
export { startWatcher, type Watcher, type WatcherStats } from './watcher.ts';
