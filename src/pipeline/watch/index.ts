/**
 * `genpipe watch`'s file watching: the watcher (stable + complete files, pause on a missing folder),
 * the --on-done helper and a queue to feed a runner. See watcher.ts for the rules.
 */
export { type CompleteVerdict, checkComplete } from './complete-check.ts';
export { containerVerdict } from './container-complete.ts';
export { WATCH_DEFAULTS, WATCH_TEXTS } from './defaults.ts';
export {
  type InputOutcome,
  moveNoClobber,
  ON_DONE_FOLDERS,
  ON_DONE_MODES,
  type OnDoneMode,
  onDoneDirs,
  type SettleResult,
  settleInput,
} from './on-done.ts';
export { createReadyQueue, type ReadyQueue } from './ready-queue.ts';
export type { RescanResult } from './rescan.ts';
export { sameSignature } from './stability.ts';
export {
  checkWatchFolders,
  incompleteReason,
  type ReadyFile,
  readyItem,
  startWatcher,
  type Watcher,
  type WatcherOptions,
  type WatcherStats,
} from './watcher.ts';
