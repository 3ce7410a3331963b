/**
 * THE order of the pipeline: the one place it is written. Each step names the stage, the item state
 * it takes (one state per stage, so the next step of any item — fresh, or resumed from a journal — is
 * found from its state alone), the runner pool it runs in, and whether it still runs once the batch
 * is stopping (work already at the service is finished; nothing new is started), and the runner's
 * policy particular to the stage (runner/step-policy.ts).
 */
import type { ItemState, StageName } from './item.ts';
import type { RunStage } from './run-context.ts';
import {
  CHECK_POLICY,
  PLAN_POLICY,
  type StepPolicy,
  SUBMIT_POLICY,
  WAIT_POLICY,
} from './runner/step-policy.ts';
import { check } from './stages/check.ts';
import { download } from './stages/download.ts';
import { plan } from './stages/plan.ts';
import { report } from './stages/report.ts';
import { sniff } from './stages/sniff.ts';
import { submit } from './stages/submit.ts';
import { upload } from './stages/upload.ts';
import { wait } from './stages/wait.ts';

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
}

/** The pipeline, in order. */
export const STAGES: readonly StageStep[] = [
  { name: 'sniff', takes: 'discovered', run: sniff, pool: 'local', whileStopping: false },
  { name: 'plan', takes: 'sniffed', run: plan, pool: 'local', whileStopping: false, policy: PLAN_POLICY },
  { name: 'check', takes: 'planned', run: check, pool: 'local', whileStopping: false, policy: CHECK_POLICY },
  { name: 'upload', takes: 'checked', run: upload, pool: 'upload', whileStopping: false },
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
 * The step that takes an item in `state`, or null when the state is final (reported, skipped,
 * failed, stopped).
 *
 * @example stepFor('checked')?.name // 'upload'
 */
export function stepFor(state: ItemState): StageStep | null {
  return BY_STATE.get(state) ?? null;
}
