/**
 * What a run does with a discovered, planned file given its journal row: the pure decision behind
 * Journal.plan. One table, read top to bottom:
 *
 * | row                                       | decision                                                  |
 * |-------------------------------------------|-----------------------------------------------------------|
 * | none                                      | fresh                                                     |
 * | any, with --force                         | fresh (new row; the old one is kept as history)           |
 * | content hash differs                      | fresh (new row)                                           |
 * | recipe hash differs                       | fresh (new row)                                           |
 * | local, failed or skipped by a local stage | fresh (same row): checked again                           |
 * | local, an earlier run stopped or died     | resume from the start (same row): `continued`             |
 * |   before it was finished                  |                                                           |
 * | uploaded                                  | resume at `uploaded` (submit), if the upload is recent    |
 * | submitting (outcome unknown)              | the crash policy: fail (default; action `fail`) or resubmit |
 * | submitted                                 | resume at `submitted`: poll, never submit again           |
 * | downloaded, outputs complete              | resume at `downloaded` (write result.json)                |
 * | reported, outputs and result.json present | done                                                      |
 * | reported, result.json missing             | resume at `downloaded`                                    |
 * | downloaded/reported, outputs incomplete   | resume at `submitted`: poll for fresh URLs, download again |
 * | failed (at the service), retryable        | retry: resume at `uploaded` (a new create), the failed    |
 * |   failure, or any with --retry-failed     |   attempt kept in earlierAttempts; fresh when it failed   |
 * |                                           |   at upload or the upload is too old                      |
 * | failed (at the service), the file's own   | done, the reason saying how to retry it                   |
 *
 * Whether a failure is retryable is recorded where the item failed (Item.failure, failure-class.ts);
 * a row saved without it is judged by its generation's failure_code, and is the file's own otherwise.
 * A create whose outcome is unknown is the crash policy's (`submitting`), never retried here.
 */
import { failureOf } from '../failure-class.ts';
import { currentStep, type Item, type ItemAttempt, withStep } from '../item.ts';
import { unknownSubmissionPolicy } from './crash-policy.ts';
import type { JournalKey, JournalRow } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/**
 * - `fresh`: process the file from its current state (the item given to plan), as if never seen;
 * - `resume`: continue with the returned item from its state (the next stage is the one that takes it);
 *   a file an earlier run stopped before anything was sent for it continues from the start;
 * - `done`: nothing to do; the returned item is final (reported, or failed) and goes into the report;
 * - `fail`: the crash policy failed the file in this run (its submission outcome is unknown): the
 *   returned item is final, failed at `submit`, and is a failure of this run, not earlier work.
 */
export type JournalAction = 'fresh' | 'resume' | 'done' | 'fail';

/** The decision for one file. */
export interface JournalDecision {
  action: JournalAction;
  /** The item to continue with (fresh: the one given; resume/done: the journaled one, brought up to date). */
  item: Item;
  /** Why, in plain words (for a progress line); null for a file never seen before. */
  reason: string | null;
  /** The item failed in an earlier run and is tried again (fresh or resume); absent otherwise. */
  retried?: true;
}

/** The decision plus what the journal does with the row. */
export interface RowDecision extends JournalDecision {
  /** Start a new row and keep the old one as history (content or recipe changed, or --force). */
  supersede: boolean;
}

/** What decide reads. */
export interface DecideInput {
  /** The input's active row in this out dir, or null. */
  row: JournalRow | null;
  /** The file as this run found and planned it. */
  fresh: Item;
  key: JournalKey;
  /** --force: redo everything. */
  force: boolean;
  /** --resubmit-unknown: the crash policy's other choice. */
  resubmitUnknown: boolean;
  /** --retry-failed: retry failed items whose failure is the file's own too. */
  retryFailed: boolean;
  /** ms since the epoch. */
  now: number;
  /** Uploads older than this are not reused. */
  uploadReuseMaxAgeMs: number;
  /** The outputs check of the row; needed when the row's phase is downloaded or reported. */
  outputs: OutputCheck | null;
}

/** The journaled item brought up to date with the file as found now (its path may have moved). */
function current(stored: Item, fresh: Item): Item {
  return { ...stored, absPath: fresh.absPath, size: fresh.size, mtimeMs: fresh.mtimeMs };
}

/** The item sent back to wait for its generation, its earlier outputs forgotten. */
function backToSubmitted(item: Item): Item {
  const again = withStep(item, {
    state: 'submitted',
    generation: null,
    outputs: [],
    composite: null,
    layers: [],
  });
  return { ...again, state: 'submitted', reason: null, failedAt: null };
}

/** The attempts of a failed item with its last one added (unchanged when nothing was sent). */
function attemptsOf(item: Item): ItemAttempt[] | undefined {
  const step = currentStep(item);
  if (!step?.requestId && !step?.generationId) return step?.earlierAttempts;
  return [
    ...(step.earlierAttempts ?? []),
    {
      generation_id: step.generationId,
      request_id: step.requestId,
      failure_code: step.generation?.failure_code ?? null,
      failure_reason: step.generation?.failure_reason ?? item.reason,
    },
  ];
}

