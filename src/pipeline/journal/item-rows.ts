/**
 * The journal's items table: one row per attempt at an input's work (see schema.ts), read as
 * JournalRow and written from an Item (its indexed columns derived here: the live state, the phase,
 * whether the create's outcome is unknown, the outputs recorded on reaching `downloaded`).
 */
import type Database from 'better-sqlite3';
import { isChain } from '../chain.ts';
import { currentStep, type Item, type ItemState, withStep } from '../item.ts';
import { itemFromJson } from './item-json.ts';
import { choosePlace, folderInUse } from './item-place.ts';
import {
  isOutcomeUnknown,
  type JournalKey,
  type JournalPhase,
  type JournalRow,
  liveStateOf,
  phaseOf,
} from './journal-row.ts';
import { measureOutputs, type RecordedOutput } from './outputs-check.ts';
import { ITEM_SQL } from './sqlite-plans.ts';

interface ItemRowSql {
  id: number;
  out_dir: string;
  input: string;
  place: string | null;
  content_hash: string;
  recipe_hash: string;
  live_state: string;
  phase: string;
  outcome_unknown: number;
  item: string;
  outputs: string | null;
  uploaded_at: number | null;
  batch_id: number | null;
  created_at: number;
  updated_at: number;
  superseded_at: number | null;
}

function toRow(r: ItemRowSql, stored: Item = itemFromJson(r.item)): JournalRow {
  const place = r.place ?? r.input;
  return {
    id: r.id,
    outDir: r.out_dir,
    input: r.input,
    place,
    contentHash: r.content_hash,
    recipeHash: r.recipe_hash,
    item: { ...stored, place },
    liveState: r.live_state as ItemState,
    phase: r.phase as JournalPhase,
    outcomeUnknown: r.outcome_unknown === 1,
    uploadedAt: r.uploaded_at,
    outputs: r.outputs === null ? null : (JSON.parse(r.outputs) as RecordedOutput[]),
    batchId: r.batch_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    supersededAt: r.superseded_at,
  };
}

/** True when `item` is the stored item (its JSON text, and that text read) but for its `journal` note. */
function sameButNote(storedText: string, stored: Item, item: Item): boolean {
  if (storedText === JSON.stringify(item)) return true;
  const { journal: _stored, ...was } = stored;
  const { journal: _now, ...now } = item;
  return JSON.stringify(was) === JSON.stringify(now);
}

/** What a write needs of the row it replaces. */
type PrevRow = Pick<JournalRow, 'phase' | 'liveState' | 'uploadedAt' | 'outputs' | 'batchId'> & {
  /** The request id of the row's current step. */
  requestId: string | null | undefined;
};

/** A row as this process last wrote it: its item's JSON text and journal note, and what a write needs. */
interface WrittenRow {
  text: string;
  note: unknown;
  prev: PrevRow;
}

/**
 * How many rows' last writes are remembered (the oldest forgotten first): more than a batch has in
 * flight, so an item's saves never read its row back, while memory stays bounded as batches grow.
 */
export const WRITTEN_ROWS_KEPT = 4_096;

function prevOf(row: JournalRow | null): PrevRow | null {
  if (!row) return null;
  const { phase, liveState, uploadedAt, outputs, batchId } = row;
  return { phase, liveState, uploadedAt, outputs, batchId, requestId: currentStep(row.item)?.requestId };
}

