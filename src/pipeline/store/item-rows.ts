/**
 * The items table, for every store: one row per attempt at an input's work (see the dialects' schema),
 * read as JournalRow and written from an Item with the columns item-columns.ts derives. Each method is a
 * Step on the connection or transaction it is given (sql.ts), so the SQLite journal runs it inside its
 * synchronous transactions and the PostgreSQL store awaits it.
 */
import type { Item } from '../item.ts';
import { folderPlace, isFolderPlace, itemPlace } from '../report/item-paths.ts';
import { rowInputOf } from './admission.ts';
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
} from './item-columns.ts';
import { itemFromJson } from './item-json.ts';
import { folderInUse, GivenPlaces } from './item-place.ts';
import { ItemTakenOverError } from './item-taken-over.ts';
import type { JournalKey, JournalPhase, JournalRow } from './journal-row.ts';
import type { Sql } from './sql.ts';
import type { Statements } from './statements.ts';

/** The claim statement of a dialect whose rows are shared by processes (the fence), or null. */
export type ClaimStatement = string | null;

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
export class ItemRows {
  /** Rows by id as last written here; cleared when a transaction that wrote them rolls back. */
  readonly written = new WrittenRows(WRITTEN_ROWS_KEPT);
  /** The claim this process holds on each row it admitted and still saves (see claim). */
  private readonly claims = new Map<number, number>();
  /** Places given this session to items kept in no row (placeFor). */
  private readonly given = new GivenPlaces();
  private readonly sqlOf: Statements['item'];

  constructor(
    private readonly outDir: string,
    private readonly now: () => number,
    statements: Statements,
    /** The dialect's claim statement ($1 out dir, $2 id; answers `claim`), null: rows are not claimed. */
    private readonly claimSql: ClaimStatement,
  ) {
    this.sqlOf = statements.item;
  }

  private *one(sql: Sql, text: string, params: unknown[]): Generator<Promise<unknown>, JournalRow | null> {
    const rows = yield* sql.all<ItemRowSql>(text, [this.outDir, ...params]);
    return rows[0] ? rowOfSql(rows[0]) : null;
  }

  private *many(sql: Sql, text: string, params: unknown[]): Generator<Promise<unknown>, JournalRow[]> {
    const rows = yield* sql.all<ItemRowSql>(text, [this.outDir, ...params]);
    return rows.map((r) => rowOfSql(r));
  }

  // ---- reading

  /** The active row of `input`, or null. */
  active(sql: Sql, input: string) {
    return this.one(sql, this.sqlOf.active, [input]);
  }

  /** Every row `input` has had, oldest first. */
  history(sql: Sql, input: string) {
    return this.many(sql, this.sqlOf.history, [input]);
  }

  /** The active row of every input, by input path. */
  allActive(sql: Sql) {
    return this.many(sql, this.sqlOf.allActive, []);
  }

  /** Active rows in `phase`, by input path. */
  inPhase(sql: Sql, phase: JournalPhase) {
    return this.many(sql, this.sqlOf.byPhase, [phase]);
  }

  /** The rows in `phase` a run may take up (left-in-flight.ts): active ones, and replaced ones. */
  *leftInPhase(sql: Sql, phase: JournalPhase) {
    const active = yield* this.inPhase(sql, phase);
    const replaced = yield* this.many(sql, this.sqlOf.supersededByPhase, [phase]);
    return { active, replaced };
  }

  /** The newest row at each place, when it finished (finished-items.ts). */
  finishedAtPlaces(sql: Sql) {
    return this.many(sql, this.sqlOf.finishedAtPlaces, []);
  }

