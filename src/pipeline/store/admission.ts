/**
 * How a store admits a planned file, apart from its tables: which rows it reads, what it hands decide
 * (resume-decision.ts), and what it then does to its rows. Every store runs the same steps in one
 * transaction of its own (the SQLite journal's plan, the PostgreSQL store's admit):
 *
 * 1. read the input's active row; a row noted unhashed (UNHASHED: by a stopped run, or for a file
 *    refused before it was planned) gets the key;
 * 2. when the active row has another key, or had none, look for an earlier row with this key that
 *    holds its place (wantsEarlier): the version of the file that comes back is that row again;
 * 3. decide on that row (or the active one), checking its outputs on disk when needsOutputs;
 * 4. apply rowWrites: a new row (its place chosen after the active one is superseded) or the chosen
 *    row kept, reactivated when it is an earlier one, and written when its item changed.
 *
 * A file never admitted is kept too when a save says it ended (unadmittedWrites): stopped before it
 * was planned, so the next run continues it, or refused before it was planned (sniff, plan, or its
 * name at discovery) or skipped, so the out dir's history (finished-items.ts) still tells it.
 */
import type { Item } from '../item.ts';
import { inputKey } from '../raw-names.ts';
import { itemPlace } from '../report/item-paths.ts';
import { FINISHED_LOCAL_STATES, FINISHED_PHASES } from './finished-items.ts';
import { type JournalKey, type JournalPhase, type JournalRow, phaseOf, UNHASHED } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import { type DecideInput, holdsServiceWork, type RowDecision } from './resume-decision.ts';
import type { PlanOptions } from './store.ts';

/**
 * An item's own upload and the batch's shared reference uploads are reused by a later run only when
 * younger than this; older ones are uploaded again (the service may delete files; its retention is
 * not shown).
 */
export const UPLOAD_REUSE_MAX_AGE_MS = 24 * 60 * 60 * 1000;

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

/**
 * Whether admit looks for an earlier row of the input with this key (step 2): the active row has
 * another key, or was `unhashed` (noted with none, step 1) — a file refused before it was planned
 * whose earlier version, finished at the service, comes back is that version again, never paid twice.
 */
export function wantsEarlier(
  active: JournalRow | null,
  key: JournalKey,
  force: boolean,
  unhashed = false,
): boolean {
  return active !== null && !force && (unhashed || !hasKey(active, key));
}

/** The key of a row noted for a file never planned (it was not hashed): admit gives it one (step 1). */
export const NOTED_KEY: JournalKey = { contentHash: UNHASHED, recipeHash: UNHASHED };

/**
 * The text a row of `item` keeps as its input: raw-names.ts's inputKey, so that a file refused for a
 * name that is not valid UTF-8 has a row of its own, never the row of a valid name that prints alike.
 * An item's path otherwise.
 */
export const rowInputOf = inputKey;

/**
 * True when a save of `item`, never admitted, says it was refused before it was planned (sniff, plan,
 * or its name at discovery) or skipped: nothing was sent for it, and it ended all the same.
 */
export function refusedBeforeAdmission(item: Item): boolean {
  return (
    (FINISHED_LOCAL_STATES as readonly string[]).includes(item.state) &&
    !holdsServiceWork(item) &&
    phaseOf(item, item.state) === 'local'
  );
}

/** What a store does to its rows for the save of an item it never admitted (see unadmittedWrites). */
export type UnadmittedWrites =
  | {
      kind: 'insert';
      /** The input's active row to supersede first, or null. */
      supersede: number | null;
    }
  | {
      kind: 'update';
      /** The input's active row, written over (its key forgotten: NOTED_KEY). */
      id: number;
    }
  | null;

/**
 * The writes for the save of `item`, never admitted, its input's active row (rowInputOf) being
 * `active`:
 * - stopped: a row when the input has none, so the next run continues it ("continued: …");
 * - refused before it was planned, or skipped (refusedBeforeAdmission): the input's row at the place
 *   the item was given (placeFor), so the out dir's history tells it. The active row is written over
 *   when nothing was sent for it (phase local) and it is at that place; a new row replaces it when it
 *   is elsewhere, or finished (reported, failed: it keeps its place, and the same bytes coming back
 *   take it again, wantsEarlier); nothing is written while the service's work on the input is still
 *   to be collected (uploaded … downloaded): that row stays the input's, for the next run or
 *   vanishedInFlight;
 * - anything else: nothing (discovered, sniffed: the file is looked at again anyway).
 *
 * @example unadmittedWrites({ ...item, state: 'failed', failedAt: 'sniff' }, null) // { kind: 'insert', supersede: null }
 */
export function unadmittedWrites(item: Item, active: JournalRow | null): UnadmittedWrites {
  if (item.state === 'stopped') return active ? null : { kind: 'insert', supersede: null };
  if (!refusedBeforeAdmission(item)) return null;
  if (!active) return { kind: 'insert', supersede: null };
  if (active.phase === 'local' && active.place === itemPlace(item)) return { kind: 'update', id: active.id };
  const ended =
    active.phase === 'local' || (FINISHED_PHASES as readonly JournalPhase[]).includes(active.phase);
  return ended ? { kind: 'insert', supersede: active.id } : null;
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
    uploadReuseMaxAgeMs: UPLOAD_REUSE_MAX_AGE_MS,
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
  if (decision.action === 'fresh' || decision.action === 'reuse') write = 'fresh';
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

/**
 * True when a save of `item` is its last in this session: it is finished (reported, skipped, failed)
 * and its row is not in a phase whose work is still collected (a failed download or result write is
 * resumed: see phaseOf). A stopped item keeps its binding.
 */
export function unbindsOnSave(item: Item): boolean {
  if (item.state !== 'reported' && item.state !== 'skipped' && item.state !== 'failed') return false;
  const phase = phaseOf(item, item.state);
  return phase !== 'submitted' && phase !== 'downloaded';
}
