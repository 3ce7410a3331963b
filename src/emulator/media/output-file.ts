/** Writing a renderer's output atomically: into a scratch name beside it, renamed on success. */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';

/** A unique scratch path beside `path` (same directory, so a rename is atomic). */
export function scratchPathFor(path: string, suffix = 'partial'): string {
  return `${path}.${randomUUID().slice(0, 8)}.${suffix}`;
}

/**
 * Runs `write` with a scratch path, then renames it onto `outPath`. On failure the scratch file is
 * removed and nothing appears at `outPath`.
 */
export async function writeAtomically<T>(
  outPath: string,
  write: (scratchPath: string) => Promise<T>,
): Promise<T> {
  await mkdir(dirname(outPath), { recursive: true });
  const scratch = scratchPathFor(outPath);
  try {
    const result = await write(scratch);
    await rename(scratch, outPath);
    return result;
  } catch (err) {
    await rm(scratch, { force: true });
    throw err;
  }
}
