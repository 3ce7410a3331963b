/**
 * chokidar as a HINT: its add/change events only say "look at this path soon"; they are gathered for a
 * moment and handed on together. Whatever chokidar misses (network shares, overflowing inotify queues),
 * the periodic rescan still finds. With `poll` chokidar stats files on an interval instead of using
 * inotify, which is what network shares need.
 *
 * chokidar reads the tree before it watches it, and a file that arrives while it does may never get an
 * event: `ready` says when events are live, so that a rescan started after it misses nothing.
 */
import { basename, isAbsolute, relative, sep } from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import { isTempName } from '../discover.ts';

export interface FileHintsOptions {
  /** The watched folder (its real path). */
  root: string;
  /** Use polling (network shares). */
  poll: boolean;
  /** Polling interval, ms. */
  pollIntervalMs: number;
  /** Events are gathered this long before `onPaths`. */
  delayMs: number;
  /** Absolute paths that were added or changed. */
  onPaths(paths: string[]): void;
  /** The watched folder itself went away (removed or unmounted). */
  onRootGone(): void;
  onError(err: unknown): void;
}

export interface FileHints {
  /** Resolves once chokidar has read the tree and events are live (or the hints are closed). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/** Starts chokidar on `root` (see the module comment). */
export function startFileHints(opts: FileHintsOptions): FileHints {
  const { root } = opts;
  const ignored = (path: string): boolean => {
    const rel = relative(root, path);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return false;
    return rel.split(sep).some((part) => part.startsWith('.')) || isTempName(basename(path));
  };
  const watcher: FSWatcher = watch(root, {
    ignoreInitial: true,
    persistent: true,
    followSymlinks: false,
    ignorePermissionErrors: true,
    usePolling: opts.poll,
    interval: opts.pollIntervalMs,
    binaryInterval: opts.pollIntervalMs,
    ignored,
  });
  let queued = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  const flush = () => {
    timer = null;
    if (closed || queued.size === 0) return;
    const paths = [...queued];
    queued = new Set();
    opts.onPaths(paths);
  };
  const hint = (path: string) => {
    queued.add(path);
    timer ??= setTimeout(flush, opts.delayMs);
  };
  watcher.on('add', hint);
  watcher.on('change', hint);
  watcher.on('unlinkDir', (path) => {
    if (relative(root, path) === '') opts.onRootGone();
  });
  watcher.on('error', (err) => opts.onError(err));
  let markReady = () => {};
  const ready = new Promise<void>((r) => {
    markReady = r;
  });
  watcher.once('ready', () => markReady());
  return {
    ready,
    async close() {
      closed = true;
      markReady();
      if (timer) clearTimeout(timer);
      await watcher.close();
    },
  };
}
