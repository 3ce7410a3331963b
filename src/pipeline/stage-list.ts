/**
 * THE order of the pipeline: the one place it is written. Each step names the stage, the item state
 * it takes (one state per stage, so the next step of any item — fresh, or resumed from a journal — is
 * found from its state alone), the runner pool it runs in, and whether it still runs once the batch
 * is stopping (work already at the service is finished; nothing new is started), the runner's
 * policy particular to the stage (runner/step-policy.ts), and what progress says of an item the stage
 * advanced when the name of the state it reached would not be true.
 */
import { ITEM_STATES, type Item, type ItemState, type StageName } from './item.ts';
import type { RunStage } from './run-context.ts';
import {
  CHECK_POLICY,
  PLAN_POLICY,
  type StepPolicy,
  SUBMIT_POLICY,
  WAIT_POLICY,
} from './runner/step-policy.ts';
import type { Stage } from './stage.ts';
import { check } from './stages/check.ts';
import { download } from './stages/download.ts';
import { plan } from './stages/plan.ts';
import { report } from './stages/report.ts';
import { sniff } from './stages/sniff.ts';
import { submit } from './stages/submit.ts';
import { upload } from './stages/upload.ts';
import { wait } from './stages/wait.ts';
import { uploadedWords } from './upload-words.ts';

/**
 * Where a step runs: `local` (disk and CPU: sniff, plan, check), `upload`, `download` and `report`
 * pools of bounded size; `jobs` (submit: the --concurrency slots, held until the job ends); `poll`
 * (wait: the shared poll loop, no pool).
 */
export type PoolName = 'local' | 'upload' | 'jobs' | 'poll' | 'download' | 'report';

/** One step of the pipeline. */
export interface StageStep {
  name: StageName;
  /** The state the stage takes (and advances by one). */
  takes: ItemState;
  run: RunStage;
  pool: PoolName;
  /** Runs while the batch is stopping: true for work the service already has. */
  whileStopping: boolean;
  /** What the runner does around this stage besides running it (admission, resubmission, ...). */
  policy?: StepPolicy;
  /**
   * The words progress gives an item this stage advanced (the reason of its `item_state` event), when
   * the name of the state it reached would say something untrue: a prompt file reaches `uploaded` with
   * nothing uploaded. Null, or absent: the state's name says it.
   */
  says?: (item: Item) => string | null;
}

/** A step that runs on the machine alone: it reads only a StageContext. */
export type LocalStep = StageStep & { run: Stage; pool: 'local' };

/**
 * The steps that run on the machine alone (sniff, plan, check), in order: the pipeline's first steps
 * (STAGES begins with them). A dry run runs them without a client and stops where the first step that
 * talks to the service (upload) would begin.
 */
export const LOCAL_STEPS: readonly LocalStep[] = [
  { name: 'sniff', takes: 'discovered', run: sniff, pool: 'local', whileStopping: false },
  { name: 'plan', takes: 'sniffed', run: plan, pool: 'local', whileStopping: false, policy: PLAN_POLICY },
  { name: 'check', takes: 'planned', run: check, pool: 'local', whileStopping: false, policy: CHECK_POLICY },
];

/** The pipeline, in order. */
export const STAGES: readonly StageStep[] = [
  ...LOCAL_STEPS,
  {
    name: 'upload',
    takes: 'checked',
    run: upload,
    pool: 'upload',
    whileStopping: false,
    says: uploadedWords,
  },
  {
    name: 'submit',
    takes: 'uploaded',
    run: submit,
    pool: 'jobs',
    whileStopping: false,
    policy: SUBMIT_POLICY,
  },
  { name: 'wait', takes: 'submitted', run: wait, pool: 'poll', whileStopping: true, policy: WAIT_POLICY },
  { name: 'download', takes: 'completed', run: download, pool: 'download', whileStopping: true },
  { name: 'report', takes: 'downloaded', run: report, pool: 'report', whileStopping: true },
];

const BY_STATE = new Map<ItemState, StageStep>(STAGES.map((s) => [s.takes, s]));

/**
 * What progress says of `item` after `step` ran on it (StageStep.says): the step's words when it
 * advanced the item (one state on from the one it takes), null for any other outcome and for a step
 * whose state's name says it.
 *
 * @example saidOf(stepFor('checked')!, promptItem) // 'prompt ready: the text goes in the request'
 */
export function saidOf(step: StageStep, item: Item): string | null {
  const advanced = ITEM_STATES[ITEM_STATES.indexOf(step.takes) + 1];
  return step.says && item.state === advanced ? step.says(item) : null;
}

/**
 * The stage whose step brought `item` to its state and what progress says of that (saidOf), for an
 * item seen only in that state — a worker's, read from the store by the run that follows it.
 *
 * @example reachedBy(uploadedPromptItem) // { stage: 'upload', said: 'prompt ready: the text goes in the request' }
 */
export function reachedBy(item: Item): { stage: StageName | null; said: string | null } {
  const before = ITEM_STATES[ITEM_STATES.indexOf(item.state) - 1];
  const step = before ? stepFor(before) : null;
  return { stage: step?.name ?? null, said: step ? saidOf(step, item) : null };
}

/**
 * The step that takes an item in `state`, or null when the state is final (reported, skipped,
 * failed, stopped).
 *
 * @example stepFor('checked')?.name // 'upload'
 */
export function stepFor(state: ItemState): StageStep | null {
  return BY_STATE.get(state) ?? null;
}
