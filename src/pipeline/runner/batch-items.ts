/**
 * The batch state: every item of the batch in its latest state, for the reports, by entry — one entry
 * per item started, in the order they started (watch may start several items of one input, one after
 * another). An entry is dropped once a later item takes its place (see keep). An item in flight is held
 * in memory; a finished one only as its report view (report/report-view.ts), written to the batch's
 * view file (view-file.ts) and read back when the reports are written: what stays in memory per
 * finished item is its report entry (input, place, status, where its view is), so a batch or a watch of
 * any length keeps its memory flat. Without a view file (or when it cannot be written) views are held.
 */

import { itemStatus } from '../events.ts';
import { FINAL_ITEM_STATES, type Item } from '../item.ts';
import {
  compareEntries,
  HeldEntry,
  itemPlace,
  type JournalCount,
  journalCountOf,
  type ReportEntry,
  reportView,
} from '../report/index.ts';
import type { ViewFile, ViewSpot } from './view-file.ts';

/** A finished item whose view is in the view file (the entry is also where its line is). */
class StoredEntry implements ReportEntry, ViewSpot {
  readonly input: string;
  readonly place: string;
  readonly status: ReportEntry['status'];
  readonly journalCount: JournalCount | null;
  offset: number;
  readonly length: number;

  constructor(
    view: Item,
    private readonly views: ViewFile,
  ) {
    const { offset, length } = views.append(view);
    this.input = view.input;
    this.place = itemPlace(view);
    this.status = itemStatus(view);
    this.journalCount = journalCountOf(view);
    this.offset = offset;
    this.length = length;
  }

  item(): Item {
    return this.views.read(this);
  }
}

/** A report snapshot of the batch: its entries, valid until `release` (see BatchItems.reportEntries). */
export interface ReportSnapshot {
  entries: ReportEntry[];
  release(): void;
}

export class BatchItems {
  private readonly items = new Map<number, ReportEntry>();
  private lastEntry = 0;
  /** The entry reported at each place. */
  private readonly entryAt = new Map<string, number>();
  /** Items changed since the reports were last written. */
  private stale = true;

  /** @param views where finished items' views go (null: held in memory) */
  constructor(private readonly views: ViewFile | null = null) {}

  /** A new entry, for an item about to start. */
  nextEntry(): number {
    return ++this.lastEntry;
  }

  /** Items kept so far. */
  get size(): number {
    return this.items.size;
  }

  /** True while `entry` is kept (no later item took its place). */
  holds(entry: number): boolean {
    return this.items.has(entry);
  }

  /**
   * Keeps the item of `entry` (a finished one as its report view); once it has a place (or ends), it
   * replaces an earlier item there.
   */
  keep(entry: number, item: Item): void {
    const final = FINAL_ITEM_STATES.includes(item.state);
    const was = this.items.get(entry);
    if (was instanceof StoredEntry) this.views?.drop(was);
    // Set in place: the entries keep the order their items started in.
    this.items.set(entry, final ? this.stored(reportView(item)) : new HeldEntry(item));
    this.stale = true;
    if (item.place === undefined && !final) return;
    const place = itemPlace(item);
    const before = this.entryAt.get(place);
    if (before !== undefined && before !== entry) this.drop(before);
    this.entryAt.set(place, entry);
    this.views?.compactIfWorth(() => this.spots());
  }

  /**
   * Keeps a finished item of an earlier batch (RunOptions.earlier), at its place: a later item there
   * replaces it, as any does.
   */
  seed(item: Item): void {
    this.keep(this.nextEntry(), item);
  }

  /** True once when items changed since the last call (the reports are then rewritten). */
  takeStale(): boolean {
    const was = this.stale;
    this.stale = false;
    return was;
  }

  /**
   * The entries to report, one per place (a later item in the same folder replaces an earlier one), in
   * report order. An item not yet admitted has no place of its own: until it has one or ends, it does
   * not hide an earlier item of its input. The entries read their items until `release` is called.
   */
  reportEntries(): ReportSnapshot {
    const byPlace = new Map<string, ReportEntry>();
    for (const e of this.items.values()) {
      if (e instanceof HeldEntry && unplaced(e.item()) && byPlace.has(e.place)) continue;
      byPlace.set(e.place, e);
    }
    const release = this.views?.hold() ?? (() => {});
    return { entries: [...byPlace.values()].sort(compareEntries), release };
  }

  /** The items to report (see reportEntries), read back: for a small batch or a test. */
  reportItems(): Item[] {
    const snapshot = this.reportEntries();
    try {
      return snapshot.entries.map((e) => e.item());
    } finally {
      snapshot.release();
    }
  }

  /** The view of a finished item, in the view file when it can be written there. */
  private stored(view: Item): ReportEntry {
    if (!this.views) return new HeldEntry(view);
    try {
      return new StoredEntry(view, this.views);
    } catch {
      return new HeldEntry(view); // the out dir cannot take it: held, as without a view file
    }
  }

  private drop(entry: number): void {
    const e = this.items.get(entry);
    if (!e) return;
    this.items.delete(entry);
    if (e instanceof StoredEntry) this.views?.drop(e);
  }

  private *spots(): Generator<ViewSpot> {
    for (const e of this.items.values()) if (e instanceof StoredEntry) yield e;
  }
}

/** In flight and not yet admitted: no place of its own. */
function unplaced(item: Item): boolean {
  return item.place === undefined && !FINAL_ITEM_STATES.includes(item.state);
}
