/**
 * `--on-done keep|move`: what happens to an input of `genpipe watch` once its result is recorded.
 *
 * - `keep` (default): nothing; the journal remembers the file was done.
 * - `move`: a succeeded input goes to `processed/`, a failed one to `failed/`, both folders BESIDE the
 *   inbox (siblings of the watched folder, never inside it), mirroring the input's relative path. A
 *   skipped input (no recipe rule claims it) stays where it is: it has no result to file away.
 *
 * Only the version whose result was recorded is filed away: a file found with another size or mtime
 * and other bytes (a newer version, written while the earlier one was processed) stays where it is, to
 * be processed and filed in its turn (see isCheckedVersion).
 *
 * An input's sidecar (`photo.png.json`) goes with it, after it, beside it under its new name
 * (`processed/photo-1.png.json` beside `processed/photo-1.png`), so it stays that input's sidecar and
 * is never left in the inbox to become an input of its own or the sidecar of a later file of that
 * name. The input moves first: a crash between the two moves leaves a sidecar in the inbox whose
 * input is gone and finished in the journal; the next watch files it beside that input before it
 * watches (fileLeftSidecars), so it is never taken as an input nor applied to a later file.
 *
 * With `deleteEmptyDirs` (`--delete-empty-src-dirs`, rclone's name), the folders of the inbox that a
 * move left empty are removed, deepest first, never the inbox itself (removeEmptiedDirs).
 *
 * A move never overwrites: a name already taken gets a suffix (`photo-1.jpg`, `photo-2.jpg`, …), claimed
 * atomically with a hard link (which fails when the name exists) before the original is unlinked. Across
 * filesystems (EXDEV) the file is copied to a hidden temporary name beside its destination, fsynced,
 * checked unchanged, linked to its final name, and only then is the original unlinked. Bytes stream
 * through the kernel (copyFile); nothing is held in memory.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, link, lstat, mkdir, open, realpath, rename, rmdir, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { futureRealpath } from '../discover.ts';
import { type CheckedVersion, isCheckedVersion } from '../input-changed.ts';
import { escapedName, inputPathIn } from '../raw-names.ts';
import { SIDECAR_SUFFIX } from '../recipe-sidecar.ts';
import { suffixedName } from '../report/item-paths.ts';
import type { OnDoneMode } from './defaults.ts';

export { ON_DONE_MODES, type OnDoneMode } from './defaults.ts';

/** The outcome of an input whose result was recorded. */
export type InputOutcome = 'succeeded' | 'failed' | 'skipped';

/** What --on-done says. */
export const ON_DONE_TEXTS = {
  /** The note of an input left in the inbox because it is no longer the version whose result was recorded. */
  leftChanged: (input: string) =>
    `${input} stays in the inbox: it changed after the version just done was checked; ` +
    'the new version is moved when it is done',
  /** The note of a sidecar an interrupted move left in the inbox, filed beside its input at start. */
  sidecarFiled: (to: string) =>
    `a sidecar left in the inbox by an interrupted move was filed beside its input: ${to}`,
} as const;

/** Names of the folders beside the inbox. */
export const ON_DONE_FOLDERS = { succeeded: 'processed', failed: 'failed' } as const;

export interface SettleResult {
  /** Where the input went; null when it stayed (keep, skipped, a symbolic link). */
  movedTo: string | null;
  /** Where its sidecar went with it, when it had one. */
  sidecarTo?: string;
  /** Why its sidecar could not follow it (the input moved all the same). */
  sidecarProblem?: string;
  /** True when the move crossed filesystems (copied, then the original unlinked). */
  copied: boolean;
  /** Set when the file stayed because it is not the version `SettleOptions.version` any more. */
  changed?: true;
}

/** Errors of a link/rename that mean "this filesystem has no hard links". */
const NO_HARD_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EMLINK']);

const errCode = (err: unknown) => (err as NodeJS.ErrnoException).code;

/** `a/photo.jpg`, 2 → `a/photo-2.jpg` (n = 0 gives the name itself): the out folders' naming too. */
export { suffixedName };

/** `processed/` and `failed/` beside `inboxDir`. */
export function onDoneDirs(inboxDir: string): { processed: string; failed: string } {
  const parent = dirname(resolve(inboxDir));
  return { processed: join(parent, ON_DONE_FOLDERS.succeeded), failed: join(parent, ON_DONE_FOLDERS.failed) };
}

