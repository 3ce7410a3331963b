/** Writing a report file atomically: into a scratch name beside it, renamed onto it on success. */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Writes `text` to `path` through `<path>.<random>.tmp` and a rename, so a reader sees either the old
 * file or the whole new one, never a half-written one. Creates the parent directory when missing.
 *
 * @example await writeFileAtomic('/out/report.json', JSON.stringify(report));
 */
export async function writeFileAtomic(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${randomUUID().slice(0, 8)}.tmp`;
  try {
    await writeFile(tmp, text, 'utf8');
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
