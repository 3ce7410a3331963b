/**
 * The guard that makes the bytes that travel the bytes that were checked and journaled. An item carries
 * the sha256 of its file as the journal keyed it when it was admitted, before its check
 * (Item.contentHash); whatever way the file goes out, what is sent is compared with it before anything
 * is created from it:
 *
 * - an upload (inline or presigned): the sha256 the client computed while streaming the file, once the
 *   upload finished and before the create that would use its file_id (a file that changed size while it
 *   streamed ends the upload on its own: SizeMismatchError);
 * - base64: the bytes read for the create, hashed as they are read, before the create is sent.
 *
 * A mismatch rejects with InputChangedError: nothing is created from those bytes, and the runner hands
 * the item back to be processed again from the start (sniff, plan, the journal with its new key, check).
 * The content hash, not the file's identity (size, mtime, ctime), is what is compared: it says exactly
 * which bytes went out, costs no extra read (the journal hashed the file at admission, with its cache;
 * the client hashes an upload as it streams; base64 images are at most 4 MiB), and is not fooled by a
 * rewrite of the same size within one tick of a coarse filesystem clock.
 */
import { createHash } from 'node:crypto';
import type { Item } from './item.ts';

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