/** The row's uploads (its own media and the references in its request) are young enough to reuse. */
function uploadIsRecent(row: JournalRow, now: number, maxAgeMs: number): boolean {
  return row.uploadedAt !== null && now - row.uploadedAt <= maxAgeMs;
}

/**
 * Decides what to do with a file (see the module comment's table). Pure.
 *
 * @example decide({ row: null, fresh, key, force: false, resubmitUnknown: false, now, uploadReuseMaxAgeMs, outputs: null })
 * // { action: 'fresh', item: fresh, reason: null, supersede: false }
 */
export function decide(input: DecideInput): RowDecision {
  const { row, fresh, key } = input;
  const freshly = (reason: string | null, supersede: boolean): RowDecision => ({
    action: 'fresh',
    item: fresh,
    reason,
    supersede,
  });
  if (!row) return freshly(null, false);
  if (input.force) return freshly(JOURNAL_TEXTS.forced, true);
  if (row.contentHash !== key.contentHash) return freshly(JOURNAL_TEXTS.contentChanged, true);
  if (row.recipeHash !== key.recipeHash) return freshly(JOURNAL_TEXTS.recipeChanged, true);

  const stored = current(row.item, fresh);
  const resume = (item: Item, reason: string): RowDecision => ({
    action: 'resume',
    item,
    reason,
    supersede: false,
  });
  const done = (item: Item, reason: string): RowDecision => ({
    action: 'done',
    item,
    reason,
    supersede: false,
  });

  switch (row.phase) {
    case 'local':
      // Nothing at the service yet. A local failure or skip is simply checked again (its reason is
      // judged anew); a file the earlier run never finished is continued, which is a resume.
      if (row.item.state === 'failed' || row.item.state === 'skipped') return freshly(null, false);
      return resume(fresh, JOURNAL_TEXTS.continued);
    case 'uploaded': {
      if (!uploadIsRecent(row, input.now, input.uploadReuseMaxAgeMs))
        return freshly(JOURNAL_TEXTS.uploadTooOld, false);
      const again = withStep(stored, { state: 'uploaded', requestId: null, generationId: null });
      return resume(
        { ...again, state: 'uploaded', reason: null, failedAt: null },
        JOURNAL_TEXTS.resumeUploaded,
      );
    }
    case 'submitting': {
      const policy = unknownSubmissionPolicy(
        { item: stored, liveState: row.liveState },
        input.resubmitUnknown,
      );
      if (!policy) return freshly(null, false); // not reachable: the phase says the outcome is unknown
      if (policy.action === 'fail') {
        return { action: 'fail', item: policy.item, reason: policy.reason, supersede: false };
      }
      if (!uploadIsRecent(row, input.now, input.uploadReuseMaxAgeMs)) {
        return {
          ...freshly(`${policy.reason}; ${JOURNAL_TEXTS.uploadTooOld}`, false),
          item: withStep(fresh, { earlierAttempts: currentStep(policy.item)?.earlierAttempts }),
        };
      }
      return resume(policy.item, policy.reason);
    }
    case 'submitted':
      return resume(backToSubmitted(stored), JOURNAL_TEXTS.resumeSubmitted(generationIdOf(stored)));
    case 'downloaded':
    case 'reported': {
      const check = input.outputs;
      if (!check?.complete) {
        const problems = check?.problems ?? ['not checked'];
        return resume(
          backToSubmitted(stored),
          JOURNAL_TEXTS.resumeRedownload(generationIdOf(stored), problems),
        );
      }
      if (row.phase === 'reported' && stored.state === 'reported' && check.resultPresent) {
        return done(stored, JOURNAL_TEXTS.done);
      }
      const again = withStep(stored, { state: 'downloaded' });
      return resume(
        { ...again, state: 'downloaded', reason: null, failedAt: null },
        JOURNAL_TEXTS.resumeReport,
      );
    }
    case 'failed': {
      const failure = failureOf(stored);
      const kind = failure?.kind ?? null;
      if (!failure?.retryable && !input.retryFailed)
        return done(stored, JOURNAL_TEXTS.failedNotRetried(kind));
      const reason = JOURNAL_TEXTS.retried(kind, failure?.retryable ? 'retryable' : 'flag');
      const earlierAttempts = attemptsOf(stored);
      const kept = earlierAttempts ? { earlierAttempts } : {};
      // A failed upload left nothing to reuse; an old one may be gone.
      if (stored.failedAt === 'upload')
        return { ...freshly(reason, false), item: withStep(fresh, kept), retried: true };
      if (!uploadIsRecent(row, input.now, input.uploadReuseMaxAgeMs)) {
        return {
          ...freshly(`${reason}; ${JOURNAL_TEXTS.uploadTooOld}`, false),
          item: withStep(fresh, kept),
          retried: true,
        };
      }
      const again = withStep(stored, {
        ...kept,
        state: 'uploaded',
        requestId: null,
        generationId: null,
        generation: null,
        outputs: [],
        composite: null,
        layers: [],
      });
      return {
        ...resume({ ...again, state: 'uploaded', reason: null, failedAt: null, failure: null }, reason),
        retried: true,
      };
    }
  }
}

/** The generation id of the item's current step, for a text ('?' when none was recorded). */
function generationIdOf(item: Item): string {
  return currentStep(item)?.generationId ?? '?';
}
