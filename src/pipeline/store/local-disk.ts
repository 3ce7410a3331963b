/**
 * Is a path on a local disk? The journal refuses network filesystems (see NETWORK_FS_TYPES): the mount
 * holding the path is found in `/proc/self/mountinfo` (the deepest mount point that is a prefix of the
 * path's real location). Where there is no mountinfo (not Linux) the check is skipped.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { JOURNAL_TEXTS, NETWORK_FS_TYPES } from './texts.ts';

/** One line of `/proc/self/mountinfo`. */
export interface MountEntry {
  mountPoint: string;
  fsType: string;
  source: string;
}

/** Undoes mountinfo's octal escapes (`\040` is a space, `\011` a tab, `\012` a newline, `\134` a backslash). */
function unescapeMountField(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));
}

/**
 * Parses the text of `/proc/<pid>/mountinfo` (proc(5)): fields 5 (mount point), and after the ` - `
 * separator the filesystem type and source. Malformed lines are ignored.
 *
 * @example parseMountInfo('36 25 0:32 / /mnt/share rw - nfs4 srv:/export rw')[0].fsType // 'nfs4'
 */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.trim().split(' ');
    const dash = fields.indexOf('-');
    if (dash < 6 || fields.length < dash + 3) continue;
    const mountPoint = fields[4];
    const fsType = fields[dash + 1];
    const source = fields[dash + 2];
    if (!mountPoint || !fsType || source === undefined) continue;
    out.push({ mountPoint: unescapeMountField(mountPoint), fsType, source: unescapeMountField(source) });
  }
  return out;
}

function isUnder(path: string, mountPoint: string): boolean {
  if (mountPoint === '/') return path.startsWith('/');
  return path === mountPoint || path.startsWith(mountPoint.endsWith(sep) ? mountPoint : mountPoint + sep);
}

/**
 * The mount that holds the absolute, real `path`: the deepest matching mount point, the last one
 * listed when several mounts share it (a later mount hides an earlier one).
 */
export function mountOf(path: string, mounts: readonly MountEntry[]): MountEntry | null {
  let best: MountEntry | null = null;
  for (const m of mounts) {
    if (!isUnder(path, m.mountPoint)) continue;
    if (!best || m.mountPoint.length >= best.mountPoint.length) best = m;
  }
  return best;
}

/** True for a filesystem type the journal refuses (see NETWORK_FS_TYPES). */
export function isNetworkFsType(fsType: string): boolean {
  const t = fsType.toLowerCase();
  return NETWORK_FS_TYPES.includes(t);
}

/**
 * The network mount that holds `path`, or null when it is on a local disk (or nothing is known).
 *
 * @param path - absolute real path (see realLocation)
 * @param mountInfo - the text of `/proc/self/mountinfo`
 * @example networkMountOf('/mnt/share/out/.genpipe/journal.db', text) // { fsType: 'nfs4', mountPoint: '/mnt/share', … }
 */
export function networkMountOf(path: string, mountInfo: string): MountEntry | null {
  const mount = mountOf(path, parseMountInfo(mountInfo));
  return mount && isNetworkFsType(mount.fsType) ? mount : null;
}

/**
 * The real path `p` has or will have: the real path of its deepest existing ancestor plus the rest
 * (so a symbolic link to a network share is seen through before the journal folder exists).
 */
export function realLocation(p: string): string {
  const rest: string[] = [];
  let cur = resolve(p);
  for (;;) {
    try {
      return join(realpathSync(cur), ...rest);
    } catch {
      const parent = dirname(cur);
      if (parent === cur) return resolve(p);
      rest.unshift(basename(cur));
      cur = parent;
    }
  }
}

/** The text of `/proc/self/mountinfo`, or null where there is none. */
export function readMountInfo(): string | null {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return null;
  }
}

/** The journal would be on a network filesystem. */
export class NetworkFilesystemError extends Error {
  override name = 'NetworkFilesystemError';
  readonly code = 'journal_network_fs';
  constructor(
    readonly path: string,
    readonly mount: MountEntry,
  ) {
    super(JOURNAL_TEXTS.networkFs(path, mount.fsType, mount.mountPoint));
  }
}

/**
 * Throws NetworkFilesystemError when `journalPath` is (or would be) on a network filesystem.
 *
 * @param mountInfo - the mountinfo text to judge by (default: this process's; null skips the check)
 * @example assertLocalDisk('/mnt/share/out/.genpipe/journal.db') // throws on an NFS mount
 */
export function assertLocalDisk(journalPath: string, mountInfo: string | null = readMountInfo()): void {
  if (mountInfo === null) return;
  const mount = networkMountOf(realLocation(journalPath), mountInfo);
  if (mount) throw new NetworkFilesystemError(journalPath, mount);
}
