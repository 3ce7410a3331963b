/**
 * The outputs of another input with the same content and recipe (store/same-content.ts), given to an
 * item without sending anything: each file is hard-linked into the item's place, or copied where the
 * file system cannot link (another device, no hard links) — never a symlink, which a later delete of
 * the other input's folder would break. The item then stands `downloaded`, its steps the other item's
 * with their paths moved to its place, and the report stage writes its result.json as for any other.
 * A chain's steps done for the same content are taken so too, and the item goes on with the others.
 */
import { constants } from 'node:fs';
import { copyFile, link, mkdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Item, StepRecord } from './item.ts';
import { itemPlace } from './report/item-paths.ts';
import { outputPathsOf } from './store/outputs-check.ts';
import { stepsTaken } from './store/step-work.ts';

/**
 * What reuseOutputs reads of the other input: its out folder and its item as recorded there; with
 * `steps`, only those of a chain's steps are taken (store/step-work.ts), the rest to be sent.
 */
export interface ReusedFrom {
  place: string;
  item: Item;
  steps?: readonly StepRecord[];
}

/** Codes of a link the file system refuses where a copy may still work. */
const CANNOT_LINK = new Set(['EXDEV', 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK', 'ENOSYS']);

/**
 * Links (or copies) `from`'s local files into `item`'s place; the item at `downloaded` with them.
 *
 * @throws the file system's error when a file can be neither linked nor copied (a full disk, no permission)
 * @example await reuseOutputs('/out', planned, { place: 'a.png', item: doneA }) // steps under 'b.png/'
 */
export async function reuseOutputs(outDir: string, item: Item, from: ReusedFrom): Promise<Item> {
  const place = itemPlace(item);
  const moved = (path: string): string =>
    path.startsWith(`${from.place}/`) ? `${place}/${path.slice(from.place.length + 1)}` : path;
  for (const path of outputPathsOf({ steps: [...(from.steps ?? from.item.steps)] })) {
    const target = moved(path);
    if (target !== path) await linkOrCopy(absOf(outDir, path), absOf(outDir, target));
  }
  // The other file's generations, without the attempts it made before them (they were not this file's).
  const steps: StepRecord[] = (from.steps ?? from.item.steps).map(({ earlierAttempts: _earlier, ...s }) => ({
    ...s,
    outputs: s.outputs.map(moved),
    ...(s.layers ? { layers: s.layers.map((l) => ({ ...l, path: moved(l.path) })) } : {}),
    ...(s.composite ? { composite: moved(s.composite) } : {}),
  }));
  if (from.steps) return stepsTaken(item, steps, from.item.media);
  const { step: _step, ...rest } = item;
  return {
    ...rest,
    // The same bytes: what the other file's check learned of them (this one was not checked).
    media: item.media ?? from.item.media,
    ...(from.item.step !== undefined ? { step: from.item.step } : {}),
    steps,
    state: 'downloaded',
    reason: null,
    failedAt: null,
    failure: null,
  };
}

function absOf(outDir: string, rel: string): string {
  return join(outDir, ...rel.split('/'));
}

/** `dest` as a hard link to `src` (replacing what was there), else a copy of it. */
async function linkOrCopy(src: string, dest: string): Promise<void> {
  await mkdir(dirname(dest), { recursive: true });
  await rm(dest, { force: true });
  try {
    await link(src, dest);
  } catch (err) {
    if (!CANNOT_LINK.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
    await copyFile(src, dest, constants.COPYFILE_FICLONE);
  }
}
