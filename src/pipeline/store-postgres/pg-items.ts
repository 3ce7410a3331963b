/**
 * The PostgreSQL store's items table: one row per attempt at an input's work, read as JournalRow and
 * written from an Item with the columns every store derives the same way (../journal/item-columns.ts).
 * Each method runs on the connection it is given (the store's pool, or one transaction's client).
 */

import type pg from 'pg';
import type { Item, ItemState } from '../item.ts';
import { rowInputOf } from '../journal/admission.ts';
import {
  changedText,
  type ItemColumns,
  type ItemRowSql,
  itemColumns,
  type PrevRow,
  prevOf,
  rowOfSql,
  sameButNote,
  WRITTEN_ROWS_KEPT,
  WrittenRows,
} from '../journal/item-columns.ts';
import { itemFromJson } from '../journal/item-json.ts';
import { choosePlaceAsync, folderInUse, GivenPlaces } from '../journal/item-place.ts';
import type { JournalKey, JournalPhase, JournalRow } from '../journal/journal-row.ts';
import { itemPlace } from '../report/item-paths.ts';
import { ItemTakenOverError } from '../store/item-taken-over.ts';
import { ITEM_SQL } from './pg-plans.ts';

/** Where an input's active row stands (a waiting run's view of the work of others). */
export interface ItemProgress {
  input: string;
  place: string;
  state: ItemState;
  reason: string | null;
  /** The step a chain item is at; null for a single-request rule's item. */
  step: string | null;
  /** When it was last written, ms since the epoch by its writer's clock. */
  updatedAt: number;
  /** The item as last saved. */
  item: Item;
}

/** A connection or a transaction's client. */
export type Queryable = Pick<pg.ClientBase, 'query'>;

function columnValues(c: ItemColumns): unknown[] {
  return [
    c.state,
    c.live_state,
    c.phase,
    c.reason,
    c.failed_at,
    c.upload_file_id,
    c.generation_id,
    c.request_id,
    c.attempts,
    c.outcome_unknown,
    c.item,
    c.outputs,
    c.uploaded_at,
  ];
}

/** The item rows of one out dir. */
export class PgItems {
  /** Rows by id as last written here; cleared when a transaction that wrote them rolls back. */
  readonly written = new WrittenRows(WRITTEN_ROWS_KEPT);
  /** The claim this process holds on each row it admitted (see claim). */
  private readonly claims = new Map<number, number>();
  /** Places given this session to items kept in no row (placeFor). */
  private readonly given = new GivenPlaces();

  constructor(
    private readonly outDir: string,
    private readonly now: () => number,
  ) {}

  private async one(q: Queryable, sql: string, params: unknown[]): Promise<JournalRow | null> {
    const { rows } = await q.query<ItemRowSql>(sql, [this.outDir, ...params]);
    return rows[0] ? rowOfSql(rows[0]) : null;
  }

  private async all(q: Queryable, sql: string, params: unknown[]): Promise<JournalRow[]> {
    const { rows } = await q.query<ItemRowSql>(sql, [this.outDir, ...params]);
    return rows.map((r) => rowOfSql(r));
  }

  // ---- reading

  active(q: Queryable, input: string): Promise<JournalRow | null> {
    return this.one(q, ITEM_SQL.active, [input]);
  }

  history(q: Queryable, input: string): Promise<JournalRow[]> {
    return this.all(q, ITEM_SQL.history, [input]);
  }

  allActive(q: Queryable): Promise<JournalRow[]> {
    return this.all(q, ITEM_SQL.allActive, []);
  }

  /** Where each active row changed at or after `sinceMs` (by its writer's clock) stands. */
  async changedSince(q: Queryable, sinceMs: number): Promise<ItemProgress[]> {
    const { rows } = await q.query<{
      input: string;
      place: string;
      state: string;
      reason: string | null;
      step: string | null;
      item: string;
      updated_at: string;
    }>(ITEM_SQL.changedSince, [this.outDir, sinceMs]);
    return rows.map((r) => ({
      item: itemFromJson(r.item),
      input: r.input,
      place: r.place,
      state: r.state as ItemState,
      reason: r.reason,
      step: r.step,
      updatedAt: Number(r.updated_at),
    }));
  }

  inPhase(q: Queryable, phase: JournalPhase): Promise<JournalRow[]> {
    return this.all(q, ITEM_SQL.byPhase, [phase]);
  }

  /** The newest row at each place, when it finished (journal/finished-items.ts). */
  finishedAtPlaces(q: Queryable): Promise<JournalRow[]> {
    return this.all(q, ITEM_SQL.finishedAtPlaces, []);
  }

  /** Inputs whose active row is reported or failed, with the size and mtime their item recorded. */
  async finished(q: Queryable): Promise<Map<string, { size: number; mtimeMs: number }>> {
    const { rows } = await q.query<{ input: string; size: string | null; mtime_ms: string | null }>(
      ITEM_SQL.finished,
      [this.outDir],
    );
    const out = new Map<string, { size: number; mtimeMs: number }>();
    for (const r of rows) {
      const [size, mtimeMs] = [Number(r.size), Number(r.mtime_ms)];
      if (r.size !== null && r.mtime_ms !== null && Number.isFinite(size) && Number.isFinite(mtimeMs))
        out.set(r.input, { size, mtimeMs });
    }
    return out;
  }

