/**
 * Chains: an item whose rule has `steps` is a small graph of generations, each step waiting on the
 * steps its request names with `{ from: <step> }` (StepRecord.after). Each step runs through the same
 * stages as a single request (upload → submit → wait → download), so each is journaled, paced and
 * counted against the job ceiling like any generation, by the same step loop (runner/item-driver.ts).
 * The runner starts every step whose parents are done in a lane of its own (runner/tracks.ts
 * driveLanes: siblings at once); the item's state follows the step that last moved (Item.step).
 *
 * A step that failed at the service fails its dependants, with a reason naming it (failWithDependants,
 * through mergeStep), and the other steps go on. The item ends `downloaded` (then reported) when every
 * step is, or `failed` with the first failed step's reason when any step failed (nextOrEnd).
 *
 * Pure functions: no I/O.
 */
import type { ImageRef } from '../spec/index.ts';
import type { Item, ItemFailure, StageName, StepRecord } from './item.ts';

/** Prefix of the placeholder of a parent step's output in a planned request (`$step:<name>`). */
export const STEP_REF_PREFIX = '$step:';

/**
 * The placeholder of step `name`'s output: by `generation_id` where the service chains by id (an
 * image_edit source from an image step, a video_edit / video_reframe source or an extend frame from a
 * video step), else by `url` (the parent's fresh output URL, filled in right before the create).
 */
export function stepPlaceholder(name: string, channel: 'generation_id' | 'url'): ImageRef {
  return channel === 'generation_id'
    ? { generation_id: `${STEP_REF_PREFIX}${name}` }
    : { url: `${STEP_REF_PREFIX}${name}` };
}

/**
 * What a parent step's output placeholder carries, in words (a dry run's requests, and the requests
 * result.json records): `<the output of step 'stylize', by generation id>`, `<the output of step
 * 'stylize', by its output URL>`, and for a by-URL output already sent, which generation's first output
 * URL travelled (the presigned URL itself is not recorded: anyone holding it can fetch the output).
 */
export function stepOutputWords(
  name: string,
  channel: 'generation_id' | 'url',
  sentFrom: string | null = null,
): string {
  if (channel === 'generation_id') return `<the output of step '${name}', by generation id>`;
  const sent = sentFrom
    ? `: the first output URL of generation ${sentFrom}, presigned, read right before the create`
    : '';
  return `<the output of step '${name}', by its output URL${sent}>`;
}

/**
 * A step's request as recorded (result.json): a by-URL parent output said in words (stepOutputWords,
 * naming the generation whose output URL travelled once the step's create was sent), a by-id parent
 * output not filled in yet (the step never ran) too; a filled generation id is kept as it was sent.
 */
export function recordedStepRequest(
  step: Pick<StepRecord, 'request' | 'requestId' | 'generationId'>,
  steps: readonly Pick<StepRecord, 'name' | 'generationId'>[],
): Record<string, unknown> {
  const sent = step.requestId !== null || step.generationId !== null;
  const byUrl = fillStepOutputs(step.request, 'url', (name) =>
    stepOutputWords(name, 'url', sent ? (steps.find((s) => s.name === name)?.generationId ?? null) : null),
  );
  return fillStepOutputs(byUrl, 'generation_id', (name) => stepOutputWords(name, 'generation_id'));
}

/** The step name of a placeholder value (`$step:<name>`), or null. */
export function stepOfPlaceholder(value: unknown): string | null {
  return typeof value === 'string' && value.startsWith(STEP_REF_PREFIX)
    ? value.slice(STEP_REF_PREFIX.length)
    : null;
}

/** True when the item is a chain rule's (its steps name their parents). */
export function isChain(item: Pick<Item, 'steps'>): boolean {
  return item.steps.some((s) => s.after !== undefined);
}

/**
 * The stages each step goes through at the service (a chain's step in a lane of its own): a failure
 * there is the step's, not the input's (a local stage fails the whole input).
 */
export const STEP_STAGES: ReadonlySet<StageName> = new Set(['upload', 'submit', 'wait', 'download']);

/**
 * The first step that can run now: neither downloaded nor failed, every parent downloaded (planned, or
 * resumed from the journal where an earlier run left it); undefined when none can.
 */
export function runnableStep(steps: readonly StepRecord[]): StepRecord | undefined {
  const done = new Set(steps.filter((s) => s.state === 'downloaded').map((s) => s.name));
  return steps.find(
    (s) => s.state !== 'downloaded' && s.state !== 'failed' && (s.after ?? []).every((p) => done.has(p)),
  );
}

/** The item state a chain item takes at a step in `state` (a planned step starts with its upload). */
function itemStateAt(state: StepRecord['state']): 'checked' | 'uploaded' | 'submitted' {
  if (state === 'uploaded') return 'uploaded';
  if (state === 'submitted' || state === 'completed') return 'submitted';
  return 'checked';
}

/** Every step that depends on `name`, directly or not, in the steps' order. */
export function dependantsOf(steps: readonly StepRecord[], name: string): string[] {
  const out = new Set<string>([name]);
  for (const s of steps) if ((s.after ?? []).some((p) => out.has(p))) out.add(s.name);
  out.delete(name);
  return [...out];
}

/** Reason of a step not run because its parent `name` failed. */
export function parentFailedReason(name: string): string {
  return `not run: step '${name}' failed`;
}

/** A chain step's own moments, told in progress (PipelineEvent `step_event`). */
export type StepMoment = 'started' | 'done' | 'failed';