/** The item rows of one out dir. */
export class ItemRows {
  private readonly sql;
  /** Rows by id as last written here (see save); emptied when a transaction that wrote them rolls back. */
  private readonly written = new Map<number, WrittenRow>();

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
      earlier: db.prepare<[string, string, string, string], ItemRowSql>(ITEM_SQL.earlier),
      placeTaken: db.prepare<[string, string, string], { one: number }>(ITEM_SQL.placeTaken),
      placeHeldByOther: db.prepare<[string, string, number], { one: number }>(ITEM_SQL.placeHeldByOther),
      insert: db.prepare(ITEM_SQL.insert),
      update: db.prepare(ITEM_SQL.update),
      supersede: db.prepare(ITEM_SQL.supersede),
      setKey: db.prepare(ITEM_SQL.setKey),
      reactivate: db.prepare(ITEM_SQL.reactivate),
    };
  }

  // ---- reading

  /** The active row of `input`, or null. */
  active(input: string): JournalRow | null {
    const r = this.sql.active.get(this.outDir, input);
    return r ? toRow(r) : null;
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
    return { row: toRow(r, stored), sameButNote: sameButNote(r.item, stored, item) };
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
    const text = JSON.stringify(item);
    if (text === last.text) return;
    if ('journal' in item && JSON.stringify({ ...item, journal: last.note }) === last.text) return;
    this.put(id, item, last.prev, batchId ?? last.prev.batchId, text);
  }

  /** Forgets the rows remembered as written: the transaction that wrote them was rolled back. */
  forgetWritten(): void {
    this.written.clear();
  }

  /** Every row `input` has had, oldest first. */
  history(input: string): JournalRow[] {
    return this.sql.history.all(this.outDir, input).map((r) => toRow(r));
  }

  /** The active row of every input, by input path. */
  allActive(): JournalRow[] {
    return this.sql.allActive.all(this.outDir).map((r) => toRow(r));
  }

  /** Active rows in `phase`, by input path. */
  inPhase(phase: JournalPhase): JournalRow[] {
    return this.sql.byPhase.all(this.outDir, phase).map((r) => toRow(r));
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
    const row = toRow(sqlRow);
    return this.sql.placeHeldByOther.get(this.outDir, row.place, row.id) === undefined ? row : null;
  }

  /** The first free place for a new row of `input` (see item-place.ts). */
  freePlace(input: string): string {
    return choosePlace(
      input,
      (place) =>
        this.sql.placeTaken.get(this.outDir, place, input) !== undefined || folderInUse(this.outDir, place),
    );
  }

  // ---- writing (inside the journal's transactions)

  /** A new row of `item` (its place set) with `key`; its id. */
  insert(item: Item, key: JournalKey, batchId: number): number {
    const { columns, written } = this.columns(item, null, batchId);
    const result = this.sql.insert.run({
      out_dir: this.outDir,
      input: item.input,
      place: item.place ?? item.input,
      content_hash: key.contentHash,
      recipe_hash: key.recipeHash,
      batch_id: batchId,
      ...columns,
    });
    const id = Number(result.lastInsertRowid);
    this.remember(id, written);
    return id;
  }

  /** Row `id` now holds `item` (`prev`: the row as it was, null when it is started over). */
  write(id: number, item: Item, prev: JournalRow | null, batchId: number | null): void {
    this.put(id, item, prevOf(prev), batchId);
  }

  supersede(id: number): void {
    this.written.delete(id);
    this.sql.supersede.run(this.now(), id);
  }

  reactivate(id: number): void {
    this.written.delete(id);
    this.sql.reactivate.run(id);
  }

  /** Updates row `id` and remembers what it now holds (`text`: JSON.stringify(item), when known). */
  private put(id: number, item: Item, prev: PrevRow | null, batchId: number | null, text?: string): void {
    const { columns, written } = this.columns(item, prev, batchId, text);
    this.sql.update.run({ id, batch_id: batchId, ...columns });
    this.remember(id, written);
  }

  private remember(id: number, written: WrittenRow): void {
    this.written.delete(id);
    this.written.set(id, written);
    if (this.written.size > WRITTEN_ROWS_KEPT)
      this.written.delete(this.written.keys().next().value as number);
  }

  setKey(id: number, key: JournalKey): void {
    this.sql.setKey.run(key.contentHash, key.recipeHash, id);
  }

  /** The columns a row holding `item` has, and what is remembered of it (see save). */
  private columns(item: Item, prev: PrevRow | null, batchId: number | null, text?: string) {
    let it = item;
    const step = currentStep(item);
    // A stop may interrupt a create after it was sent: the request id stays until an answer is known.
    if (
      !isChain(item) &&
      item.state === 'stopped' &&
      prev?.phase === 'submitting' &&
      !step?.generationId &&
      !step?.requestId &&
      prev.requestId
    ) {
      it = withStep(item, { requestId: prev.requestId });
    }
    const now = currentStep(it);
    const liveState = liveStateOf(it, prev?.liveState ?? null);
    const phase = phaseOf(it, liveState);
    const uploadedAt = phase === 'local' ? null : (prev?.uploadedAt ?? this.now());
    let outputs: RecordedOutput[] | null = null;
    if (phase === 'downloaded' || phase === 'reported')
      outputs = prev?.outputs ?? measureOutputs(this.outDir, it);
    const itemText = it === item && text !== undefined ? text : JSON.stringify(it);
    const columns = {
      state: it.state,
      live_state: liveState,
      phase,
      reason: it.reason,
      failed_at: it.failedAt,
      upload_file_id: now?.upload?.fileId ?? null,
      generation_id: now?.generationId ?? null,
      request_id: now?.requestId ?? null,
      attempts: now?.attempts ?? 0,
      outcome_unknown: isOutcomeUnknown(it, liveState) ? 1 : 0,
      item: itemText,
      outputs: outputs === null ? null : JSON.stringify(outputs),
      uploaded_at: uploadedAt,
      now: this.now(),
    };
    const written: WrittenRow = {
      text: itemText,
      note: it.journal,
      prev: { phase, liveState, uploadedAt, outputs, batchId, requestId: now?.requestId },
    };
    return { columns, written };
  }
}
