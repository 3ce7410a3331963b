/**
 * Is the watched folder there and readable? A share that drops, an unmounted disk or a permissions
 * change must PAUSE the watcher, never look like every file was deleted. The guard answers before and
 * after each rescan; a rescan whose guard failed is thrown away.
 *
 * Besides "missing" and "unreadable", it knows the quiet failure of network shares: when a share is
 * unmounted its mount point usually stays behind as an empty folder of the parent filesystem. A folder
 * that was a mount point when watching began (its device differs from its parent's) and no longer is
 * has lost its share.
 */
import { opendir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { errnoWords, WATCH_TEXTS } from './defaults.ts';

export type GuardVerdict = { ok: true } | { ok: false; message: string };

export interface MountGuard {
  /** Whether the folder was a mount point when the guard was made. */
  readonly wasMountPoint: boolean;
  /** Looks at the folder now. */
  check(): Promise<GuardVerdict>;
}

async function isMountPoint(dir: string, dev: number): Promise<boolean> {
  const parent = dirname(dir);
  if (parent === dir) return true; // the filesystem root
  const p = await stat(parent).catch(() => null);
  return p !== null && p.dev !== dev;
}

/**
 * Makes the guard of `dir` (an absolute path), remembering whether it is a mount point now.
 *
 * @throws Error when `dir` does not exist or is not a folder at start
 * @example const guard = await createMountGuard('/mnt/share/inbox'); const v = await guard.check();
 */
export async function createMountGuard(dir: string): Promise<MountGuard> {
  const st = await stat(dir).catch(() => null);
  if (st === null || !st.isDirectory()) throw new Error(WATCH_TEXTS.notAFolderAtStart(dir));
  const wasMountPoint = await isMountPoint(dir, st.dev);
  return {
    wasMountPoint,
    async check(): Promise<GuardVerdict> {
      let now: Awaited<ReturnType<typeof stat>>;
      try {
        now = await stat(dir);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, message: WATCH_TEXTS.missing(dir) };
        return { ok: false, message: WATCH_TEXTS.unreadable(dir, errnoWords(err)) };
      }
      if (!now.isDirectory()) return { ok: false, message: WATCH_TEXTS.notFolder(dir) };
      if (wasMountPoint && !(await isMountPoint(dir, now.dev))) {
        return { ok: false, message: WATCH_TEXTS.unmounted(dir) };
      }
      try {
        // Listing needs read and search permission, and a live share: read one entry.
        const handle = await opendir(dir, { bufferSize: 1 });
        try {
          await handle.read();
        } finally {
          await handle.close().catch(() => undefined);
        }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return { ok: false, message: WATCH_TEXTS.missing(dir) };
        return { ok: false, message: WATCH_TEXTS.unreadable(dir, errnoWords(err)) };
      }
      return { ok: true };
    },
  };
}
