/**
 * Places: the out folder of each distinct input, relative to the out dir. A distinct input is a journal
 * row — an input path with its content hash and recipe hash — so two versions of a file with the same
 * name (other bytes, another recipe, or redone with --force) are two inputs, and the outputs the service
 * made for one are never overwritten by the other.
 *
 * - A row keeps its place for life: resuming, re-downloading and result.json all use it.
 * - A new row takes the first free name among the input path itself, `<stem>-1<ext>`, `<stem>-2<ext>`, …
 *   (the naming of `watch --on-done move`): so a file seen for the first time keeps its input path.
 *   Each candidate is made a name a folder can have (report/item-paths.ts's folderPlace: `\` written
 *   `%5C`, a name longer than 255 bytes cut before its suffix and extension, a name the batch writes
 *   at the top of the out dir — report.json, report.html, .genpipe — suffixed: report/out-dir-names.ts),
 *   so every input has a place, the batch's own files are never one, and two inputs never share one,
 *   whatever their names. Both stores choose through choosePlace / choosePlaceAsync, so both follow it.
 * - A place given this session to an item the store keeps no row of (placeFor: skipped, or failed
 *   before it was planned) is taken for every other input for the rest of the session (GivenPlaces):
 *   its folder then holds only a result.json, which would otherwise let another input share it.
 * - A name is taken when a row holding its place has it (holdsPlace: its generation was created — it
 *   exists or may exist, completed or failed at the service: outputs are there or may still be
 *   collected, or its failure is recorded there, and the row may become active again when the same
 *   bytes come back), when another input's active row has it, or when the folder holds anything but a
 *   result.json (files the journal does not know of, e.g. from a journal kept elsewhere). A folder an
 *   earlier version of the file left with only its result.json, when the service made nothing for it
 *   (it failed or was skipped locally, its upload or create was refused, or it was only uploaded), is
 *   reused.
 */
import { readdirSync, statSync } from 'node:fs';
import { folderPlace, itemOutDir, RESULT_FILE } from '../report/item-paths.ts';
import type { JournalPhase } from './journal-row.ts';

/** Phases in which a row's generation exists or may exist: the row's place is its own for good. */
export const PLACE_HOLDING_PHASES: readonly JournalPhase[] = [
  'submitting',
  'submitted',
  'downloaded',
  'reported',
];

/**
 * True when a row holds its place for good: its phase is one of PLACE_HOLDING_PHASES, or it failed at
 * the service after its generation was created (the service did work for it, which was or may be paid).
 *
 * @example holdsPlace('failed', 'gen-1') // true: a moderated generation keeps its folder
 * @example holdsPlace('failed', null) // false: a refused upload or create made nothing
 */
export function holdsPlace(phase: JournalPhase, generationId: string | null): boolean {
  return PLACE_HOLDING_PHASES.includes(phase) || (phase === 'failed' && generationId !== null);
}

/**
 * The first free place for `input`: the input path itself, else `<stem>-1<ext>`, `<stem>-2<ext>`, …
 * (each as folderPlace makes it a folder's name).
 *
 * @param isTaken - whether a candidate is taken (see the module comment)
 * @example choosePlace('scan.png', (p) => p === 'scan.png') // 'scan-1.png'
 */
export function choosePlace(input: string, isTaken: (place: string) => boolean): string {
  for (let n = 0; ; n++) {
    const candidate = folderPlace(input, n);
    if (!isTaken(candidate)) return candidate;
  }
}

/**
 * True when `<out>/<place>` exists and is not a folder holding at most a result.json: something the
 * place may not be given over (outputs, a subfolder, a file of that name).
 *
 * @example folderInUse('/out', 'scan.png') // true once out/scan.png/output-0.png exists
 */
export function folderInUse(outDir: string, place: string): boolean {
  let dir: string;
  try {
    dir = itemOutDir(outDir, place);
  } catch {
    return false; // not a name a folder can have: the item fails when it writes there, as before
  }
  try {
    if (!statSync(dir).isDirectory()) return true;
    return readdirSync(dir).some((name) => name !== RESULT_FILE);
  } catch {
    // Not there (free), or not readable: then every name would be, and the item's own writes say why.
    return false;
  }
}

/**
 * choosePlace for a store that asks its database whether a place is taken.
 *
 * @example await choosePlaceAsync('scan.png', async (p) => p === 'scan.png') // 'scan-1.png'
 */
export async function choosePlaceAsync(
  input: string,
  isTaken: (place: string) => Promise<boolean>,
): Promise<string> {
  for (let n = 0; ; n++) {
    const candidate = folderPlace(input, n);
    if (!(await isTaken(candidate))) return candidate;
  }
}

/**
 * The places a store gave this session to items it keeps no row of (placeFor), each with the input key
 * it went to (raw-names.ts inputKey): taken for every other input, as an active row's place is.
 */
export class GivenPlaces {
  readonly #keyAt = new Map<string, string>();

  /** True when `place` went to an input other than `key`. */
  takenByOther(place: string, key: string): boolean {
    const holder = this.#keyAt.get(place);
    return holder !== undefined && holder !== key;
  }

  /** `place` went to `key`. */
  give(place: string, key: string): void {
    this.#keyAt.set(place, key);
  }
}
