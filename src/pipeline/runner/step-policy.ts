/**
 * Stage-specific policy of the runner, kept with the stage's entry in the stage table (stage-list.ts)
 * rather than as tests of a stage's name in the driver:
 * - plan: admission — each planned item goes to the journal (`admit`) before anything is checked or
 *   sent, and comes back fresh, resumed or done; without a journal it gets its content hash here;
 * - check: a reason to fail an item instead of checking it (watch: a file that never became complete);
 * - submit: a create the service refused is recorded as never sent;
 * - wait: a generation that failed with a retryable failure_code is resubmitted, after a backoff.
 */
import { CreateNotSentError, type GenpipeClient, GenpipeError, LocalWriteError } from '../../client/index.ts';
import { isRetryableFailureCode } from '../failure-class.ts';
import { currentStep, type Item, type ItemJournalNote, type StageName, stepOf, withStep } from '../item.ts';
import { itemPlace } from '../report/index.ts';
import { reuseOutputs } from '../reuse-outputs.ts';
import { isAbort } from '../runner-errors.ts';
import { failItem } from '../stage.ts';
import { sha256File } from '../store/content-hash.ts';
import { JOURNAL_TEXTS, SAME_CONTENT_TEXTS } from '../store/texts.ts';
import { uploadsGone } from '../uploads-gone.ts';
import type { AdmitDecision, ResolvedRun, RunOptions } from './options.ts';
import { sweepItemScratch } from './scratch-sweep.ts';

/** What a policy may use of the running batch. */
export interface StepEnv {
  readonly run: ResolvedRun;
  readonly client: GenpipeClient;
  /** True once the batch is stopping (no new work). */
  readonly stopped: boolean;
  /** Cancels in-flight work. */
  readonly signal: AbortSignal;
  /** Aborts once the batch stops taking new work. */
  readonly stopping: AbortSignal;
  /** Runs `fn` in the local pool. */
  local<T>(fn: () => Promise<T>): Promise<T>;
  /** The item ended not processed, with the batch's stop reason. */
  stoppedItem(item: Item): Item;
  /** The journal failed: the batch stops. */
  journalFailed(err: unknown): void;
  /** Journals a fact (the runner's persist, failures stop the batch). */
  persist(item: Item): Promise<void>;
  /** Tells the item as it stands at `stage`, with `reason` (an event, as a transition's): nothing kept or journaled. */
  tell(item: Item, stage: StageName, reason: string): void;
}

/** What one drive of an item counts across its steps. */
export interface DriveState {
  /**
   * Resubmissions of the item's generation in this run, by step name (--retries counts per run, for
   * each step of a chain).
   */
  resubmits: Map<string, number>;
}

/** What an item continues with after a step. */
export interface Settled {
  item: Item;
  /** Said in the transition's event instead of the item's reason. */
  reason?: string | null;
  /** Waited (cancelled by a stop) after the transition is recorded, before the next step. */
  pauseMs?: number;
}

/** A stage's policy (all optional). */
export interface StepPolicy {
  /** Before the stage runs: the item ended here instead (null: run the stage). */
  before?(item: Item, env: StepEnv): Item | null;
  /**
   * When the stage threw: what to record first (the stage's item as it began); the item it journaled,
   * which the stopped or failed item is made from (undefined: what the stage journaled last).
   */
  onThrow?(begun: Item, err: unknown, env: StepEnv): Promise<Item | undefined>;
  /** After the stage: what the item continues with (undefined: the stage's item as it is). */
  after?(next: Item, env: StepEnv, drive: DriveState): Promise<Settled | undefined>;
}

/**
 * The item failed at check without being checked, when `failAtCheck` gives a reason (watch: a file
 * that never became complete); null to check it. The runner's check policy, and a dry run's.
 */
export function refusedAtCheck(item: Item, failAtCheck: RunOptions['failAtCheck']): Item | null {
  const why = failAtCheck?.(item) ?? null;
  return why === null ? null : failItem(item, 'check', why, { media: { bytes: item.size } });
}

/** check: watch's reason to fail a file that never became complete, instead of checking it. */
export const CHECK_POLICY: StepPolicy = {
  before: (item, env) => refusedAtCheck(item, env.run.options.failAtCheck),
};

