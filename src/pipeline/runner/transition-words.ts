/**
 * What the item driver's step loop tells of a transition (the `item_state` event it records), for every
 * rule: a single request's item and a chain step's lane are told by these same rules.
 */
import { STEP_MOMENTS, type StepMoment, stepMomentWords } from '../chain.ts';
import type { StageName } from '../item.ts';
import { type StageStep, saidOf } from '../stage-list.ts';
import type { Settled } from './step-policy.ts';

/** The stage, reason and step moment of one transition's event. */
export interface Told {
  /** The stage that moved the item; null when none did (it stopped). */
  stage: StageName | null;
  reason: string | null;
  /** A chain step's own moment (PipelineEvent `step_event`), when the transition is one. */
  moment?: StepMoment;
}

/**
 * What the transition `step` made is told as, in this order: a stopped item says why it stopped,
 * whatever stopped it, and no stage moved it; else the policy's words (a resubmission, the journal's
 * decision); else, for the lane of chain step `lane`, the step's own moment (`step 'animate' started`,
 * `… done`, `… failed: <why>`); else the item's reason; else what the stage did when the name of the
 * state it reached would not say it (a prompt file is not "uploaded", see saidOf).
 *
 * @param lane - the chain step whose lane made the transition; null for the item's own
 * @example transitionTold(stepFor('completed')!, { item: downloadedInLane }, 'animate') // { stage: 'download', reason: "step 'animate' done", moment: 'done' }
 */
export function transitionTold(step: StageStep, settled: Settled, lane: string | null): Told {
  const { item } = settled;
  if (item.state === 'stopped') return { stage: null, reason: item.reason };
  if (settled.reason !== undefined) return { stage: step.name, reason: settled.reason };
  const moment = lane === null ? undefined : STEP_MOMENTS[item.state];
  if (lane !== null && moment !== undefined) {
    return { stage: step.name, reason: stepMomentWords(lane, moment, item.reason), moment };
  }
  return { stage: step.name, reason: item.reason ?? saidOf(step, item) };
}
