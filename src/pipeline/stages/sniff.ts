/**
 * Stage sniff (discovered → sniffed): the file's real type from its bytes. file-type names images and
 * videos whatever the extension says (a `.png` that holds a JPEG is a JPEG); when it finds nothing, a
 * head that is valid UTF-8 without NUL bytes makes a text (prompt) file. Only the head is read.
 *
 * Sniff judges no file: an unknown or empty file is recorded as such, and plan fails it only when a
 * recipe rule claims it (a file no rule matches is skipped, whatever it holds).
 */
import { open } from 'node:fs/promises';
import { isMediaError, SNIFF_HEAD_BYTES, sniffFile } from '../../media/index.ts';
import type { Item } from '../item.ts';
import { advance, expectState, failItem, type StageContext } from '../stage.ts';

type Sniff = NonNullable<Item['sniff']>;

/** The sniff of a text (prompt) file. */
export const TEXT_SNIFF: Sniff = { mime: 'text/plain', ext: 'txt', kind: 'text' };
/** The sniff of an empty file. */
export const EMPTY_SNIFF: Sniff = { mime: 'application/x-empty', ext: '', kind: 'other' };
/** The sniff of bytes that are no known format and not text. */
export const UNKNOWN_SNIFF: Sniff = { mime: 'application/octet-stream', ext: '', kind: 'other' };

/**
 * Reads the head of a file file-type did not recognise: `empty`, `text` (valid UTF-8, no NUL byte; a
 * multi-byte character cut at the end of the head is fine) or `binary`.
 */
async function headKind(path: string): Promise<'empty' | 'text' | 'binary'> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(SNIFF_HEAD_BYTES);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await fh.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    if (n === 0) return 'empty';
    const head = buf.subarray(0, n);
    if (head.includes(0)) return 'binary';
    const more = n === buf.length;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: more });
      return 'text';
    } catch {
      return 'binary';
    }
  } finally {
    await fh.close();
  }
}

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
    const found = await sniffFile(item.absPath);
    if (found) return advance(item, 'sniffed', { sniff: { ...found } });
    const head = await headKind(item.absPath);
    const result = head === 'empty' ? EMPTY_SNIFF : head === 'text' ? TEXT_SNIFF : UNKNOWN_SNIFF;
    return advance(item, 'sniffed', { sniff: { ...result } });
  } catch (err) {
    if (isMediaError(err, 'missing')) return failItem(item, 'sniff', err.message);
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
      return failItem(item, 'sniff', 'file not found or not readable');
    }
    throw err;
  }
}
