/**
 * The journal's items table: one row per attempt at an input's work (see schema.ts), read as
 * JournalRow and written from an Item (its indexed columns derived here: the live state, the phase,
 * whether the create's outcome is unknown, the outputs recorded on reaching `downloaded`).
 */
import type Database from 'better-sqlite3';
import type { Item } from '../item.ts';
import { isFolderPlace, itemPlace } from '../report/item-paths.ts';
import { rowInputOf } from './admission.ts';
import {
  changedText,
  type ItemRowSql,
  itemColumns,
  type PrevRow,
  prevOf,
  rowOfSql,
  sameButNote,
  WRITTEN_ROWS_KEPT,
  WrittenRows,
} from './item-columns.ts';
import { itemFromJson } from './item-json.ts';
import { choosePlace, folderInUse, GivenPlaces } from './item-place.ts';
import type { JournalKey, JournalPhase, JournalRow } from './journal-row.ts';
import { ITEM_SQL } from './sqlite-plans.ts';

/** The item rows of one out dir. */
export class ItemRows {
  private readonly sql;
  /** Rows by id as last written here (see save); emptied when a transaction that wrote them rolls back. */
  private readonly written = new WrittenRows(WRITTEN_ROWS_KEPT);
  /** Places given this session to items kept in no row (placeFor). */
  private readonly given = new GivenPlaces();

  constructor(
    db: Database.Database,
    private readonly outDir: string,
    private readonly now: () => number,
  ) {
    this.sql = {
      active: db.prepare<[string, string], ItemRowSql>(ITEM_SQL.active),
      byId: db.prepare<[number], ItemRowSql>(ITEM_SQL.byId),
      allActive: db.prepare<[string], ItemRowSql>(ITEM_SQL.allActive),
      byPhase: db.prepare<[string, string], ItemRowSql>(ITEM_SQL.byPhase),
      finished: db.prepare<[string], { input: string; size: unknown; mtime_ms: unknown }>(ITEM_SQL.finished),
      history: db.prepare<[string, string], ItemRowSql>(ITEM_SQL.history),
      finishedAtPlaces: db.prepare<[string], ItemRowSql>(ITEM_SQL.finishedAtPlaces),
      earlier: db.prepare<[string, string, string, string], ItemRowSql>(ITEM_SQL.earlier),
      placeTaken: db.prepare<[string, string, string], { one: number }>(ITEM_SQL.placeTaken),
      placeHeldByOther: db.prepare<[string, string, number], { one: number }>(ITEM_SQL.placeHeldByOther),
      insert: db.prepare(ITEM_SQL.insert),
      update: db.prepare(ITEM_SQL.update),
      supersede: db.prepare(ITEM_SQL.supersede),
      setKey: db.prepare(ITEM_SQL.setKey),
      reactivate: db.prepare(ITEM_SQL.reactivate),
      setPlace: db.prepare<[string, number]>(ITEM_SQL.setPlace),
    };
  }

  // ---- reading

  /** The active row of `input`, or null. */
  active(input: string): JournalRow | null {
    const r = this.sql.active.get(this.outDir, input);
    return r ? rowOfSql(r) : null;
  }

  /** True when `input` has an active row. */
  hasActive(input: string): boolean {
    return this.sql.active.get(this.outDir, input) !== undefined;
  }

  /** Row `id`, and whether `item` is what it holds but for the item's `journal` note. */
  byId(id: number, item: Item): { row: JournalRow | null; sameButNote: boolean } {
    const r = this.sql.byId.get(id);
    if (!r) return { row: null, sameButNote: false };
    const stored = itemFromJson(r.item); // read once, for the row and the comparison
    return { row: rowOfSql(r, stored), sameButNote: sameButNote(r.item, stored, item) };
  }

  /**
   * Row `id` now holds `item`, unless it holds it already but for the item's `journal` note. The row as
   * this process last wrote it is remembered, so a save compares with that instead of reading the row
   * back and parsing it (an item is saved about seven times on its way); a row not remembered is read.
   *
   * @param batchId - the batch writing; null keeps the row's own
   */
  save(id: number, item: Item, batchId: number | null): void {
    const last = this.written.get(id);
    if (!last) {
      const { row: prev, sameButNote } = this.byId(id, item);
      if (!sameButNote) this.write(id, item, prev, batchId ?? prev?.batchId ?? null);
      return;
    }
    const text = changedText(last, item);
    if (text !== null) this.put(id, item, last.prev, batchId ?? last.prev.batchId, text);
  }

  /** Forgets the rows remembered as written: the transaction that wrote them was rolled back. */
  forgetWritten(): void {
    this.written.clear();
  }

  /** Every row `input` has had, oldest first. */
  history(input: string): JournalRow[] {
    return this.sql.history.all(this.outDir, input).map((r) => rowOfSql(r));
  }