/**
 * Where `--on-done move` files the inputs of `inboxDir`: `processed/` and `failed/` beside its real path
 * (settleInput moves there; `watch` refuses an out dir that overlaps them).
 *
 * @example await onDoneTargets('inbox') // ['/home/me/processed', '/home/me/failed']
 */
export async function onDoneTargets(inboxDir: string): Promise<string[]> {
  const { processed, failed } = onDoneDirs(await futureRealpath(inboxDir));
  return [processed, failed];
}

/**
 * Paths are handled here as byte strings — each byte of the path one character (latin1) — so that the
 * path module's `/` and `.` work on any name, valid UTF-8 or not (a file whose name is not valid UTF-8
 * goes to failed/ under its own bytes); fs gets the bytes back (fsPath).
 */
const byteString = (p: string | Buffer): string =>
  (typeof p === 'string' ? Buffer.from(p) : p).toString('latin1');
const fsPath = (p: string): Buffer => Buffer.from(p, 'latin1');
/** A byte string as text: its UTF-8, the bytes that are not escaped (raw-names.ts). */
const shownPath = (p: string): string => escapedName(fsPath(p));

async function fsyncPath(path: string): Promise<void> {
  try {
    const fh = await open(fsPath(path), 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // Some filesystems refuse fsync on a folder; the data itself was synced already.
  }
}

const linkBytes = (from: string, to: string) => link(fsPath(from), fsPath(to));

/** Claims the first free name among dst, dst-1, dst-2, … for `src` with `place`; returns it. */
async function claimName(src: string, dst: string, place: (from: string, to: string) => Promise<void>) {
  for (let n = 0; ; n++) {
    const candidate = suffixedName(dst, n);
    try {
      await place(src, candidate);
      return candidate;
    } catch (err) {
      if (errCode(err) !== 'EEXIST') throw err;
    }
  }
}

/** A rename that refuses an existing destination (for filesystems without hard links; a tiny race remains). */
async function renameNoClobber(from: string, to: string): Promise<void> {
  if ((await lstat(fsPath(to)).catch(() => null)) !== null) {
    throw Object.assign(new Error(`${shownPath(to)} exists`), { code: 'EEXIST' });
  }
  await rename(fsPath(from), fsPath(to));
}

/** Puts `from` at the first free name from `dst` without ever overwriting; `from` is gone afterwards. */
async function placeNoClobber(from: string, dst: string): Promise<string> {
  try {
    const to = await claimName(from, dst, linkBytes);
    await unlink(fsPath(from));
    return to;
  } catch (err) {
    if (!NO_HARD_LINKS.has(errCode(err) ?? '')) throw err;
    return claimName(from, dst, renameNoClobber);
  }
}

/**
 * Moves the file `src` to `dst`, or to `dst` with a suffix when that name is taken; never overwrites,
 * works across filesystems (see the module comment). Either may be the path's bytes (a name that is
 * not valid UTF-8).
 *
 * @returns where it went (as text: escaped where it is not valid UTF-8) and whether it was copied
 *   across filesystems
 * @throws Error when `src` changed while it was being copied (it is then left in place)
 * @example await moveNoClobber('inbox/a.jpg', 'processed/a.jpg') // { to: 'processed/a-1.jpg', copied: false } when a.jpg existed
 */
export async function moveNoClobber(
  src: string | Buffer,
  dst: string | Buffer,
): Promise<{ to: string; copied: boolean }> {
  const { to, copied } = await moveBytes(byteString(src), byteString(dst));
  return { to: shownPath(to), copied };
}

async function moveBytes(src: string, dst: string): Promise<{ to: string; copied: boolean }> {
  await mkdir(fsPath(dirname(dst)), { recursive: true });
  try {
    const to = await claimName(src, dst, linkBytes);
    await unlink(fsPath(src));
    await fsyncPath(dirname(to));
    await fsyncPath(dirname(src));
    return { to, copied: false };
  } catch (err) {
    const code = errCode(err);
    if (code === 'EXDEV') return { to: await copyAcrossBytes(src, dst), copied: true };
    if (!NO_HARD_LINKS.has(code ?? '')) throw err;
  }
  let to: string;
  try {
    to = await claimName(src, dst, renameNoClobber);
  } catch (err) {
    if (errCode(err) === 'EXDEV') return { to: await copyAcrossBytes(src, dst), copied: true };
    throw err;
  }
  await fsyncPath(dirname(to));
  await fsyncPath(dirname(src));
  return { to, copied: false };
}

/** The cross-filesystem move: copy to a hidden temp name, fsync, check, claim the name, unlink the original. */
export async function copyAcross(src: string, dst: string): Promise<string> {
  return shownPath(await copyAcrossBytes(byteString(src), byteString(dst)));
}

async function copyAcrossBytes(src: string, dst: string): Promise<string> {
  await mkdir(fsPath(dirname(dst)), { recursive: true });
  const before = await stat(fsPath(src));
  const tmp = join(dirname(dst), `.${basename(dst)}.genpipe-move-${randomBytes(4).toString('hex')}.part`);
  try {
    await copyFile(fsPath(src), fsPath(tmp), constants.COPYFILE_EXCL);
    await fsyncPath(tmp);
    const after = await stat(fsPath(src));
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) {
      throw new Error(`${shownPath(basename(src))} changed while it was being moved; it was left in place`);
    }
    const to = await placeNoClobber(tmp, dst);
    await fsyncPath(dirname(to));
    await unlink(fsPath(src));
    await fsyncPath(dirname(src));
    return to;
  } finally {
    await unlink(fsPath(tmp)).catch(() => undefined);
  }
}

