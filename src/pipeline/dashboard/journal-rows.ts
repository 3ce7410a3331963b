/**
 * The dashboard of an out dir nothing runs in (`genpipe dashboard <out-dir>`): its rows read from the
 * journal's active rows, each file as the journal last saved it. Re-read when the journal changes;
 * only rows saved since the last read are taken in again (what the page is then sent).
 */
import { isChain } from '../chain.ts';
import { attemptStartedAt, currentStep, generationsOf, reusedNote, workReused } from '../item.ts';
import type { JournalRow } from '../store/journal-row.ts';
import type { DashboardModel } from './dashboard-model.ts';

/** How a row of a page of many out dirs is named (`<out dir>/<input>`), and who last worked on it. */
export type RowNaming = (row: JournalRow) => { input: string; outDir: string; by: string | null };

/**
 * Takes the journal's rows in (see the module comment); `seen` keeps each row's last save between
 * reads; `naming` for a page of many out dirs (a store's).
 */
export function applyJournalRows(
  model: DashboardModel,
  rows: readonly JournalRow[],
  seen: Map<string, number>,
  naming?: RowNaming,
): void {
  for (const row of rows) {
    const named = naming?.(row);
    const input = named?.input ?? row.input;
    if (seen.get(input) === row.updatedAt) continue;
    seen.set(input, row.updatedAt);
    const { item } = row;
    const step = currentStep(item);
    model.upsert(input, row.updatedAt, item.state, {
      ...(named ? { outDir: named.outDir, by: named.by } : {}),
      place: row.place,
      stage: item.failedAt ?? null,
      step: isChain(item) ? (step?.name ?? null) : null,
      reason: item.reason ?? reusedNote(item),
      reused: workReused(item),
      generationId: step?.generationId ?? null,
      requestId: step?.requestId ?? null,
      // The last attempt's time, as the live page's (a row is retimed when a file is taken again).
      firstAt: attemptStartedAt(item) ?? row.updatedAt,
      generations: generationsOf(item),
    });
  }
}