/** The moment a lane's step reaches in `state` (its generation created, its step done or failed). */
export const STEP_MOMENTS: Partial<Record<Item['state'], StepMoment>> = {
  submitted: 'started',
  downloaded: 'done',
  failed: 'failed',
};

/**
 * A step's moment in words: `step 'animate' started`, `step 'animate' done`, `step 'animate' failed:
 * <why>`.
 */
export function stepMomentWords(name: string, moment: StepMoment, reason?: string | null): string {
  return moment === 'failed'
    ? stepFailedReason({ name, reason: reason ?? null })
    : `step '${name}' ${moment}`;
}

/** Reason of a chain item with a failed step: the step named, then its own reason. */
export function stepFailedReason(step: Pick<StepRecord, 'name' | 'reason'>): string {
  return `step '${step.name}' failed: ${step.reason ?? 'failed'}`;
}

/**
 * The steps with `name` failed for `reason` and every dependant failed as not run (a dependant keeps
 * `failure`, so a later run retries them together when the parent's failure may pass).
 */
export function failWithDependants(
  steps: readonly StepRecord[],
  name: string,
  reason: string,
  failure: ItemFailure | null,
  failedAt: StageName | null,
): StepRecord[] {
  const dependants = new Set(dependantsOf(steps, name));
  return steps.map((s) => {
    if (s.name === name) return { ...s, state: 'failed', reason, failure, failedAt };
    if (dependants.has(s.name) && s.state !== 'failed') {
      return { ...s, state: 'failed', reason: parentFailedReason(name), failure, failedAt: null };
    }
    return s;
  });
}

/**
 * The chain item at its next step, or at its end: `checked` at the next step that can run; else
 * `downloaded` when every step is, or `failed` with the first failed step's reason (Item.step naming
 * that step, so the crash policy and reports read it).
 */
export function nextOrEnd(item: Item): Item {
  const next = runnableStep(item.steps);
  if (next) {
    const state = itemStateAt(next.state);
    const steps =
      next.state === 'completed'
        ? item.steps.map((s) => (s === next ? { ...s, state: 'submitted' as const } : s))
        : item.steps;
    return { ...item, steps, state, step: next.name, reason: null, failedAt: null, failure: null };
  }
  const failed =
    item.steps.find((s) => s.state === 'failed' && s.failedAt !== null) ??
    item.steps.find((s) => s.state === 'failed');
  if (!failed) {
    const last = item.steps.at(-1)?.name ?? item.step;
    return { ...item, state: 'downloaded', step: last, reason: null, failedAt: null, failure: null };
  }
  return {
    ...item,
    state: 'failed',
    step: failed.name,
    reason: stepFailedReason(failed),
    failedAt: failed.failedAt ?? 'submit',
    failure: failed.failure ?? null,
  };
}

/**
 * A copy of `request` with each parent-output placeholder of `channel` replaced by what `fill` gives
 * for the parent's name (undefined: kept as it is).
 *
 * @example fillStepOutputs(req, 'generation_id', (name) => byName.get(name)?.generationId ?? undefined)
 */
export function fillStepOutputs(
  request: Record<string, unknown>,
  channel: 'generation_id' | 'url',
  fill: (step: string) => string | undefined,
): Record<string, unknown> {
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v !== 'object' || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      const step = k === channel ? stepOfPlaceholder(x) : null;
      const value = step !== null ? fill(step) : undefined;
      out[k] = value !== undefined ? value : walk(x);
    }
    return out;
  };
  return walk(request) as Record<string, unknown>;
}

/** The parent steps whose output `request` still takes by `channel` placeholder. */
export function stepOutputsIn(request: Record<string, unknown>, channel: 'generation_id' | 'url'): string[] {
  const names = new Set<string>();
  fillStepOutputs(request, channel, (step) => {
    names.add(step);
    return undefined;
  });
  return [...names];
}

/** Every step that can run now (see runnableStep), parents first. */
export function runnableSteps(steps: readonly StepRecord[]): StepRecord[] {
  const done = new Set(steps.filter((s) => s.state === 'downloaded').map((s) => s.name));
  return steps.filter(
    (s) => s.state !== 'downloaded' && s.state !== 'failed' && (s.after ?? []).every((p) => done.has(p)),
  );
}

/** The item state a lane of a chain item starts its step in (see itemStateAt). */
export function laneStartState(step: StepRecord): 'checked' | 'uploaded' | 'submitted' {
  return itemStateAt(step.state);
}

/**
 * `shared` with step `name` as `from` holds it (a lane's item after a stage), and a step that failed
 * there failing its dependants; the other steps stay as `shared` has them.
 */
export function mergeStep(shared: Item, from: Item, name: string): Item {
  const step = from.steps.find((s) => s.name === name);
  if (!step) return shared;
  let steps = shared.steps.map((s) => (s.name === name ? step : s));
  if (from.state === 'failed' && (step.reason === undefined || step.reason === null)) {
    steps = failWithDependants(steps, name, from.reason ?? 'failed', from.failure ?? null, from.failedAt);
  }
  return { ...shared, steps, timings: from.timings };
}

/**
 * The state a chain item is journaled and announced in while its lane `state` runs beside others: the
 * lane's own, except that a lane's end (its step downloaded, or failed) is not the item's: `completed`
 * and `checked` say the item goes on (the journal's phase stays that of work at the service).
 */
export function laneRecordState(state: Item['state']): Item['state'] {
  if (state === 'downloaded') return 'completed';
  if (state === 'failed') return 'checked';
  return state;
}