export interface SettleOptions {
  mode: OnDoneMode;
  /** The watched folder. */
  inboxDir: string;
  /** The input's path relative to the inbox, '/'-separated. */
  input: string;
  /**
   * The bytes of that path (base64) when they are not valid UTF-8 (Item.rawInput): the file is then
   * reached, and filed away, by them — `input` is only their escaped text.
   */
  rawInput?: string;
  outcome: InputOutcome;
  /** The version whose result was recorded: a file that is not it any more stays (ON_DONE_TEXTS.leftChanged). */
  version?: CheckedVersion;
  /** Remove the folders the move left empty (removeEmptiedDirs). */
  deleteEmptyDirs?: boolean;
}

/**
 * Removes the folders on `input`'s path in `inbox` that are empty now, deepest first, up to and never
 * including the inbox itself; stops at the first that is not. rmdir removes only an empty folder, at
 * once: a folder that holds anything — a file that arrived while its input was processed included —
 * stays, and so does every folder above it.
 *
 * Works on the path's bytes (byteString), so a folder whose name is not valid UTF-8 (Item.rawInput) is
 * removed like any other.
 *
 * @param inbox - the inbox's real path
 * @param item - the moved input: its path relative to the inbox, '/'-separated, and its bytes (base64)
 *   when they are not valid UTF-8
 * @returns the folders removed, as text (shownPath)
 * @example await removeEmptiedDirs('/in', { input: 'trip/day1/a.jpg' }) // ['/in/trip/day1', '/in/trip'] when both were left empty
 */
export async function removeEmptiedDirs(
  inbox: string,
  item: Pick<SettleOptions, 'input' | 'rawInput'>,
): Promise<string[]> {
  const rel = item.rawInput === undefined ? Buffer.from(item.input) : Buffer.from(item.rawInput, 'base64');
  const root = byteString(inbox);
  const folders = byteString(rel).split('/').slice(0, -1);
  const removed: string[] = [];
  for (let depth = folders.length; depth > 0; depth--) {
    const dir = join(root, ...folders.slice(0, depth));
    try {
      await rmdir(fsPath(dir));
      removed.push(shownPath(dir));
    } catch (err) {
      // Gone already (another move emptied and removed it): the one above may be empty now.
      if (errCode(err) !== 'ENOENT') break;
    }
  }
  return removed;
}

/**
 * Files an input away after its result was recorded (see the module comment): nothing for `keep` or a
 * skipped input; for `move`, `processed/<input>` or `failed/<input>` beside the inbox — unless the file
 * is no longer `version` (then `changed`, and it stays) — and with `deleteEmptyDirs` the folders left
 * empty removed.
 *
 * @throws Error when the inbox has no parent to put the folders in, or the move fails
 * @example await settleInput({ mode: 'move', inboxDir: 'inbox', input: 'trip/a.jpg', outcome: 'succeeded' }) // { movedTo: '/…/processed/trip/a.jpg', copied: false }
 */
