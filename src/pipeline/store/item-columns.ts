/**
 * What an item row holds besides the item itself, derived from the item and the row it replaces: the
 * live state, the phase, whether the create's outcome is unknown, the current step's ids, the outputs
 * recorded on reaching `downloaded`, when its media were uploaded. Every store writes these columns;
 * this is the one place they are derived (the SQLite journal's item-rows.ts, the PostgreSQL store's
 * items). Also the rule that a save changing only the item's `journal` note writes nothing.
 */
import { isChain } from '../chain.ts';
import { currentStep, type Item, type ItemState, withStep } from '../item.ts';
import { itemFromJson } from './item-json.ts';
import { isOutcomeUnknown, type JournalPhase, type JournalRow, liveStateOf, phaseOf } from './journal-row.ts';
import { measureOutputs, type RecordedOutput } from './outputs-check.ts';

/** An item row as the tables hold it (snake_case columns; times in ms since the epoch). */
export interface ItemRowSql {
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

/** The JournalRow of an item row (`stored`: its item, when already read from the row's JSON text). */
export function rowOfSql(r: ItemRowSql, stored: Item = itemFromJson(r.item)): JournalRow {
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

/** What a write needs of the row it replaces. */
export type PrevRow = Pick<JournalRow, 'phase' | 'liveState' | 'uploadedAt' | 'outputs' | 'batchId'> & {
  /** The request id of the row's current step. */
  requestId: string | null | undefined;
};

/** A row as this process last wrote it: its item's JSON text and journal note, and what a write needs. */
export interface WrittenRow {
  text: string;
  note: unknown;
  prev: PrevRow;
}

/** The derived columns of a row holding an item (snake_case: the tables' names). */
export interface ItemColumns {
  state: string;
  live_state: string;
  phase: string;
  reason: string | null;
  failed_at: string | null;
  upload_file_id: string | null;
  generation_id: string | null;
  request_id: string | null;
  attempts: number;
  outcome_unknown: 0 | 1;
  /** The item's JSON text. */
  item: string;
  /** The recorded outputs' JSON text, or null. */
  outputs: string | null;
  uploaded_at: number | null;
}

/** What a write of `row` needs to know of it (null: the row is started over). */
export function prevOf(row: JournalRow | null): PrevRow | null {
  if (!row) return null;
  const { phase, liveState, uploadedAt, outputs, batchId } = row;
  return { phase, liveState, uploadedAt, outputs, batchId, requestId: currentStep(row.item)?.requestId };
}

/**
 * The columns of a row of `outDir` holding `item`, replacing `prev` (null for a row started over), at
 * `now`; and what is remembered of the write (see unchangedBut).
 *
 * @param batchId - the batch writing (remembered as the row's)
 * @param text - JSON.stringify(item), when the caller has it
 */
export function itemColumns(
  outDir: string,
  item: Item,
  prev: PrevRow | null,
  batchId: number | null,
  now: number,
  text?: string,
): { columns: ItemColumns; written: WrittenRow } {
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
  const current = currentStep(it);
  const liveState = liveStateOf(it, prev?.liveState ?? null);
  const phase = phaseOf(it, liveState);
  const uploadedAt = phase === 'local' ? null : (prev?.uploadedAt ?? now);
  let outputs: RecordedOutput[] | null = null;
  if (phase === 'downloaded' || phase === 'reported') outputs = prev?.outputs ?? measureOutputs(outDir, it);
  const itemText = it === item && text !== undefined ? text : JSON.stringify(it);
  const columns: ItemColumns = {
    state: it.state,
    live_state: liveState,
    phase,
    reason: it.reason,
    failed_at: it.failedAt,
    upload_file_id: current?.upload?.fileId ?? null,
    generation_id: current?.generationId ?? null,
    request_id: current?.requestId ?? null,
    attempts: current?.attempts ?? 0,
    outcome_unknown: isOutcomeUnknown(it, liveState) ? 1 : 0,
    item: itemText,
    outputs: outputs === null ? null : JSON.stringify(outputs),
    uploaded_at: uploadedAt,
  };
  const written: WrittenRow = {
    text: itemText,
    note: it.journal,
    prev: { phase, liveState, uploadedAt, outputs, batchId, requestId: current?.requestId },
  };
  return { columns, written };
}

/** True when `item` is the stored item (its JSON text, and that text read) but for its `journal` note. */
export function sameButNote(storedText: string, stored: Item, item: Item): boolean {
  if (storedText === JSON.stringify(item)) return true;
  const { journal: _stored, ...was } = stored;
  const { journal: _now, ...now } = item;
  return JSON.stringify(was) === JSON.stringify(now);
}

/**
 * What a save of `item` over the row as last written (`last`) does: nothing (null) when the item is
 * what was written but for its `journal` note, else the item's JSON text to write.
 */
export function changedText(last: WrittenRow, item: Item): string | null {
  const text = JSON.stringify(item);
  if (text === last.text) return null;
  // With the note written last time (the same object, as a save usually has it), the texts differ in more.
  if (item.journal === last.note) return text;
  if ('journal' in item && JSON.stringify({ ...item, journal: last.note }) === last.text) return null;
  return text;
}

/**
 * How many rows' last writes are remembered (the oldest forgotten first): more than a batch has in
 * flight, so an item's saves never read its row back, while memory stays bounded as batches grow.
 */
export const WRITTEN_ROWS_KEPT = 4_096;

/**
 * The rows' last writes one process remembers, at most `kept` (the oldest forgotten first): more than a
 * batch has in flight, so an item's saves never read its row back, while memory stays bounded.
 */
export class WrittenRows {
  private readonly rows = new Map<number, WrittenRow>();
  constructor(private readonly kept: number) {}

  get(id: number): WrittenRow | undefined {
    return this.rows.get(id);
  }

  remember(id: number, written: WrittenRow): void {
    this.rows.delete(id);
    this.rows.set(id, written);
    if (this.rows.size > this.kept) this.rows.delete(this.rows.keys().next().value as number);
  }

  forget(id: number): void {
    this.rows.delete(id);
  }

  /** Forgets them all (the transaction that wrote them was rolled back). */
  clear(): void {
    this.rows.clear();
  }
}
