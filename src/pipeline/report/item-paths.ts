/** Where an item's files go under the out dir. */
import { extname, join } from 'node:path';
import type { Item } from '../item.ts';

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
export function itemPlace(item: Pick<Item, 'input' | 'place'>): string {
  return item.place ?? item.input;
}

/** `<out>/<place>/`: the folder of the item's outputs and result.json. */
export function itemFolder(outDir: string, item: Pick<Item, 'input' | 'place'>): string {
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