  /** Inputs whose active row is reported or failed, with the size and mtime their item recorded. */
  *finished(sql: Sql): Generator<Promise<unknown>, Map<string, { size: number; mtimeMs: number }>> {
    type Finished = { input: string; size: unknown; mtime_ms: unknown };
    const rows = yield* sql.all<Finished>(this.sqlOf.finished, [this.outDir]);
    const out = new Map<string, { size: number; mtimeMs: number }>();
    for (const r of rows) {
      const [size, mtimeMs] = [Number(r.size), Number(r.mtime_ms)];
      if (r.size !== null && r.mtime_ms !== null && Number.isFinite(size) && Number.isFinite(mtimeMs))
        out.set(r.input, { size, mtimeMs });
    }
    return out;
  }

  /**
   * The latest replaced row of `input` with this key whose generation was created (item-place.ts's
   * holdsPlace), when its place is still its own alone (rows of a journal older than places all share
   * the input's folder).
   */
  *earlier(sql: Sql, input: string, key: JournalKey): Generator<Promise<unknown>, JournalRow | null> {
    const row = yield* this.one(sql, this.sqlOf.earlier, [input, key.contentHash, key.recipeHash]);
    if (!row) return null;
    const other = yield* sql.all(this.sqlOf.placeHeldByOther, [this.outDir, row.place, row.id]);
    return other.length === 0 ? row : null;
  }

  /** The rows of other inputs with `key` that are active or hold their place, newest first (same-content.ts). */
  *twins(sql: Sql, input: string, key: JournalKey): Generator<Promise<unknown>, JournalRow[]> {
    return yield* this.many(sql, this.sqlOf.twins, [key.contentHash, key.recipeHash, input]);
  }

  /** The rows with `key`'s content and another recipe, the input's own too (step-work.ts), newest first. */
  *sameBytes(sql: Sql, key: JournalKey): Generator<Promise<unknown>, JournalRow[]> {
    return yield* this.many(sql, this.sqlOf.sameBytes, [key.contentHash, key.recipeHash]);
  }

  /** The first free place for a new row of `input` (see item-place.ts: the input's, else -1, -2, …). */
  *freePlace(sql: Sql, input: string, key = input): Generator<Promise<unknown>, string> {
    for (let n = 0; ; n++) {
      const place = folderPlace(input, n);
      if (this.given.takenByOther(place, key)) continue;
      const taken = yield* sql.all(this.sqlOf.placeTaken, [this.outDir, place, key]);
      if (taken.length === 0 && !folderInUse(this.outDir, place)) return place;
    }
  }

  /** The place for an item kept in no row (see GivenPlaces), `key` its inputKey; taken from now on. */
  *givePlace(sql: Sql, input: string, key: string): Generator<Promise<unknown>, string> {
    const place = yield* this.freePlace(sql, input, key);
    this.given.give(place, key);
    return place;
  }

  /**
   * The place of `row` as a folder can have it. A row an earlier version of genpipe gave a place no
   * folder can have (its input path, holding a `\` or too long a name) never wrote there — the run
   * that made it failed at its first write — so it is given the first free place now, kept for good;
   * with `write` false (a dry run) that place is only told.
   */
  *placeOf(sql: Sql, row: JournalRow, write: boolean): Generator<Promise<unknown>, string> {
    if (isFolderPlace(row.place)) return row.place;
    const place = yield* this.freePlace(sql, row.input);
    if (write) yield* sql.run(this.sqlOf.setPlace, [this.outDir, row.id, place]);
    return place;
  }

  // ---- writing

  /** A new row of `item` (its place set) with `key`, its input rowInputOf(item); its id. */
  *insert(sql: Sql, item: Item, key: JournalKey, batchId: number): Generator<Promise<unknown>, number> {
    const now = this.now();
    const { columns, written } = itemColumns(this.outDir, item, null, batchId, now);
    const [row] = yield* sql.all<{ id: number }>(this.sqlOf.insert, [
      ...[this.outDir, rowInputOf(item), itemPlace(item), key.contentHash, key.recipeHash, batchId],
      ...columnValues(columns),
      now,
    ]);
    const id = Number(row!.id);
    this.written.remember(id, written);
    return id;
  }

