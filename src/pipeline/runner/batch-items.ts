/**
 * The batch state: every item of the batch in its latest state, for the reports, by entry — one entry
 * per item started, in the order they started (watch may start several items of one input, one after
 * another). An entry is dropped once a later item takes its place (see keep). A finished item is kept
 * only as its report view (report/report-view.ts): what the reports read of it.
 */
import { FINAL_ITEM_STATES, type Item } from '../item.ts';
import { itemPlace, reportView, uniqueItems } from '../report/index.ts';

export class BatchItems {
  private readonly items = new Map<number, Item>();
  private lastEntry = 0;
  /** The entry reported at each place. */
  private readonly entryAt = new Map<string, number>();
  /** Items changed since the reports were last written. */
  private stale = true;

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
    this.items.set(entry, final ? reportView(item) : item);
    this.stale = true;
    if (item.place === undefined && !final) return;
    const place = itemPlace(item);
    const before = this.entryAt.get(place);
    if (before !== undefined && before !== entry) this.items.delete(before);
    this.entryAt.set(place, entry);
  }

  /** True once when items changed since the last call (the reports are then rewritten). */
  takeStale(): boolean {
    const was = this.stale;
    this.stale = false;
    return was;
  }

  /**
   * The items to report, one per place (a later item in the same folder replaces an earlier one). An
   * item not yet admitted has no place of its own: until it has one or ends, it does not hide an
   * earlier item of its input.
   */
  reportItems(): Item[] {
    const byPlace = new Map<string, Item>();
    for (const item of this.items.values()) {
      const place = itemPlace(item);
      if (item.place === undefined && !FINAL_ITEM_STATES.includes(item.state) && byPlace.has(place)) continue;
      byPlace.set(place, item);
    }
    return uniqueItems(byPlace.values());
  }
}
