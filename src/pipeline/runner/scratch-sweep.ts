/**
 * Clearing away what an interrupted run left half-written in the out dir. Every writer of the pipeline
 * writes to a scratch name and renames it onto the final name only when complete (`<output>.part` for
 * downloads, `<file>.<random>.tmp` for result.json and the reports, `<thumb>.<random>.part` for
 * thumbnails, `composite.png.part`), so a kill leaves scratch files but never a partial file under a
 * final name. The runner removes those scratch files: the batch-level ones when a batch starts, an
 * item's own when the journal hands back an item an earlier run worked on.
 */
import type { Dirent } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { itemOutDir, THUMBS_DIR } from '../report/index.ts';

/** True for the name of a scratch file of an item's out folder. */
export function isScratchName(name: string): boolean {
  return name.endsWith('.part') || name.endsWith('.tmp');
}

/** Removes the files of `dir` (not its subfolders) whose name `matches`; returns how many. */
async function removeMatching(dir: string, matches: (name: string) => boolean): Promise<number> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0; // no such folder: nothing was left
  }
  let removed = 0;
  for (const e of entries) {
    if (!e.isFile() || !matches(e.name)) continue;
    await rm(join(dir, e.name), { force: true });
    removed++;
  }
  return removed;
}

/**
 * Removes the scratch files an interrupted run may have left in the item's out folder `<out>/<place>/`
 * (partial downloads, composites and result.json writes).
 *
 * @param place - the item's place (see itemPlace)
 * @returns how many files were removed
 * @example await sweepItemScratch('/data/out', 'photos/a.jpg') // removes out/photos/a.jpg/output-0.png.part
 */
export async function sweepItemScratch(outDir: string, place: string): Promise<number> {
  return removeMatching(itemOutDir(outDir, place), isScratchName);
}

/**
 * Removes the batch-level scratch files an interrupted run may have left: `report.json.*.tmp`,
 * `report.html.*.tmp` (and `report.views.*.tmp`, where a view file could not be removed while open) at
 * the top of the out dir, and partial thumbnails in `.thumbs/`.
 *
 * @returns how many files were removed
 */
export async function sweepBatchScratch(outDir: string): Promise<number> {
  const top = await removeMatching(outDir, (n) => n.startsWith('report.') && n.endsWith('.tmp'));
  const thumbs = await removeMatching(join(outDir, THUMBS_DIR), (n) => n.endsWith('.part'));
  return top + thumbs;
}
