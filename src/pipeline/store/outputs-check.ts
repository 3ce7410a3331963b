/**
 * Are an item's outputs still on disk and complete? When an item reaches `downloaded`, the journal
 * records the size of every local file it names (outputs, layers, composite); a later run compares
 * the files on disk with those sizes to tell a finished item (skip) from one whose outputs went
 * missing or were cut short (download again).
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import type { Item } from '../item.ts';
import { itemOutDir, RESULT_FILE } from '../report/item-paths.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/** One local output as recorded: its path relative to the out dir and its size (-1: missing when recorded). */
export interface RecordedOutput {
  path: string;
  bytes: number;
}

/** What a check of the recorded outputs found. */
export interface OutputCheck {
  /** Every recorded output is there with its recorded size. */
  complete: boolean;
  /** The item's result.json is there. */
  resultPresent: boolean;
  /** What is wrong, one line per file ('' when complete). */
  problems: string[];
}

/** The local files an item names, relative to the out dir, in a stable order without repeats. */
export function outputPathsOf(item: Pick<Item, 'steps'>): string[] {
  const paths = new Set<string>();
  for (const step of item.steps) {
    for (const output of step.outputs) paths.add(output);
    for (const layer of step.layers ?? []) paths.add(layer.path);
    if (step.composite) paths.add(step.composite);
  }
  return [...paths];
}

function sizeOf(abs: string): number {
  try {
    const st = statSync(abs);
    return st.isFile() ? st.size : -1;
  } catch {
    return -1;
  }
}

function absOf(outDir: string, rel: string): string {
  return join(outDir, ...rel.split('/'));
}

/**
 * The sizes of the item's local files now (see outputPathsOf); a missing file is recorded as -1.
 *
 * @example measureOutputs('/out', item) // [{ path: 'a.jpg/output-0.png', bytes: 51234 }]
 */
export function measureOutputs(outDir: string, item: Pick<Item, 'steps'>): RecordedOutput[] {
  return outputPathsOf(item).map((path) => ({ path, bytes: sizeOf(absOf(outDir, path)) }));
}

/** checkOutputs of a journal row: its place and recorded outputs (none recorded: incomplete). */
export function checkRowOutputs(
  outDir: string,
  row: { place: string; outputs: readonly RecordedOutput[] | null },
): OutputCheck {
  if (row.outputs === null)
    return { complete: false, resultPresent: false, problems: ['outputs were not recorded'] };
  return checkOutputs(outDir, row.place, row.outputs);
}

/**
 * Compares the recorded outputs with the disk, and looks for the item's result.json.
 *
 * @param place - the item's place (its out folder, relative to the out dir)
 */
export function checkOutputs(
  outDir: string,
  place: string,
  recorded: readonly RecordedOutput[],
): OutputCheck {
  const problems: string[] = [];
  for (const out of recorded) {
    const now = sizeOf(absOf(outDir, out.path));
    if (now < 0) problems.push(JOURNAL_TEXTS.outputMissing(out.path));
    else if (out.bytes < 0 || now !== out.bytes) {
      problems.push(JOURNAL_TEXTS.outputSize(out.path, out.bytes, now));
    }
  }
  let resultPresent = false;
  try {
    resultPresent = sizeOf(join(itemOutDir(outDir, place), RESULT_FILE)) > 0;
  } catch {
    resultPresent = false;
  }
  return { complete: problems.length === 0, resultPresent, problems };
}
