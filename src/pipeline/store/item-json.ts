/**
 * An item as the journal stores it (JSON text in the row), read back. Items saved before an item held
 * steps carried their one generation's fields (request, upload, generation id, outputs, ...) on the
 * item itself: they are read as an item with one step, MAIN_STEP.
 */
import {
  type Item,
  type ItemAttempt,
  type ItemLayer,
  isStepState,
  MAIN_STEP,
  type StepRecord,
  type StepState,
  type StepUpload,
} from '../item.ts';

/** The fields an item held before steps. */
export interface FlatStepFields {
  request?: Record<string, unknown> | null;
  upload?: StepUpload | null;
  generationId?: string | null;
  requestId?: string | null;
  generation?: StepRecord['generation'];
  outputs?: string[];
  composite?: string | null;
  layers?: ItemLayer[];
  attempts?: number;
  earlierAttempts?: ItemAttempt[];
}

/** The state of the one step of a flat item, from what it holds. */
function flatStepState(item: Pick<Item, 'state'>, f: FlatStepFields): StepState {
  if (isStepState(item.state)) return item.state;
  if (item.state === 'reported' || (f.outputs?.length ?? 0) > 0) return 'downloaded';
  if (f.generationId) return 'submitted';
  return f.upload ? 'uploaded' : 'planned';
}

/**
 * The item of a journal row's JSON text (a flat item of an earlier version given its one step).
 *
 * @example itemFromJson(row.item).steps[0]?.generationId
 */
export function itemFromJson(text: string): Item {
  return itemFromFlat(JSON.parse(text) as Item & FlatStepFields);
}

/** An item whose one step's fields may be on the item itself, as items were stored before steps. */
export type FlatItem = Omit<Item, 'steps'> & { steps?: Item['steps'] } & FlatStepFields;

/**
 * The item of a flat one (see FlatItem): its step fields moved into its one step; an item with
 * steps is returned as it is.
 *
 * @example itemFromFlat({ ...newItem('a.jpg', '/in/a.jpg', 1, 0), state: 'submitted', request, generationId: 'g1' })
 */
export function itemFromFlat(raw: FlatItem): Item {
  if (Array.isArray(raw.steps) && raw.steps.length > 0) return raw as Item;
  const {
    request,
    upload,
    generationId,
    requestId,
    generation,
    outputs,
    composite,
    layers,
    attempts,
    earlierAttempts,
    steps: _none,
    ...item
  } = raw;
  if (!request) return { ...item, steps: [] };
  const f = { upload, generationId, outputs };
  const step: StepRecord = {
    name: MAIN_STEP,
    state: flatStepState(item, f),
    request,
    upload: upload ?? null,
    generationId: generationId ?? null,
    requestId: requestId ?? null,
    generation: generation ?? null,
    outputs: outputs ?? [],
    composite: composite ?? null,
    layers: layers ?? [],
    attempts: attempts ?? 0,
    ...(earlierAttempts ? { earlierAttempts } : {}),
  };
  return { ...item, steps: [step] };
}
