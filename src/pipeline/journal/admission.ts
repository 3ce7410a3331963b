/**
 * How a store admits a planned file, apart from its tables: which rows it reads, what it hands decide
 * (resume-decision.ts), and what it then does to its rows. Every store runs the same steps in one
 * transaction of its own (the SQLite journal's plan, the PostgreSQL store's admit):
 *
 * 1. read the input's active row; a row noted unhashed by a stopped run gets the key (UNHASHED);
 * 2. when the active row has another key, look for an earlier row with this key that holds its place
 *    (wantsEarlier): the version of the file that comes back is that row again;
 * 3. decide on that row (or the active one), checking its outputs on disk when needsOutputs;
 * 4. apply rowWrites: a new row (its place chosen after the active one is superseded) or the chosen
 *    row kept, reactivated when it is an earlier one, and written when its item changed.
 */
import type { Item } from '../item.ts';
import type { PlanOptions } from '../store/store.ts';
import type { JournalKey, JournalPhase, JournalRow } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import type { DecideInput, RowDecision } from './resume-decision.ts';
import { JOURNAL_CHOICES } from './texts.ts';

/** True when the row is the work of this key. */
export function hasKey(row: JournalRow, key: JournalKey): boolean {
  return row.contentHash === key.contentHash && row.recipeHash === key.recipeHash;
}

/**
 * True when the row is the work of this key under a former identity of the service (its recipe hash
 * one of the key's former ones): admit gives it the current key (step 1) instead of redoing it.
 */
export function keyedBefore(row: JournalRow, key: JournalKey): boolean {
  return row.contentHash === key.contentHash && (key.formerRecipeHashes ?? []).includes(row.recipeHash);
}

/**
 * The phases of an active row a run still takes up when its input is gone from the input folder (moved
 * away or deleted): the service's work for it, which vanishedInFlight collects. A row in any other
 * phase is left as it is: nothing takes it up (status says so).
 */
export const VANISHED_TAKEN_PHASES = ['submitted', 'downloaded'] as const satisfies readonly JournalPhase[];

export { holdsServiceWork } from './resume-decision.ts';

/** Whether admit looks for an earlier row of the input with this key (step 2). */
export function wantsEarlier(active: JournalRow | null, key: JournalKey, force: boolean): boolean {
  return active !== null && !force && !hasKey(active, key);
}

/** Whether decide needs the row's outputs checked on disk (step 3). */
export function needsOutputs(row: JournalRow | null, key: JournalKey): row is JournalRow {
  return row !== null && hasKey(row, key) && (row.phase === 'downloaded' || row.phase === 'reported');
}

/** What decide reads (step 3), from the row chosen, the file, its key, the flags and the check. */
export function decideInputOf(
  row: JournalRow | null,
  item: Item,
  key: JournalKey,
  opts: PlanOptions,
  now: number,
  outputs: OutputCheck | null,
  batchId: number | null = null,
): DecideInput {
  return {
    batchId,
    row,
    fresh: item,
    key,
    force: opts.force ?? false,
    resubmitUnknown: opts.resubmitUnknown ?? false,
    retryFailed: opts.retryFailed ?? false,
    now,
    uploadReuseMaxAgeMs: JOURNAL_CHOICES.uploadReuseMaxAgeMs,
    outputs,
  };
}

/** What a store does to its rows for a decision (step 4). */
export type RowWrites =
  | {
      kind: 'insert';
      /** The active row to supersede first, or null. */
      supersede: number | null;
      /** The new row's item; its place is the first free one once `supersede` is done. */
      item: Item;
    }
  | {
      kind: 'keep';
      id: number;
      /** The active row to supersede (the kept row is an earlier one), or null. */
      supersede: number | null;
      /** Reactivate the kept row (an earlier one). */
      reactivate: boolean;
      /** The kept row's item, in its place. */
      item: Item;
      /** Write the item: over nothing (a fresh start), over the row, or not at all (unchanged). */
      write: 'fresh' | 'update' | null;
    };

/**
 * The writes of a decision on `row` (the earlier row or the active one; null: none), `active` being
 * the input's active row.
 */
export function rowWrites(
  active: JournalRow | null,
  row: JournalRow | null,
  decision: RowDecision,
): RowWrites {
  if (!row || decision.supersede) {
    return { kind: 'insert', supersede: active?.id ?? null, item: decision.item };
  }
  const item = { ...decision.item, place: row.place };
  const earlier = row !== active;
  let write: 'fresh' | 'update' | null = null;
  if (decision.action === 'fresh') write = 'fresh';
  else if (JSON.stringify(item) !== JSON.stringify(row.item)) write = 'update';
  return {
    kind: 'keep',
    id: row.id,
    supersede: earlier && active ? active.id : null,
    reactivate: earlier,
    item,
    write,
  };
}