export async function settleInput(opts: SettleOptions): Promise<SettleResult> {
  if (opts.mode === 'keep' || opts.outcome === 'skipped') return { movedTo: null, copied: false };
  const inbox = await realpath(resolve(opts.inboxDir));
  const dirs = onDoneDirs(inbox);
  const target = opts.outcome === 'succeeded' ? dirs.processed : dirs.failed;
  if (target === inbox || target.startsWith(inbox.endsWith(sep) ? inbox : inbox + sep)) {
    throw new Error(`--on-done move needs a folder beside ${inbox} for ${basename(target)}/; it has none`);
  }
  const src = inputPathIn(inbox, opts);
  const st = await lstat(src);
  if (st.isSymbolicLink()) return { movedTo: null, copied: false }; // its target is an input of its own
  if (opts.version && !(await isCheckedVersion(src, opts.version))) {
    return { movedTo: null, copied: false, changed: true };
  }
  const dst = inputPathIn(target, opts);
  const { to, copied } = await moveBytes(byteString(src), byteString(dst));
  const moved: SettleResult = { movedTo: shownPath(to), copied };
  try {
    const sidecarTo = await moveSidecar(byteString(src), to);
    if (sidecarTo !== null) moved.sidecarTo = sidecarTo;
  } catch (err) {
    // The input is moved: that stands. The sidecar left is filed at the next start (fileLeftSidecars).
    moved.sidecarProblem = `its sidecar stays in the inbox until the next watch files it: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (opts.deleteEmptyDirs) await removeEmptiedDirs(inbox, opts);
  return moved;
}

/**
 * Moves the sidecar of the input that was at `src` (byte string) beside it at `to`, when it has one
 * (a regular file; a symbolic link or a folder of that name is not a sidecar and stays).
 *
 * @returns where the sidecar went, or null when there was none
 */
async function moveSidecar(src: string, to: string): Promise<string | null> {
  const sidecar = src + SIDECAR_SUFFIX;
  const st = await lstat(fsPath(sidecar)).catch(() => null);
  if (!st?.isFile()) return null;
  return shownPath((await moveBytes(sidecar, to + SIDECAR_SUFFIX)).to);
}

const SUCCEEDED_STATES = new Set(['reported', 'downloaded']);

/** A finished input of an earlier session, as the journal keeps it (finishedItems). */
export interface FinishedInput {
  input: string;
  rawInput?: string;
  /** Where the input is now: its moved path when --on-done move filed it away. */
  absPath: string;
  state: string;
}

/**
 * Recovers from a crash between an input's move and its sidecar's (settleInput): each sidecar left in
 * the inbox whose input is gone from it and finished in the journal (succeeded or failed) is filed
 * beside that input — at its moved path when the journal recorded it, else at the input's mirrored
 * path in processed/ or failed/ — never overwriting. Run before watching, so such a sidecar is never
 * taken as an input of its own nor applied to a later file of its input's name.
 *
 * @returns where each sidecar went
 * @example await fileLeftSidecars('inbox', await journal.finishedItems()) // ['/…/processed/trip/a.png.json']
 */
export async function fileLeftSidecars(
  inboxDir: string,
  finished: readonly FinishedInput[],
): Promise<string[]> {
  const inbox = await realpath(resolve(inboxDir));
  const dirs = onDoneDirs(inbox);
  const moved: string[] = [];
  for (const item of finished) {
    // A name that is not valid UTF-8 fails at once, its sidecar unread: such a sidecar is no input's.
    if (item.rawInput !== undefined) continue;
    const outcome =
      item.state === 'failed' ? 'failed' : SUCCEEDED_STATES.has(item.state) ? 'succeeded' : null;
    if (outcome === null) continue;
    const src = byteString(inputPathIn(inbox, item));
    if ((await lstat(fsPath(src)).catch(() => null)) !== null) continue; // the input is here: its sidecar is its own
    const sidecar = src + SIDECAR_SUFFIX;
    if (!(await lstat(fsPath(sidecar)).catch(() => null))?.isFile()) continue;
    const target = outcome === 'succeeded' ? dirs.processed : dirs.failed;
    const movedAway = !byteString(resolve(item.absPath)).startsWith(byteString(inbox + sep));
    const beside = movedAway ? byteString(item.absPath) : byteString(inputPathIn(target, item));
    moved.push(shownPath((await moveBytes(sidecar, beside + SIDECAR_SUFFIX)).to));
  }
  return moved;
}