/**
 * submit: a create that escaped the stage was answered by the service with a refusal that stops the
 * batch (a 503 that outlasted the retries, 401, 402, 403), or was cut by the stop before it was sent
 * (CreateNotSentError: held by the pacer or governor, or between retries): nothing was queued, so its
 * request id was never used. Recorded so, the next run submits the file instead of taking the create
 * for one of unknown outcome. A connection failure, a timeout or a create cut on the wire may have
 * reached the service: not this.
 */
export const SUBMIT_POLICY: StepPolicy = {
  async onThrow(begun, err, env) {
    if (err instanceof CreateNotSentError || (err instanceof GenpipeError && err.status !== null)) {
      await env.persist(begun).catch(() => undefined);
      return begun;
    }
    return undefined;
  },
};

/** wait: a retryably failed generation goes back to submit, its attempt kept, after a backoff. */
export const WAIT_POLICY: StepPolicy = {
  async after(next, env, drive) {
    const step = currentStep(next);
    const generation = step?.generation;
    const done = drive.resubmits.get(step?.name ?? '') ?? 0;
    if (
      next.state !== 'failed' ||
      env.stopped ||
      generation?.state !== 'failed' ||
      !isRetryableFailureCode(generation.failure_code) ||
      done >= env.run.maxResubmits
    ) {
      return undefined;
    }
    const resubmits = done + 1;
    drive.resubmits.set(step?.name ?? '', resubmits);
    const max = env.run.maxResubmits + 1;
    return {
      item: resubmitted(next),
      reason: `resubmitting after ${next.reason} (attempt ${resubmits + 1} of ${max})`,
      // A stop ends the wait; the item then ends stopped, its resubmission recorded.
      pauseMs: env.client.generations.resubmitDelay(resubmits),
    };
  },
};

/** plan: admission by the journal, or the content hash without one. */
export const PLAN_POLICY: StepPolicy = {
  async after(next, env) {
    if (next.state !== 'planned') return undefined;
    if (!env.run.options.admit) return { item: await hashed(next, env) };
    return admitted(next, env);
  },
};

/** The item sent back to submit after a retryable generation failure, its attempt kept. */
function resubmitted(item: Item): Item {
  const step = stepOf(item);
  const again = withStep(item, {
    state: 'uploaded',
    earlierAttempts: [
      ...(step.earlierAttempts ?? []),
      {
        generation_id: step.generationId,
        request_id: step.requestId,
        failure_code: step.generation?.failure_code ?? null,
        failure_reason: step.generation?.failure_reason ?? null,
      },
    ],
    generationId: null,
    requestId: null,
    generation: null,
  });
  return { ...again, state: 'uploaded', reason: null, failedAt: null, failure: null };
}

/**
 * Without a journal: the planned item with its content hash, taken where admit would take it (before
 * the check), in the local pool.
 */
async function hashed(item: Item, env: StepEnv): Promise<Item> {
  try {
    return { ...item, contentHash: await env.local(() => sha256File(item.absPath, env.signal)) };
  } catch (err) {
    if (isAbort(err, env.signal) || env.signal.aborted) return env.stoppedItem(item);
    return failItem(item, 'plan', 'file not found or not readable');
  }
}

/** A decision the runner goes on with (any but `wait`). */
type Decided = AdmitDecision & { action: Exclude<ItemJournalNote['action'], 'wait'> };

/**
 * `admit`'s decision for a planned item, in the local pool; a `wait` (another input with the same
 * content is in flight) is waited out of the pool, and admit asked again. An Item instead when the
 * item ended here (stopped, failed at plan).
 */
async function decided(item: Item, env: StepEnv): Promise<Decided | Item> {
  const admit = env.run.options.admit;
  let waitedOn: number | undefined;
  for (;;) {
    if (!admit || env.stopped) return env.stoppedItem(item);
    let decision: AdmitDecision;
    try {
      decision = await env.local(() => admit(item, env.signal, waitedOn));
    } catch (err) {
      if (isAbort(err, env.signal) || env.signal.aborted) return env.stoppedItem(item);
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
        return failItem(item, 'plan', 'file not found or not readable');
      }
      env.journalFailed(err);
      return env.stoppedItem(item);
    }
    if (decision.action !== 'wait') return decision as Decided;
    // Said once as it starts waiting for that twin (a -v line, an event), not at each look again.
    if (decision.sameContent?.id !== waitedOn && decision.reason) env.tell(item, 'plan', decision.reason);
    await decision.settled?.(env.stopping);
    waitedOn = decision.sameContent?.id;
  }
}

