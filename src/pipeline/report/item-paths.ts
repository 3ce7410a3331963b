/**
 * Where an item's files go under the out dir: `<out>/<place>/`. A place is the input's path relative to
 * the input dir, made a name every folder on the way can have (folderPlace): the path itself for
 * almost every file; `\` written `%5C` (and a `.` or `..` segment `%2E`, `%2E%2E`), and a name
 * longer than NAME_MAX_BYTES cut at its end, before its suffix and extension.
 */
import { extname, join } from 'node:path';
import type { Item } from '../item.ts';
import { placeInput } from '../raw-names.ts';
import { isOutDirOwnName } from './out-dir-names.ts';

/** Name of the per-item result file inside the item's out folder. */
export const RESULT_FILE = 'result.json';

/**
 * The item's out folder `<out>/<relative path>/` (e.g. `out/photos/a.jpg/`).
 *
 * @param input the item's place (see itemPlace) or path relative to the input dir, '/' separated
 * @throws Error when `input` is empty, absolute or has a `.`/`..` segment (it would leave the out dir)
 * @example itemOutDir('/out', 'photos/a.jpg') // → '/out/photos/a.jpg'
 */
export function itemOutDir(outDir: string, input: string): string {
  const parts = input.split('/');
  if (input === '' || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\'))) {
    throw new Error(`input path '${input}' cannot name a folder inside the out dir`);
  }
  return join(outDir, ...parts);
}

/**
 * The item's place: its out folder relative to the out dir (Item.place, or its input path when the
 * journal gave it none).
 *
 * @example itemPlace({ input: 'scan.png', place: 'scan-1.png' }) // 'scan-1.png'
 */
export function itemPlace(item: Pick<Item, 'input' | 'place' | 'rawInput'>): string {
  return item.place ?? folderPlace(placeInput(item));
}

/** `<out>/<place>/`: the folder of the item's outputs and result.json. */
export function itemFolder(outDir: string, item: Pick<Item, 'input' | 'place' | 'rawInput'>): string {
  return itemOutDir(outDir, itemPlace(item));
}

/**
 * The n-th alternative of a name, the suffix before the extension: `a/photo.jpg`, 2 → `a/photo-2.jpg`
 * (n = 0 gives the name itself). Used for the places of inputs that reuse a name, and by
 * `watch --on-done move` for names already taken in processed/ and failed/.
 *
 * @example suffixedName('x/archive.tar.gz', 3) // 'x/archive.tar-3.gz'
 */
export function suffixedName(path: string, n: number): string {
  if (n === 0) return path;
  const ext = extname(path);
  return `${path.slice(0, path.length - ext.length)}-${n}${ext}`;
}

/** Longest folder name, in bytes (NAME_MAX of the file systems of Linux and macOS). */
export const NAME_MAX_BYTES = 255;

/** An extension longer than this (in bytes) is not kept whole when a name is cut: it is name. */
const EXT_KEPT_MAX_BYTES = 32;

const bytesOf = (s: string) => Buffer.byteLength(s, 'utf8');

/** A segment of an input path as a folder name may hold it: `\` (a separator elsewhere), `.`, `..`. */
function escapeSegment(segment: string): string {
  if (segment === '.' || segment === '..') return segment.replaceAll('.', '%2E');
  return segment.replaceAll('\\', '%5C');
}

/** `stem + tail`, the stem cut at its end (whole characters) so that it fits NAME_MAX_BYTES. */
function fitName(stem: string, tail: string): string {
  if (bytesOf(stem) + bytesOf(tail) <= NAME_MAX_BYTES) return stem + tail;
  const chars = Array.from(stem);
  let size = bytesOf(stem);
  const room = NAME_MAX_BYTES - bytesOf(tail);
  while (chars.length > 1 && size > room) size -= bytesOf(chars.pop() as string);
  return chars.join('') + tail;
}

/**
 * The n-th candidate place of `input` (n = 0 first; see choosePlace in store/item-place.ts): every
 * segment escaped (`\` → `%5C`; a `.` or `..` segment → `%2E`, `%2E%2E`), the n-th suffix before the
 * extension as suffixedName puts it, and a name longer than NAME_MAX_BYTES cut at the end of its stem,
 * keeping the suffix and an extension of up to 32 bytes. A path whose first segment is one of the names
 * the batch writes at the top of the out dir (out-dir-names.ts: `report.json`, `report.html`, …) is
 * never its own place: the (n+1)-th suffix goes on that first segment (`report.json` → `report-1.json`,
 * `report.html/a.png` → `report-1.html/a.png`), so every input's place leaves the batch's files be.
 * The same input and n always give the same place; two inputs may give the same one, which
 * choosePlace settles (the second takes a later n).
 *
 * @example folderPlace('a\\b.txt') // 'a%5Cb.txt'
 * @example folderPlace('photos/a.jpg', 2) // 'photos/a-2.jpg'
 * @example folderPlace('report.json') // 'report-1.json'
 */
export function folderPlace(input: string, n = 0): string {
  const parts = input.split('/').map(escapeSegment);
  if (isOutDirOwnName(parts[0] as string)) {
    // One of the batch's own names (report.json, .genpipe, …): its top segment always takes a suffix.
    const top = suffixedSegment(parts.shift() as string, n + 1);
    return [top, ...parts.map((p) => fitName(p, ''))].join('/');
  }
  const name = parts.pop() as string;
  return [...parts.map((p) => fitName(p, '')), suffixedSegment(name, n)].join('/');
}

/** One segment with the n-th suffix before its extension, cut to NAME_MAX_BYTES (see folderPlace). */
function suffixedSegment(name: string, n: number): string {
  const suffix = n === 0 ? '' : `-${n}`;
  let ext = extname(name);
  if (bytesOf(ext) > EXT_KEPT_MAX_BYTES) ext = '';
  const stem = name.slice(0, name.length - ext.length);
  return fitName(stem, `${suffix}${ext}`);
}

/**
 * True when `place` names a folder inside the out dir that the file system can make: what itemOutDir
 * accepts, with no segment longer than NAME_MAX_BYTES. Every folderPlace is one.
 */
export function isFolderPlace(place: string): boolean {
  try {
    itemOutDir('/', place);
  } catch {
    return false;
  }
  return place.split('/').every((p) => bytesOf(p) <= NAME_MAX_BYTES);
}