  /** The latest replaced row of `input` with this key that holds its place, when still its own alone. */
  async earlier(q: Queryable, input: string, key: JournalKey): Promise<JournalRow | null> {
    const row = await this.one(q, ITEM_SQL.earlier, [input, key.contentHash, key.recipeHash]);
    if (!row) return null;
    const other = await q.query(ITEM_SQL.placeHeldByOther, [this.outDir, row.place, row.id]);
    return other.rowCount === 0 ? row : null;
  }

  /** The first free place for a new row of `input` (see item-place.ts). */
  freePlace(q: Queryable, input: string, key = input): Promise<string> {
    return choosePlaceAsync(input, async (place) => {
      if (this.given.takenByOther(place, key)) return true;
      const { rowCount } = await q.query(ITEM_SQL.placeTaken, [this.outDir, place, key]);
      return (rowCount ?? 0) > 0 || folderInUse(this.outDir, place);
    });
  }

  /** The place for an item kept in no row (see GivenPlaces), `key` its inputKey; taken from now on. */
  async givePlace(q: Queryable, input: string, key: string): Promise<string> {
    const place = await this.freePlace(q, input, key);
    this.given.give(place, key);
    return place;
  }

  // ---- writing

  /** A new row of `item` (its place set) with `key`, its input rowInputOf(item); its id. */
  async insert(q: Queryable, item: Item, key: JournalKey, batchId: number): Promise<number> {
    const now = this.now();
    const { columns, written } = itemColumns(this.outDir, item, null, batchId, now);
    const { rows } = await q.query<{ id: number }>(ITEM_SQL.insert, [
      this.outDir,
      rowInputOf(item),
      itemPlace(item),
      key.contentHash,
      key.recipeHash,
      batchId,
      ...columnValues(columns),
      now,
    ]);
    const id = rows[0]!.id;
    this.written.remember(id, written);
    return id;
  }

  /** Row `id` now holds `item` (`prev`: the row as it was, null when it is started over). */
  write(
    q: Queryable,
    id: number,
    item: Item,
    prev: JournalRow | null,
    batchId: number | null,
  ): Promise<void> {
    return this.put(q, id, item, prevOf(prev), batchId);
  }

  /**
   * Row `id` now holds `item`, unless it holds it already but for the item's `journal` note (compared
   * with the row as last written here, or as read when not remembered).
   *
   * @param batchId - the batch writing; null keeps the row's own
   */
  async save(q: Queryable, id: number, item: Item, batchId: number | null): Promise<void> {
    const last = this.written.get(id);
    if (last) {
      const text = changedText(last, item);
      if (text !== null) await this.put(q, id, item, last.prev, batchId ?? last.prev.batchId, text, true);
      return;
    }
    const { rows } = await q.query<ItemRowSql>(ITEM_SQL.byId, [this.outDir, id]);
    const r = rows[0];
    if (!r) return;
    const stored = itemFromJson(r.item);
    if (sameButNote(r.item, stored, item)) return;
    const prev = rowOfSql(r, stored);
    await this.put(q, id, item, prevOf(prev), batchId ?? prev.batchId, undefined, true);
  }

  async supersede(q: Queryable, id: number): Promise<void> {
    this.written.forget(id);
    await q.query(ITEM_SQL.supersede, [this.outDir, id, this.now()]);
  }

  async reactivate(q: Queryable, id: number): Promise<void> {
    this.written.forget(id);
    await q.query(ITEM_SQL.reactivate, [this.outDir, id]);
  }

  /**
   * Claims row `id` for this process (an admission): the row's claim number goes up by one, and every
   * later save of the row here is made only while that number is still the row's (the fence against a
   * worker held up past its lease: ../store/item-taken-over.ts).
   */
  async claim(q: Queryable, id: number): Promise<void> {
    const { rows } = await q.query<{ claim: string }>(ITEM_SQL.claim, [this.outDir, id]);
    if (rows[0]) this.claims.set(id, Number(rows[0].claim));
  }

  /** Forgets the claim on row `id` (the process is done with it). */
  unclaim(id: number): void {
    this.claims.delete(id);
  }

  async setKey(q: Queryable, id: number, key: JournalKey): Promise<void> {
    await q.query(ITEM_SQL.setKey, [this.outDir, id, key.contentHash, key.recipeHash]);
  }

  private async put(
    q: Queryable,
    id: number,
    item: Item,
    prev: PrevRow | null,
    batchId: number | null,
    text?: string,
    fenced = false,
  ): Promise<void> {
    const now = this.now();
    const { columns, written } = itemColumns(this.outDir, item, prev, batchId, now, text);
    this.written.forget(id); // until the update is done: a failed one leaves the row as it was
    const claim = fenced ? (this.claims.get(id) ?? null) : null;
    const { rowCount } = await q.query(ITEM_SQL.update, [
      this.outDir,
      id,
      batchId,
      ...columnValues(columns),
      now,
      claim,
    ]);
    if (claim !== null && rowCount === 0) throw new ItemTakenOverError(item.input);
    this.written.remember(id, written);
  }
}
