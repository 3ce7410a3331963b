/**
 * Every default and fixed text of the watcher in one place (they are pipeline decisions, not parts of the
 * service contract, so they live here rather than in src/spec; docs/interface-choices.md lists them).
 */

export const WATCH_DEFAULTS = {
  /** Size and mtime must stay unchanged this long before a file is considered (`--quiet-ms`). */
  quietMs: 5_000,
  /** A full rescan of the tree, the source of truth, runs this often (`--rescan-ms`). */
  rescanMs: 30_000,
  /**
   * A stable file that does not parse is held back this long (counted from when its size and mtime
   * last changed), then handed over as it is so the pipeline fails it with its reason (`--give-up-ms`).
   */
  giveUpMs: 10 * 60_000,
  /** While paused (folder missing or unreadable), the folder is tried again this often. */
  retryMs: 2_000,
  /**
   * A handed-over file that disappears from a complete rescan is remembered this long, so one that
   * comes back unchanged (moved out and back, a folder recreated) is not handed over again.
   */
  forgetAfterMs: 60 * 60_000,
  /** chokidar's polling interval with `--poll` (network shares). */
  pollIntervalMs: 1_000,
  /** chokidar events are gathered this long and then handled together. */
  hintDelayMs: 50,
  /**
   * A rescan waits at most this long for chokidar to have read the tree (its events are live then, so a
   * file that arrives during that read is found by the rescan); past it, the rescan runs anyway.
   */
  hintsReadyWaitMs: 10_000,
  /** Completeness checks (full image decode, ffprobe) run at most this many at once. */
  checkConcurrency: 2,
} as const;

/** The plain messages the watcher gives (pause reasons, problems, refusals). */
export const WATCH_TEXTS = {
  missing: (dir: string) =>
    `the watched folder ${dir} is missing (unmounted or removed); paused, waiting for it to come back`,
  notFolder: (dir: string) => `the watched folder ${dir} is not a folder any more; paused`,
  unreadable: (dir: string, why: string) => `cannot read the watched folder ${dir} (${why}); paused`,
  unmounted: (dir: string) =>
    `the share mounted at ${dir} is no longer mounted (the folder is a bare mount point now); paused`,
  scanFailed: (dir: string, why: string) => `scanning the watched folder ${dir} failed (${why}); paused`,
  subfolderUnreadable: (input: string, why: string) =>
    `cannot read the subfolder ${input} (${why}); what was known under it is kept`,
  hintError: (why: string) => `file events failed (${why}); the periodic rescan goes on`,
  onReadyFailed: (input: string, why: string) => `handing over ${input} failed: ${why}`,
  /** The failure reason of a file handed over after the give-up period without becoming complete. */
  neverComplete: (reason: string) => `the file never became complete (${reason})`,
  notAFolderAtStart: (dir: string) => `the folder to watch, ${dir}, does not exist or is not a folder`,
} as const;

/** Plain words for an errno code, for pause messages. */
export function errnoWords(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  switch (e?.code) {
    case 'ENOENT':
      return 'it does not exist';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'ENOTDIR':
      return 'not a folder';
    case 'EIO':
      return 'input/output error';
    case 'ESTALE':
      return 'stale network file handle';
    case 'ENOTCONN':
    case 'EHOSTDOWN':
    case 'EHOSTUNREACH':
      return 'the share is not connected';
    default:
      return e?.code ?? (err instanceof Error ? err.message : String(err));
  }
}

/** What `--on-done` does with an input once its result is recorded (on-done.ts). */
export const ON_DONE_MODES = ['keep', 'move'] as const;
export type OnDoneMode = (typeof ON_DONE_MODES)[number];