  /** The active row of every input, by input path. */
  allActive(): JournalRow[] {
    return this.sql.allActive.all(this.outDir).map((r) => rowOfSql(r));
  }

  /** Active rows in `phase`, by input path. */
  inPhase(phase: JournalPhase): JournalRow[] {
    return this.sql.byPhase.all(this.outDir, phase).map((r) => rowOfSql(r));
  }

  /** The newest row at each place, when it finished (finished-items.ts). */
  finishedAtPlaces(): JournalRow[] {
    return this.sql.finishedAtPlaces.all(this.outDir).map((r) => rowOfSql(r));
  }

  /** Inputs whose active row is reported or failed, with the size and mtime their item recorded. */
  finished(): Map<string, { size: number; mtimeMs: number }> {
    const out = new Map<string, { size: number; mtimeMs: number }>();
    for (const r of this.sql.finished.iterate(this.outDir)) {
      if (typeof r.size === 'number' && typeof r.mtime_ms === 'number') {
        out.set(r.input, { size: r.size, mtimeMs: r.mtime_ms });
      }
    }
    return out;
  }

  /**
   * The latest replaced row of `input` with this key whose generation was created (item-place.ts's
   * holdsPlace), when its place is still its own alone (rows of a journal older than places all share
   * the input's folder).
   */
  earlier(input: string, key: JournalKey): JournalRow | null {
    const sqlRow = this.sql.earlier.get(this.outDir, input, key.contentHash, key.recipeHash);
    if (!sqlRow) return null;
    const row = rowOfSql(sqlRow);
    return this.sql.placeHeldByOther.get(this.outDir, row.place, row.id) === undefined ? row : null;
  }

  /** The first free place for a new row of `input` (see item-place.ts). */
  freePlace(input: string, key = input): string {
    return choosePlace(
      input,
      (place) =>
        this.sql.placeTaken.get(this.outDir, place, key) !== undefined ||
        this.given.takenByOther(place, key) ||
        folderInUse(this.outDir, place),
    );
  }

  /** The place for an item kept in no row (see GivenPlaces), `key` its inputKey; taken from now on. */
  givePlace(input: string, key: string): string {
    const place = this.freePlace(input, key);
    this.given.give(place, key);
    return place;
  }

  /**
   * The place of `row` as a folder can have it. A row an earlier version of genpipe gave a place no
   * folder can have (its input path, holding a `\` or too long a name) never wrote there — the run
   * that made it failed at its first write — so it is given the first free place now, kept for good;
   * with `write` false (a dry run) that place is only told.
   */
  placeOf(row: JournalRow, write: boolean): string {
    if (isFolderPlace(row.place)) return row.place;
    const place = this.freePlace(row.input);
    if (write) this.sql.setPlace.run(place, row.id);
    return place;
  }

  // ---- writing (inside the journal's transactions)

  /** A new row of `item` (its place set) with `key`, its input rowInputOf(item); its id. */
  insert(item: Item, key: JournalKey, batchId: number): number {
    const { columns, written } = this.columns(item, null, batchId);
    const result = this.sql.insert.run({
      out_dir: this.outDir,
      input: rowInputOf(item),
      place: itemPlace(item),
      content_hash: key.contentHash,
      recipe_hash: key.recipeHash,
      batch_id: batchId,
      ...columns,
    });
    const id = Number(result.lastInsertRowid);
    this.written.remember(id, written);
    return id;
  }

  /** Row `id` now holds `item` (`prev`: the row as it was, null when it is started over). */
  write(id: number, item: Item, prev: JournalRow | null, batchId: number | null): void {
    this.put(id, item, prevOf(prev), batchId);
  }

  supersede(id: number): void {
    this.written.forget(id);
    this.sql.supersede.run(this.now(), id);
  }

  reactivate(id: number): void {
    this.written.forget(id);
    this.sql.reactivate.run(id);
  }

  /** Updates row `id` and remembers what it now holds (`text`: JSON.stringify(item), when known). */
  private put(id: number, item: Item, prev: PrevRow | null, batchId: number | null, text?: string): void {
    const { columns, written } = this.columns(item, prev, batchId, text);
    this.sql.update.run({ id, batch_id: batchId, ...columns });
    this.written.remember(id, written);
  }

  setKey(id: number, key: JournalKey): void {
    this.sql.setKey.run(key.contentHash, key.recipeHash, id);
  }

  /** The columns a row holding `item` has (item-columns.ts), and what is remembered of it (see save). */
  private columns(item: Item, prev: PrevRow | null, batchId: number | null, text?: string) {
    const now = this.now();
    const { columns, written } = itemColumns(this.outDir, item, prev, batchId, now, text);
    return { columns: { ...columns, now }, written };
  }
}