  /** Row `id` now holds `item` (`prev`: the row as it was, null when it is started over). */
  write(sql: Sql, id: number, item: Item, prev: JournalRow | null, batchId: number | null) {
    return this.put(sql, id, item, prevOf(prev), batchId);
  }

  /**
   * Row `id` now holds `item`, unless it holds it already but for the item's `journal` note. The row as
   * this process last wrote it is remembered, so a save compares with that instead of reading the row
   * back and parsing it (an item is saved about seven times on its way); a row not remembered is read.
   * Where rows are claimed, the save is made only under this process's claim (ItemTakenOverError).
   *
   * @param batchId - the batch writing; null keeps the row's own
   */
  *save(sql: Sql, id: number, item: Item, batchId: number | null): Generator<Promise<unknown>, void> {
    const last = this.written.get(id);
    if (last) {
      const text = changedText(last, item);
      if (text !== null) yield* this.put(sql, id, item, last.prev, batchId ?? last.prev.batchId, text, true);
      return;
    }
    const [r] = yield* sql.all<ItemRowSql>(this.sqlOf.byId, [this.outDir, id]);
    if (!r) return;
    const stored = itemFromJson(r.item); // read once, for the row and the comparison
    if (sameButNote(r.item, stored, item)) return;
    const prev = rowOfSql(r, stored);
    yield* this.put(sql, id, item, prevOf(prev), batchId ?? prev.batchId, undefined, true);
  }

  *supersede(sql: Sql, id: number): Generator<Promise<unknown>, void> {
    this.written.forget(id);
    yield* sql.run(this.sqlOf.supersede, [this.outDir, id, this.now()]);
  }

  *reactivate(sql: Sql, id: number): Generator<Promise<unknown>, void> {
    this.written.forget(id);
    yield* sql.run(this.sqlOf.reactivate, [this.outDir, id]);
  }

  *setKey(sql: Sql, id: number, key: JournalKey): Generator<Promise<unknown>, void> {
    yield* sql.run(this.sqlOf.setKey, [this.outDir, id, key.contentHash, key.recipeHash]);
  }

  /**
   * Claims row `id` for this process (an admission), where rows are claimed: the row's claim number
   * goes up by one, and every later save of the row here is made only while that number is still the
   * row's (the fence against a worker held up past its lease: item-taken-over.ts).
   */
  *claim(sql: Sql, id: number): Generator<Promise<unknown>, void> {
    if (this.claimSql === null) return;
    const [row] = yield* sql.all<{ claim: unknown }>(this.claimSql, [this.outDir, id]);
    if (row) this.claims.set(id, Number(row.claim));
  }

  /**
   * Forgets what this process keeps of row `id` — its claim, its last write — once it saves the row no
   * more (its item was saved finished, or its input is looked at again): a session of any length keeps
   * only its rows in flight.
   */
  release(id: number): void {
    this.claims.delete(id);
    this.written.forget(id);
  }

  /** How many rows this process holds a claim on (tests: it stays bounded). */
  claimCount(): number {
    return this.claims.size;
  }

  private *put(
    sql: Sql,
    id: number,
    item: Item,
    prev: PrevRow | null,
    batchId: number | null,
    text?: string,
    fenced = false,
  ): Generator<Promise<unknown>, void> {
    const now = this.now();
    const { columns, written } = itemColumns(this.outDir, item, prev, batchId, now, text);
    this.written.forget(id); // until the update is done: a failed one leaves the row as it was
    const claim = fenced ? (this.claims.get(id) ?? null) : null;
    const changed = yield* sql.run(this.sqlOf.update, [
      ...[this.outDir, id, batchId],
      ...columnValues(columns),
      now,
      claim,
    ]);
    if (claim !== null && changed === 0) throw new ItemTakenOverError(item.input);
    this.written.remember(id, written);
  }
}
