/**
 * What a run does with a chain item the journal holds with work at the service (resume-decision.ts
 * hands it here once its key matches): the single-step table, applied to each step.
 *
 * | step                                         | becomes                                               |
 * |----------------------------------------------|-------------------------------------------------------|
 * | downloaded, its outputs on disk               | kept: never paid again                                |
 * | downloaded, an output missing or cut short    | `submitted`: polled for fresh URLs, downloaded again  |
 * | submitted / completed (a generation exists)   | `submitted`: polled, never submitted again            |
 * | create sent, no generation id (unknown)       | the crash policy: failed (default), its dependants    |
 * |                                              |   with it; or `uploaded` with --resubmit-unknown      |
 * | uploaded, recent                              | `uploaded`: submitted with its upload                 |
 * | uploaded, too old                             | planned again                                          |
 * | failed retryably (or --retry-failed)          | planned again (its dependants too), attempt kept      |
 * | failed, the file's own                        | kept failed (its dependants too)                       |
 * | planned                                      | planned                                                |
 *
 * Then the item continues at the first step that can run (chain.ts nextOrEnd), or is done.
 */
import { nextOrEnd, parentFailedReason } from '../chain.ts';
import type { Item, ItemAttempt, StepRecord } from '../item.ts';
import { lostAnswerReason } from '../outcome-texts.ts';
import type { JournalRow } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import type { StoreDecision } from './store.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/** What a chain decision reads (resume-decision.ts's DecideInput). */
export interface ChainDecideInput {
  row: Pick<JournalRow, 'phase'> | null;
  /** The file as this run planned it (each step's request as planned). */
  fresh: Item;
  resubmitUnknown: boolean;
  retryFailed: boolean;
  /** The outputs check of the row, when its phase is downloaded or reported. */
  outputs: OutputCheck | null;
}

/** A decision that keeps the row (resume-decision.ts's RowDecision). */
type RowDecision = StoreDecision & { supersede: false };

/** A step as planned anew: its request from this run's plan (placeholders, nothing sent). */
function replanned(step: StepRecord, fresh: Item, earlierAttempts?: ItemAttempt[]): StepRecord {
  const planned = fresh.steps.find((s) => s.name === step.name) ?? step;
  return {
    ...planned,
    state: 'planned',
    ...(earlierAttempts ? { earlierAttempts } : {}),
  };
}

/** The step's attempts with its last one added. */
function attemptsWithLast(step: StepRecord): ItemAttempt[] | undefined {
  if (!step.requestId && !step.generationId) return step.earlierAttempts;
  return [
    ...(step.earlierAttempts ?? []),
    {
      generation_id: step.generationId,
      request_id: step.requestId,
      failure_code: step.generation?.failure_code ?? null,
      failure_reason: step.generation?.failure_reason ?? step.reason ?? null,
    },
  ];
}

/** True when the step's create may have reached the service with its answer never recorded. */
function outcomeUnknown(step: StepRecord): boolean {
  if (step.generationId || !step.requestId) return false;
  if (step.state !== 'failed') return step.state === 'uploaded' || step.state === 'submitted';
  const id = step.requestId;
  return step.reason === lostAnswerReason(id) || step.reason === JOURNAL_TEXTS.unknownOutcome(id);
}

interface Judged {
  step: StepRecord;
  /** What happened to it, for the decision's reason (null: nothing to say). */
  note: string | null;
  retried?: boolean;
  /** Failed by the crash policy in this decision. */
  policyFailed?: boolean;
}

