/**
 * The shape every pipeline stage has, and the three ways a stage ends an item's step: advance it one
 * state, skip it, or fail it with a plain reason. Stages own nothing but their step: concurrency,
 * timings, retries, persistence and cancellation policy belong to the runner.
 */
import {
  type Item,
  type ItemState,
  type StageName,
  type StepRecord,
  type StepState,
  withStep,
} from './item.ts';
import type { Recipe } from './recipe.ts';

/**
 * What a stage may read besides the item. The runner extends this with what the network stages need
 * (the client, shared reference uploads, ...); the local stages (sniff, plan, check) need only these.
 */
export interface StageContext {
  /** Absolute path of the batch's input dir (never modified). */
  inputDir: string;
  /** Absolute path of the batch's out dir. */
  outDir: string;
  /** The loaded, validated recipe of the batch. */
  recipe: Recipe;
  /** Aborts the batch: a stage that sees it aborted rejects with `signal.reason` instead of finishing. */
  signal: AbortSignal;
}

/**
 * One stage: takes an item in the state the stage expects and resolves with the item advanced exactly
 * one state, or `skipped` / `failed` with a reason. The input item is not mutated. A stage rejects only
 * for problems that are not the file's own (an abort, a missing ffprobe) and when the file is found
 * changed since its check (InputChangedError, input-changed.ts): those are the runner's to handle.
 */
export type Stage = (item: Item, ctx: StageContext) => Promise<Item>;

/**
 * The item moved to `state`, with `patch` applied; the input item is left as it was.
 *
 * @example return advance(item, 'sniffed', { sniff });
 */
export function advance(item: Item, state: ItemState, patch: Partial<Item> = {}): Item {
  return { ...item, ...patch, state };
}

/**
 * The item moved to `state` with its current step (stepOf): the step takes `state` too, with `step`
 * applied; `patch` applies to the item.
 *
 * @example return advanceStep(item, 'submitted', { generationId: g.id });
 */
export function advanceStep(
  item: Item,
  state: ItemState & StepState,
  step: Partial<StepRecord> = {},
  patch: Partial<Item> = {},
): Item {
  return { ...withStep(item, { ...step, state }), ...patch, state };
}

/**
 * The item failed by `stage` at its current step: the step is `failed` too, with `step` applied.
 *
 * @example return failStep(item, 'wait', reason, { generation: { state: 'failed', ... } });
 */
export function failStep(
  item: Item,
  stage: StageName,
  reason: string,
  step: Partial<StepRecord> = {},
  patch: Partial<Item> = {},
): Item {
  return failItem(withStep(item, { ...step, state: 'failed' }), stage, reason, patch);
}

/**
 * The item failed by `stage` with a plain `reason` (what is wrong with the file, in words a person acts
 * on; a service `detail` when the service would reject it the same way).
 *
 * @example return failItem(item, 'check', 'source: image exceeds 50 MB limit');
 */
export function failItem(item: Item, stage: StageName, reason: string, patch: Partial<Item> = {}): Item {
  return { ...item, ...patch, state: 'failed', reason, failedAt: stage };
}

/**
 * The item skipped with a plain `reason` (nothing is wrong with it; the batch was not asked to process it).
 *
 * @example return skipItem(item, 'matches no recipe rule');
 */
export function skipItem(item: Item, reason: string, patch: Partial<Item> = {}): Item {
  return { ...item, ...patch, state: 'skipped', reason };
}

/**
 * Rejects with the signal's reason when the batch was aborted; stages call it before and between
 * their slow steps.
 */
export function throwIfAborted(signal: AbortSignal): void {
  signal.throwIfAborted();
}

/**
 * Rejects when `item` is not in the state the stage takes: a wiring error of the runner, not the file's.
 *
 * @param stage - the stage's name, for the message
 * @param expected - the state the stage takes
 */
export function expectState(item: Item, stage: StageName, expected: ItemState): void {
  if (item.state !== expected) {
    throw new Error(
      `stage ${stage} takes an item in state '${expected}', got '${item.state}' (${item.input})`,
    );
  }
}
