/** Where an item's files go under the out dir. */
import { join } from 'node:path';

/** Name of the per-item result file inside the item's out folder. */
export const RESULT_FILE = 'result.json';

/**
 * The item's out folder `<out>/<relative input path>/` (e.g. `out/photos/a.jpg/`).
 *
 * @param input the item's path relative to the input dir, '/' separated
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