function judgeStep(step: StepRecord, input: ChainDecideInput, uploadRecent: boolean): Judged {
  const named = (text: string) => `step '${step.name}': ${text}`;
  const problems = input.outputs?.problems ?? [];
  if (step.state === 'downloaded') {
    const bad = step.outputs.some((o) => problems.some((p) => p.includes(o)));
    if (!bad || !step.generationId) return { step, note: null };
    const again = {
      ...step,
      state: 'submitted' as const,
      generation: null,
      outputs: [],
      composite: null,
      layers: [],
    };
    return { step: again, note: named(JOURNAL_TEXTS.resumeRedownload(step.generationId, problems)) };
  }
  if (outcomeUnknown(step)) {
    const requestId = step.requestId!;
    if (!input.resubmitUnknown) {
      const reason = JOURNAL_TEXTS.unknownOutcome(requestId);
      const failed = {
        ...step,
        state: 'failed' as const,
        reason,
        failedAt: 'submit' as const,
        failure: null,
      };
      return { step: failed, note: named(reason), policyFailed: true };
    }
    const earlierAttempts = [
      ...(step.earlierAttempts ?? []),
      {
        generation_id: null,
        request_id: requestId,
        failure_code: null,
        failure_reason: JOURNAL_TEXTS.resubmittedUnknown,
      },
    ];
    const note = named(JOURNAL_TEXTS.resubmitUnknown(requestId));
    if (!uploadRecent) return { step: replanned(step, input.fresh, earlierAttempts), note };
    return {
      step: {
        ...step,
        state: 'uploaded',
        requestId: null,
        generationId: null,
        generation: null,
        earlierAttempts,
      },
      note,
    };
  }
  if (
    step.generationId &&
    (step.state === 'submitted' || step.state === 'completed' || step.state === 'failed')
  ) {
    // A failed download of a finished generation is downloaded again; a failed generation is judged below.
    if (step.state !== 'failed' || step.failedAt === 'download') {
      const again = {
        ...step,
        state: 'submitted' as const,
        generation: null,
        reason: null,
        failedAt: null,
        failure: null,
      };
      return { step: again, note: named(JOURNAL_TEXTS.resumeSubmitted(step.generationId)) };
    }
  }
  if (step.state === 'uploaded') {
    if (uploadRecent) return { step: { ...step, requestId: null, generationId: null }, note: null };
    return { step: replanned(step, input.fresh), note: named(JOURNAL_TEXTS.uploadTooOld) };
  }
  if (step.state === 'failed' && step.failedAt !== null && step.failedAt !== undefined) {
    const retryable = step.failure?.retryable === true;
    if (!retryable && !input.retryFailed) return { step, note: null };
    const note = named(JOURNAL_TEXTS.retried(step.failure?.kind ?? null, retryable ? 'retryable' : 'flag'));
    return { step: replanned(step, input.fresh, attemptsWithLast(step)), note, retried: true };
  }
  return { step, note: null };
}

/**
 * Decides what to do with a chain item that has work at the service (see the module comment). Pure.
 *
 * @param stored - the journaled item, brought up to date with the file as found now
 */
export function decideChain(input: ChainDecideInput, stored: Item, uploadRecent: boolean): RowDecision {
  const judged = stored.steps.map((s) => judgeStep(s, input, uploadRecent));
  let steps = judged.map((j) => j.step);
  // A step planned again takes its dependants that failed as not run with it; a step failed now by the
  // crash policy takes its dependants down.
  for (const j of judged) {
    const name = j.step.name;
    if (j.step.state === 'planned' || j.step.state === 'uploaded' || j.step.state === 'submitted') {
      steps = steps.map((s) =>
        s.state === 'failed' && s.reason === parentFailedReason(name) ? replanned(s, input.fresh) : s,
      );
    }
    if (j.policyFailed) {
      steps = steps.map((s) =>
        (s.after ?? []).includes(name) && s.state !== 'failed'
          ? { ...s, state: 'failed', reason: parentFailedReason(name), failure: null, failedAt: null }
          : s,
      );
    }
  }
  const notes = judged.map((j) => j.note).filter((n): n is string => n !== null);
  const retried = judged.some((j) => j.retried);
  const base: Item = { ...stored, steps, reason: null, failedAt: null, failure: null };
  const next = nextOrEnd(base);
  const reason = notes.length > 0 ? notes.join('; ') : null;
  if (next.state === 'downloaded') {
    const check = input.outputs;
    const reported = input.row?.phase === 'reported' && stored.state === 'reported';
    if (reported && check?.complete && check.resultPresent) {
      return { action: 'done', item: stored, reason: JOURNAL_TEXTS.done, supersede: false };
    }
    return { action: 'resume', item: next, reason: reason ?? JOURNAL_TEXTS.resumeReport, supersede: false };
  }
  if (next.state === 'failed') {
    const policy = judged.some((j) => j.policyFailed);
    const action = policy ? 'fail' : 'done';
    const why = reason ?? JOURNAL_TEXTS.failedNotRetried(next.failure?.kind ?? null);
    return { action, item: next, reason: why, supersede: false };
  }
  return {
    action: 'resume',
    item: next,
    reason: reason ?? `${JOURNAL_TEXTS.continued} (at step '${next.step}')`,
    supersede: false,
    ...(retried ? { retried: true } : {}),
  };
}
