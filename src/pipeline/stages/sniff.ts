/**
 * Stage sniff (discovered → sniffed): the file's real type from its bytes. file-type names images and
 * videos whatever the extension says (a `.png` that holds a JPEG is a JPEG); when it finds nothing, a
 * head that is valid UTF-8 without NUL bytes makes a text (prompt) file. Only the head is read (the
 * sniffing is media-check.ts's, shared with `generate` and `files upload`).
 *
 * Sniff judges no file: an unknown or empty file is recorded as such, and plan fails it only when a
 * recipe rule claims it (a file no rule matches is skipped, whatever it holds).
 */
import { isMediaError } from '../../media/index.ts';
import type { Item } from '../item.ts';
import { EMPTY_SNIFF, sniffPath, TEXT_SNIFF, UNKNOWN_SNIFF } from '../media-check.ts';
import { advance, expectState, failItem, type StageContext } from '../stage.ts';

export { EMPTY_SNIFF, TEXT_SNIFF, UNKNOWN_SNIFF };

/**
 * Sniffs the item's real type and advances it to `sniffed` with `sniff` set ({@link TEXT_SNIFF},
 * {@link EMPTY_SNIFF} or {@link UNKNOWN_SNIFF} when file-type finds nothing). Fails the item only when
 * the file cannot be read any more ("file not found or not readable").
 *
 * @example const next = await sniff(item, ctx); // next.sniff → { mime: 'image/jpeg', ext: 'jpg', kind: 'image' }
 */
export async function sniff(item: Item, ctx: StageContext): Promise<Item> {
  expectState(item, 'sniff', 'discovered');
  ctx.signal.throwIfAborted();
  try {
    return advance(item, 'sniffed', { sniff: await sniffPath(item.absPath) });
  } catch (err) {
    if (isMediaError(err, 'missing')) return failItem(item, 'sniff', err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      return failItem(item, 'sniff', 'file not found or not readable');
    }
    throw err;
  }
}
