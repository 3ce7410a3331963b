/**
 * The items of a report as the writers go through them: one entry per place, in report order, each
 * telling what the totals and the page's sections need (input, place, status, the journal's count) and
 * giving the item itself only when asked. The batch keeps its finished items on disk (runner/
 * view-file.ts), so a report of 100,000 items reads them back one at a time instead of holding them.
 */
import { itemStatus } from '../events.ts';
import type { Item } from '../item.ts';
import { itemPlace } from './item-paths.ts';

/** Which count of the report's journal section an item adds to (null: none). */
export type JournalCount =
  | 'retried'
  | 'resumed'
  | 'not_retried'
  | 'reused'
  | 'same_content'
  | 'unknown_outcome'
  | 'redone';

/** One item of a report (see the module comment). */
export interface ReportEntry {
  readonly input: string;
  /** The item's place (see itemPlace). */
  readonly place: string;
  /** itemStatus of the item (`pending` is reported `unprocessed` once the batch has finished). */
  readonly status: ReturnType<typeof itemStatus>;
  readonly journalCount: JournalCount | null;
  /** The item (read back when the batch keeps it on disk). */
  item(): Item;
}

/** The journal section's count an item adds to. */
export function journalCountOf(item: Pick<Item, 'journal' | 'state'>): JournalCount | null {
  const note = item.journal;
  // Another input's work with the same content stood for it (its failure, shared, is only a failure;
  // a chain that took some of its steps and sent the others is new work, counted nowhere).
  if (note?.sameAs !== undefined) {
    // Nor is one the batch stopped before its outputs were linked: not processed, not reused.
    const ended = item.state === 'failed' || item.state === 'stopped';
    return ended || note.action === 'fresh' ? null : 'same_content';
  }
  if (note?.retried) return 'retried';
  // A file the earlier run sent nothing for is continued, not resumed (resume-decision.ts's nothingSent).
  if (note?.action === 'resume') return note.nothingSent ? null : 'resumed';
  if (note?.action === 'done') return item.state === 'failed' ? 'not_retried' : 'reused';
  if (note?.action === 'fail') return 'unknown_outcome';
  if (note?.action === 'fresh' && note.reason !== null) return 'redone';
  return null;
}

/** An item held in memory, as a report entry. */
export class HeldEntry implements ReportEntry {
  readonly input: string;
  readonly place: string;
  readonly status: ReturnType<typeof itemStatus>;
  readonly journalCount: JournalCount | null;

  constructor(private readonly held: Item) {
    this.input = held.input;
    this.place = itemPlace(held);
    this.status = itemStatus(held);
    this.journalCount = journalCountOf(held);
  }

  item(): Item {
    return this.held;
  }
}

function compareInputs(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Report order: by input path, then the places of one input in their numbering (`scan.png`,
 * `scan-1.png`, …, `scan-10.png`: all `<stem>-<n><ext>`, so a shorter one has fewer digits).
 */
export function compareEntries(
  a: { input: string; place: string },
  b: { input: string; place: string },
): number {
  return (
    compareInputs(a.input, b.input) || a.place.length - b.place.length || compareInputs(a.place, b.place)
  );
}

/**
 * The entries to report: one per place (a later one replaces an earlier one at its place), in report
 * order (compareEntries).
 *
 * @example const entries = reportEntries(items.map((i) => new HeldEntry(i)));
 */
export function reportEntries<E extends ReportEntry>(entries: Iterable<E>): E[] {
  const byPlace = new Map<string, E>();
  for (const e of entries) byPlace.set(e.place, e);
  return [...byPlace.values()].sort(compareEntries);
}

/** The report entries of items held in memory (any order; one per place, the last at each wins). */
export function heldEntries(items: Iterable<Item>): HeldEntry[] {
  const all: HeldEntry[] = [];
  for (const item of items) all.push(new HeldEntry(item));
  return reportEntries(all);
}
