/**
 * The out dir's history as the reports tell it: at each place (out folder) of the out dir, the newest
 * row there, when its work is finished (reported, failed at the service, or failed or skipped before
 * anything was sent), as it was recorded — the active row of an
 * input, or an earlier version's whose folder holds the service's work for it. A watch starts its
 * reports from them, so an input moved away to processed/ or failed/ (or deleted) in an earlier
 * session is still reported, and so is an earlier version of a name with a folder of its own, as the
 * session that took both reported both; an input taken again at its place replaces its entry. Both
 * stores read their rows (ITEM_SQL.finishedAtPlaces) through this one rule.
 */
import { FINAL_ITEM_STATES, type Item, type ItemState } from '../item.ts';
import type { JournalPhase, JournalRow } from './journal-row.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/** The phases of a row whose work is finished at the service (as finishedFiles reads them too). */
export const FINISHED_PHASES = ['reported', 'failed'] as const satisfies readonly JournalPhase[];

/**
 * The item states of a `local` row that finished before anything was sent: refused by a local stage
 * (sniff, plan, check) or skipped (no rule). A watch moved such a failed input to failed/ as any other.
 */
export const FINISHED_LOCAL_STATES = ['failed', 'skipped'] as const satisfies readonly ItemState[];

const quoted = (words: readonly string[]): string => words.map((w) => `'${w}'`).join(', ');

/** A finished row as an SQL condition on the items table, for both stores (ITEM_SQL.finishedAtPlaces). */
export const FINISHED_ROW_SQL = `(phase IN (${quoted(FINISHED_PHASES)}) OR (phase = 'local' AND state IN (${quoted(FINISHED_LOCAL_STATES)})))`;

/**
 * The items of finished rows, each at its row's place and noted done in an earlier session; a row
 * whose item is not in a final state (an older journal's oddity) is left out.
 *
 * @example finishedItemsOf(rows) // [{ input: 'a.png', place: 'a.png', state: 'reported', … }]
 */
export function finishedItemsOf(rows: Iterable<JournalRow>): Item[] {
  const out: Item[] = [];
  for (const row of rows) {
    if (!FINAL_ITEM_STATES.includes(row.item.state)) continue;
    out.push({
      ...row.item,
      place: row.place,
      journal: { action: 'done', reason: JOURNAL_TEXTS.earlierSession },
    });
  }
  return out;
}
