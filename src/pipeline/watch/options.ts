/**
 * The watcher's options as its callers give them (WatcherOptions), and their resolution into one
 * settings object with every default filled in (resolveWatchSettings), so that the parts of the
 * watcher read plain numbers and never look at a default again. The defaults themselves live in
 * defaults.ts.
 */
import { resolve } from 'node:path';
import { type InputSelection, selectionFilter } from '../input-selection.ts';
import { WATCH_DEFAULTS } from './defaults.ts';
import type { ReadyFile } from './ready-file.ts';
import type { RescanResult } from './rescan.ts';
import type { HeldEarlier, Signature } from './stability.ts';

export interface WatcherOptions {
  /** The folder to watch (the inbox). Must exist at start. */
  dir: string;
  /** The batch's out dir: refused when it overlaps the watched folder (see batch-paths.ts). */
  outDir?: string;
  /** Quiet period: size and mtime unchanged this long (default {@link WATCH_DEFAULTS}.quietMs). */
  quietMs?: number;
  /** Full rescan interval (default {@link WATCH_DEFAULTS}.rescanMs). */
  rescanMs?: number;
  /** Give-up period for stable files that do not parse (default {@link WATCH_DEFAULTS}.giveUpMs). */
  giveUpMs?: number;
  /** Retry interval while paused (default {@link WATCH_DEFAULTS}.retryMs). */
  retryMs?: number;
  /** How long a handed file missing from complete rescans is remembered. */
  forgetAfterMs?: number;
  /** chokidar polling mode (network shares); the rescans run either way. */
  poll?: boolean;
  pollIntervalMs?: number;
  /** Use chokidar hints at all (default true; the bench turns them off to time rescans alone). */
  hints?: boolean;
  /** Completeness checks at once (default {@link WATCH_DEFAULTS}.checkConcurrency). */
  checkConcurrency?: number;
  /** Files to leave out wherever they sit (the recipe file and its references). */
  skipFiles?: Iterable<string>;
  /**
   * True when the file, with this size and mtime, was already finished (the journal's record): it is
   * handed over when first seen, without waiting for the quiet period or checking it. Asked only for
   * files not yet handed over in this session.
   */
  known?: (file: { input: string; absPath: string } & Signature) => boolean;
  /**
   * When an earlier watch held back the file at `input` as incomplete (the out dir's last report.json),
   * if it did: see StabilityOptions.heldEarlier.
   */
  heldEarlier?: (input: string) => HeldEarlier | undefined;
  /** Further inputs to leave out, by path relative to the watched folder. */
  shouldSkip?: (input: string) => boolean;
  /**
   * --include / --exclude: the files they leave out are never handed over, and each rescan lists them
   * as ignored with why (RescanResult.ignored); a folder an exclude leaves out entirely is not walked.
   */
  select?: Pick<InputSelection, 'include' | 'exclude'>;
  /** A file is ready. Called once per file (again only after it changed). A rejection is reported via onProblem. */
  onReady(file: ReadyFile): void | Promise<void>;
  /** The watcher paused, with a plain message saying why (called again if the reason changes). */
  onPause?(message: string): void;
  /** The folder is back; the watcher goes on. */
  onResume?(): void;
  /** Something worth telling that does not pause the watcher (an unreadable subfolder, events failing). */
  onProblem?(message: string): void;
  /** After each rescan (complete or not). */
  onScan?(result: RescanResult): void;
  /** Closes the watcher when aborted. */
  signal?: AbortSignal;
}

/** chokidar's settings, when the hints are on. */
export interface HintSettings {
  poll: boolean;
  pollIntervalMs: number;
  /** Events are gathered this long before they are looked at. */
  delayMs: number;
  /** A rescan waits at most this long for chokidar to have read the tree. */
  readyWaitMs: number;
}

/** WatcherOptions with every default resolved (the callbacks stay in the options). */
export interface WatchSettings {
  /** The watched folder as given, made absolute (pause messages name it; discovery uses its real path). */
  dir: string;
  outDir: string | undefined;
  quietMs: number;
  rescanMs: number;
  giveUpMs: number;
  retryMs: number;
  forgetAfterMs: number;
  /** At least 1. */
  checkConcurrency: number;
  /** The backstop tick of the checks (a wake-up is also set for when the next quiet period ends). */
  tickMs: number;
  /** null when the hints are off. */
  hints: HintSettings | null;
  /** As given (their real paths are taken at start). */
  skipFiles: Iterable<string>;
  shouldSkip: ((input: string) => boolean) | undefined;
  select: WatcherOptions['select'];
  known: WatcherOptions['known'];
}

/**
 * Resolves `opts` into settings (see the module comment). Touches nothing on disk.
 *
 * @example resolveWatchSettings({ dir: 'inbox', onReady }).quietMs // 5000
 */
export function resolveWatchSettings(opts: WatcherOptions): WatchSettings {
  const quietMs = opts.quietMs ?? WATCH_DEFAULTS.quietMs;
  return {
    dir: resolve(opts.dir),
    outDir: opts.outDir,
    quietMs,
    rescanMs: opts.rescanMs ?? WATCH_DEFAULTS.rescanMs,
    giveUpMs: opts.giveUpMs ?? WATCH_DEFAULTS.giveUpMs,
    retryMs: opts.retryMs ?? WATCH_DEFAULTS.retryMs,
    forgetAfterMs: opts.forgetAfterMs ?? WATCH_DEFAULTS.forgetAfterMs,
    checkConcurrency: Math.max(1, opts.checkConcurrency ?? WATCH_DEFAULTS.checkConcurrency),
    tickMs: Math.min(1_000, Math.max(25, Math.round(quietMs / 4))),
    hints:
      opts.hints === false
        ? null
        : {
            poll: opts.poll ?? false,
            pollIntervalMs: opts.pollIntervalMs ?? WATCH_DEFAULTS.pollIntervalMs,
            delayMs: WATCH_DEFAULTS.hintDelayMs,
            readyWaitMs: WATCH_DEFAULTS.hintsReadyWaitMs,
          },
    skipFiles: opts.skipFiles ?? [],
    shouldSkip: selectionSkip(opts),
    select: opts.select,
    known: opts.known,
  };
}

/** The inputs to leave out: those `shouldSkip` names and those --include / --exclude leave out. */
function selectionSkip(opts: WatcherOptions): ((input: string) => boolean) | undefined {
  const filter = opts.select ? selectionFilter(opts.select) : null;
  const { shouldSkip } = opts;
  if (!filter) return shouldSkip;
  return (input) => filter(input) !== null || shouldSkip?.(input) === true;
}
