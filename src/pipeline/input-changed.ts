/**
 * The guard that makes the bytes that travel the bytes that were checked and journaled. An item carries
 * the sha256 of its file as the journal keyed it when it was admitted, before its check
 * (Item.contentHash); whatever way the file goes out, what is sent is compared with it before anything
 * is created from it:
 *
 * - an upload (inline or presigned): the sha256 the client computed while streaming the file, once the
 *   upload finished and before the create that would use its file_id (a file that changed size while it
 *   streamed ends the upload on its own: SizeMismatchError);
 * - base64: the bytes read for the create, hashed as they are read, before the create is sent;
 * - any create: right before it is sent, the file itself (assertFileAsChecked), so a file that changed
 *   after its upload — while it waited for a job slot — or a prompt file whose text the request holds
 *   since plan is not sent as it was.
 *
 * A mismatch rejects with InputChangedError: nothing is created from those bytes, and the runner hands
 * the item back to be processed again from the start (sniff, plan, the journal with its new key, check).
 * The content hash, not the file's identity (size, mtime, ctime), is what is compared: it says exactly
 * which bytes went out, costs no extra read (the journal hashed the file at admission, with its cache;
 * the client hashes an upload as it streams; base64 images are at most 4 MiB), and is not fooled by a
 * rewrite of the same size within one tick of a coarse filesystem clock. The file itself is looked at
 * with a stat first (isCheckedVersion): the same size and mtime as when it was found is the version
 * checked, and only another size or mtime costs a read of its bytes.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import type { Item } from './item.ts';
import { sha256File } from './store/content-hash.ts';

/** The texts of a file that changed while it was processed. */
export const INPUT_CHANGED_TEXTS = {
  /** The progress reason of an item handed back to be processed again in the same run. */
  again: 'the file changed while it was processed: checked again',
  /** The reason of a watched item left for the watcher, which hands the file over again once it is stable. */
  watch: 'the file changed while it was processed: checked again once it is stable',
  /** The reason of an item that changed every time it was processed again in a run. */
  tooOften: (times: number) =>
    `the file changed while it was processed, ${times} times in a row: nothing of it was sent. ` +
    'The next run checks it again',
  /** Item.failure.kind of such an item. */
  failureKind: 'file changed while processed',
} as const;

/** The item's file is not what was checked: nothing may be created from the bytes that would travel. */
export class InputChangedError extends Error {
  override name = 'InputChangedError';

  /**
   * @param input - the item's input path
   * @param how - what differs, for a log (`sha256 of the upload …`)
   */
  constructor(
    readonly input: string,
    readonly how: string,
  ) {
    super(`${input} changed after it was checked: ${how}`);
  }
}

/** Hex sha256 of `bytes`. */
export function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Rejects with InputChangedError when `sha256` (of the bytes that would travel) is not the content hash
 * the item was checked and journaled with. An item without one (admitted by nothing that hashed it)
 * passes.
 *
 * @param what - what was hashed, for the error (`the upload`, `the bytes read for the create`)
 * @example assertCheckedBytes(item, result.sha256, 'the upload');
 */
export function assertCheckedBytes(item: Item, sha256: string, what: string): void {
  if (item.contentHash === undefined || item.contentHash === sha256) return;
  throw new InputChangedError(
    item.input,
    `the sha256 of ${what} is ${sha256.slice(0, 12)}…, the file was checked as ${item.contentHash.slice(0, 12)}…`,
  );
}

/** What an item's file was when it was checked: its size and mtime when found, the sha256 it was keyed by. */
export type CheckedVersion = Pick<Item, 'size' | 'mtimeMs' | 'contentHash'>;

/**
 * True when the file at `path` is still `version`: the same size and mtime (one stat), or else bytes
 * of its sha256 (a touch without a change is the same version). Without a sha256 to compare, another
 * size or mtime is another version.
 *
 * @throws what stat or the read throws (ENOENT: the file is gone)
 * @example await isCheckedVersion(item.absPath, item) // false once the file was replaced
 */
export async function isCheckedVersion(
  path: string | Buffer,
  version: CheckedVersion,
  signal?: AbortSignal,
): Promise<boolean> {
  const now = await stat(path);
  if (now.size === version.size && now.mtimeMs === version.mtimeMs) return true;
  if (version.contentHash === undefined) return false;
  return (await sha256File(path, signal)) === version.contentHash;
}

/**
 * Rejects with InputChangedError when the item's file is no longer the version it was checked and
 * journaled as (isCheckedVersion): called right before a create is sent, whatever carries the file's
 * content (an upload's file_id, a prompt file's text in the request). A file that is gone or cannot be
 * read passes: nothing other than what was checked would travel. An item without a content hash passes.
 */
export async function assertFileAsChecked(item: Item, signal: AbortSignal): Promise<void> {
  if (item.contentHash === undefined) return;
  let same: boolean;
  try {
    same = await isCheckedVersion(item.absPath, item, signal);
  } catch (err) {
    if (signal.aborted) throw err;
    return;
  }
  if (!same) {
    throw new InputChangedError(
      item.input,
      `its size or mtime and its sha256 are not the ones it was checked with (${item.contentHash.slice(0, 12)}…)`,
    );
  }
}
