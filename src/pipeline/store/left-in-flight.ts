/**
 * Work the service did (or is doing) that no file of this session stands for, taken up after
 * discovery so a paid generation is still collected (StoreEngine.vanishedInFlight):
 *
 * - **vanished**: the active row of an input this session did not admit (moved away or deleted);
 * - **earlier version**: a row that a newer version of its input replaced — its bytes or its recipe
 *   changed, or `--force` — while its generation was in flight (a run died or stopped first). It keeps
 *   its own place (item-place.ts), so its outputs go to its own folder, beside the newer version's.
 *   Only what was sent is collected: a chain's steps not sent yet are dropped, never paid for a version
 *   nobody wants any more.
 *
 * Both are rows in a VANISHED_TAKEN_PHASES phase, resumed from there by the same table as any row.
 */
import { isChain } from '../chain.ts';
import { decideInputOf } from './admission.ts';
import type { JournalRow } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import { decide } from './resume-decision.ts';
import type { StoreDecision } from './store.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/** A row to take up, and whether it is an earlier version of an input (not its active row). */
export interface LeftRow {
  row: JournalRow;
  earlier: boolean;
}

/**
 * The key an earlier version is bound by for save (StoreEngine): its input and its place, which no other
 * row holding a place has — the input alone is its newer version's.
 */
export function earlierBinding(input: string, place: string): string {
  return `${input}\u0000${place}`;
}

/**
 * The rows of a phase to take up: active ones whose input no item of this session is bound to (nor
 * `skip`s), and replaced ones not in flight here (a watch's earlier version still driven).
 */
export function leftRows(
  rows: { active: readonly JournalRow[]; replaced: readonly JournalRow[] },
  bound: { inputs: ReadonlySet<string>; rows: ReadonlySet<number> },
  skip?: (input: string) => boolean,
): LeftRow[] {
  return [
    ...rows.active
      .filter((r) => !bound.inputs.has(r.input) && !skip?.(r.input))
      .map((row) => ({ row, earlier: false })),
    ...rows.replaced.filter((r) => !bound.rows.has(r.id)).map((row) => ({ row, earlier: true })),
  ];
}

/** An earlier version's chain cut to the steps that were sent (the others are never sent for it). */
function sentStepsOnly(decision: StoreDecision): StoreDecision {
  const item = decision.item;
  if (!isChain(item)) return decision;
  const steps = item.steps.filter((s) => s.requestId || s.generationId);
  return { ...decision, item: { ...item, steps } };
}

/**
 * What a run does with a row left in flight: resume it (the decision, reason told), or null when there
 * is nothing to collect. An earlier version's chain is taken up only while one of its steps has a
 * generation not yet downloaded.
 */
export function takeUp(left: LeftRow, now: number, outputs: OutputCheck | null): StoreDecision | null {
  const { row, earlier } = left;
  if (earlier && isChain(row.item)) {
    const open = row.item.steps.some((s) => s.generationId && s.state !== 'downloaded');
    if (!open && row.phase !== 'downloaded') return null;
  }
  const key = { contentHash: row.contentHash, recipeHash: row.recipeHash };
  const decision = decide(decideInputOf(row, row.item, key, {}, now, outputs));
  if (decision.action !== 'resume') return null;
  const told: StoreDecision = { action: decision.action, item: decision.item, reason: decision.reason };
  if (!earlier) return told;
  return sentStepsOnly({ ...told, reason: `${told.reason}; ${JOURNAL_TEXTS.earlierVersionCollected}` });
}
