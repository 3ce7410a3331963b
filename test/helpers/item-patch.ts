/**
 * Test fixtures written the way an item reads in a report: a patch that may hold the fields of the
 * item's one step (request, upload, generation id, outputs, ...) next to the item's own, applied to
 * the item and to its current step (made, as MAIN_STEP, when the item has none yet).
 */
import {
  currentStep,
  type Item,
  isStepState,
  MAIN_STEP,
  newStep,
  type StepRecord,
  withStep,
} from '../../src/pipeline/item.ts';
import type { FlatStepFields } from '../../src/pipeline/store/item-json.ts';

const STEP_KEYS = new Set<string>([
  'request',
  'upload',
  'generationId',
  'requestId',
  'generation',
  'outputs',
  'composite',
  'layers',
  'attempts',
  'earlierAttempts',
]);

/** A patch of an item and of its one step. */
export type ItemPatch = Partial<Omit<Item, 'steps'>> & FlatStepFields;

/**
 * `item` with `patch` applied: step fields to its current step, the rest to the item; an item state
 * that is a step state is the step's too.
 *
 * @example patchItem(planned, { state: 'submitted', requestId: 'r1', generationId: 'g1' })
 */
export function patchItem(item: Item, patch: ItemPatch): Item {
  const own: Record<string, unknown> = {};
  const step: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) (STEP_KEYS.has(k) ? step : own)[k] = v;
  if (patch.state && isStepState(patch.state) && (item.steps.length > 0 || 'request' in step)) {
    step.state = patch.state;
  }
  if (Object.keys(step).length === 0) return { ...item, ...own } as Item;
  const base = item.steps.length > 0 ? item : { ...item, steps: [newStep(MAIN_STEP, {})] };
  return { ...withStep(base, step as Partial<StepRecord>), ...own } as Item;
}

/**
 * The item with its current step's fields beside its own (the item's state wins), for assertions
 * written against an item's one request: `expect(flatView(item)).toMatchObject({ generationId })`.
 */
export function flatView(item: Item): Record<string, unknown> {
  const { steps, ...own } = item;
  const step = currentStep({ steps });
  if (!step) return own;
  const { name: _name, state: _state, ...fields } = step;
  return { ...fields, ...own };
}

/** A decision or row with its `item` seen through flatView, for toMatchObject. */
export function withFlatItem<T extends { item: Item }>(
  holder: T,
): Omit<T, 'item'> & { item: Record<string, unknown> } {
  return { ...holder, item: flatView(holder.item) };
}