/**
 * A `reuse` decision with the other input's outputs linked into the item's place (at `downloaded`);
 * a file system that refuses them fails the item at plan, a local failure the next run tries again.
 * A chain's steps taken (SameContent.steps) are linked so, and the item goes on with its other steps:
 * continued, not counted as another file's work.
 */
async function reused(decision: Decided, env: StepEnv): Promise<Decided> {
  const from = decision.sameContent;
  if (decision.action !== 'reuse' || !from) return decision;
  try {
    const item = await env.local(() => reuseOutputs(env.run.outDir, decision.item, from));
    return from.steps ? withStepsTaken(decision, item) : { ...decision, item };
  } catch (err) {
    const why = LocalWriteError.from(err)?.message ?? (err instanceof Error ? err.message : String(err));
    const failed = failItem(decision.item, 'plan', SAME_CONTENT_TEXTS.linkFailed(from.input, why));
    return { ...decision, item: failed, reason: failed.reason };
  }
}

/**
 * A `reuse` of a chain's steps (SameContent.steps) as the runner goes on with it, `item` holding them:
 * the file is sent (its other steps), as new work — processed again after its recipe changed, or a
 * copy whose taken steps count as the same content's (the journal note's sameAs).
 */
export function withStepsTaken<D extends AdmitDecision>(decision: D, item: Item): D {
  const { sameContent, ...rest } = decision;
  const copy = sameContent && sameContent.input !== decision.item.input ? { sameContent } : {};
  return { ...rest, ...copy, action: 'fresh', item } as D;
}

/** A planned item through `admit` (the journal), in the local pool: the item to continue with. */
async function admitted(item: Item, env: StepEnv): Promise<Settled> {
  const got = await decided(item, env);
  if (!('action' in got)) return { item: got, reason: null };
  let decision = got;
  // The key's content hash, which a decision turned fresh by checkedUploads would drop.
  const contentHash = decision.item.contentHash;
  decision = await reused(await checkedUploads(item, decision, env), env);
  const note: ItemJournalNote = {
    action: decision.action,
    reason: decision.reason,
    ...(decision.retried ? { retried: true } : {}),
    ...(decision.nothingSent ? { nothingSent: true } : {}),
    ...(decision.sameContent ? { sameAs: decision.sameContent.input } : {}),
  };
  if (decision.action !== 'fresh') {
    await sweepItemScratch(env.run.outDir, itemPlace(decision.item)).catch(() => 0);
  }
  // A file another's outputs stood for says so as it ends (the driver's record), not twice.
  const saidAtEnd = decision.action === 'reuse' && decision.item.state !== 'failed';
  return {
    item: { ...decision.item, ...(contentHash !== undefined ? { contentHash } : {}), journal: note },
    reason: saidAtEnd ? null : (decision.reason ?? decision.item.reason),
  };
}

/**
 * A decision to resume at `uploaded` turned fresh when an upload it would submit with is no longer at
 * the service (uploadsGone); an error of the check leaves the decision to submit.
 */
async function checkedUploads(planned: Item, decision: Decided, env: StepEnv): Promise<Decided> {
  if (decision.action !== 'resume' || decision.item.state !== 'uploaded') return decision;
  let gone: string[];
  try {
    gone = await uploadsGone(decision.item, env.client, env.signal);
  } catch {
    return decision;
  }
  if (gone.length === 0) return decision;
  const earlier = currentStep(decision.item)?.earlierAttempts;
  return {
    ...decision,
    action: 'fresh',
    item: earlier ? withStep(planned, { earlierAttempts: earlier }) : planned,
    reason: decision.reason ? `${decision.reason}; ${JOURNAL_TEXTS.uploadGone}` : JOURNAL_TEXTS.uploadGone,
  };
}
