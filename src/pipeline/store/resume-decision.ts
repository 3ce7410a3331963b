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
 * | local, an earlier run stopped or died     | resume from the start (same row): `continued`,            |
 * |   before it was finished                  |   nothingSent                                             |
 * | uploaded                                  | resume at `uploaded` (submit), if the upload is recent    |
 * |                                           |   (a prompt file or a base64 image without uploaded       |
 * |                                           |   references: nothing was uploaded, nothing is too old:   |
 * |                                           |   `continued: … submitting`, nothingSent)                 |
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
 *
 * A resume of a row for which nothing was sent to the service (holdsServiceWork: no upload, no create)
 * is marked `nothingSent`: the file is continued, not resumed — the report's journal counts do not call
 * it resumed, as `genpipe status` calls it `not yet submitted`.
 */
import { isChain } from '../chain.ts';
import { failureOf } from '../failure-class.ts';
import { currentStep, type Item, type ItemAttempt, withStep } from '../item.ts';
import { uploadOutcome } from '../upload-words.ts';
import { decideChain } from './chain-decision.ts';
import { unknownSubmissionPolicy } from './crash-policy.ts';
import type { JournalKey, JournalRow } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import type { AdmitAction, StoreDecision } from './store.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/** The actions of a decision (see store/store.ts's AdmitAction). */
export type JournalAction = AdmitAction;

/** The decision for one file (store/store.ts's StoreDecision). */
export type JournalDecision = StoreDecision;

/** True when the item holds anything the service did for it (a save of it may not be dropped). */
export function holdsServiceWork(item: Item): boolean {
  return item.steps.some(
    (s) => !!(s.upload?.fileId || s.requestId || s.generationId || s.outputs.length > 0),
  );
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
  /** The batch deciding (a row it planned itself changed during it, not since the last run). */
  batchId?: number | null;
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

/** The generation id of the item's current step, for a text ('?' when none was recorded). */
function generationIdOf(item: Item): string {
  return currentStep(item)?.generationId ?? '?';
}

/** True when `value` (a request, or part of it) names a file at the service (not a `$…` placeholder). */
function namesServiceFile(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(namesServiceFile);
  if (typeof value !== 'object' || value === null) return false;
  for (const [k, v] of Object.entries(value)) {
    if (k === 'file_id' && typeof v === 'string' && !v.startsWith('$')) return true;
    if (namesServiceFile(v)) return true;
  }
  return false;
}

/**
 * Nothing was uploaded for the item: its own media went in the request (a prompt file's text, an image
 * as base64) or it has none, and no request of its names a file at the service (a shared reference).
 */
function uploadedNothing(item: Item): boolean {
  return uploadOutcome(item) !== 'uploaded' && !item.steps.some((step) => namesServiceFile(step.request));
}

/**
 * The row's uploads (its own media and the references in its request) are young enough to reuse; an
 * item that uploaded nothing has nothing to grow old.
 */
function uploadIsRecent(row: JournalRow, now: number, maxAgeMs: number): boolean {
  if (uploadedNothing(row.item)) return true;
  return row.uploadedAt !== null && now - row.uploadedAt <= maxAgeMs;
}

const freshly = (fresh: Item, reason: string | null, supersede: boolean): RowDecision => ({
  action: 'fresh',
  item: fresh,
  reason,
  supersede,
});
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

/** A row whose create's outcome is unknown: the crash policy's. */
function decideSubmitting(input: DecideInput, row: JournalRow, stored: Item): RowDecision {
  const { fresh } = input;
  const policy = unknownSubmissionPolicy({ item: stored, liveState: row.liveState }, input.resubmitUnknown);
  if (!policy) return freshly(fresh, null, false); // not reachable: the phase says the outcome is unknown
  if (policy.action === 'fail') {
    return { action: 'fail', item: policy.item, reason: policy.reason, supersede: false };
  }
  if (!uploadIsRecent(row, input.now, input.uploadReuseMaxAgeMs)) {
    return {
      ...freshly(fresh, `${policy.reason}; ${JOURNAL_TEXTS.uploadTooOld}`, false),
      item: withStep(fresh, { earlierAttempts: currentStep(policy.item)?.earlierAttempts }),
    };
  }
  return resume(policy.item, policy.reason);
}

/** A row whose outputs were downloaded (and maybe reported): done, or what is missing is redone. */
function decideDownloaded(input: DecideInput, row: JournalRow, stored: Item): RowDecision {
  const check = input.outputs;
  if (!check?.complete) {
    const problems = check?.problems ?? ['not checked'];
    return resume(backToSubmitted(stored), JOURNAL_TEXTS.resumeRedownload(generationIdOf(stored), problems));
  }
  if (row.phase === 'reported' && stored.state === 'reported' && check.resultPresent) {
    return done(stored, JOURNAL_TEXTS.done);
  }
  const again = withStep(stored, { state: 'downloaded' });
  return resume({ ...again, state: 'downloaded', reason: null, failedAt: null }, JOURNAL_TEXTS.resumeReport);
}

/** A row that failed at the service: retried (its failure may pass now, or --retry-failed), or done. */
function decideFailed(input: DecideInput, row: JournalRow, stored: Item): RowDecision {
  const { fresh } = input;
  const failure = failureOf(stored);
  const kind = failure?.kind ?? null;
  if (!failure?.retryable && !input.retryFailed) return done(stored, JOURNAL_TEXTS.failedNotRetried(kind));
  const reason = JOURNAL_TEXTS.retried(kind, failure?.retryable ? 'retryable' : 'flag');
  const earlierAttempts = attemptsOf(stored);
  const kept = earlierAttempts ? { earlierAttempts } : {};
  // A failed upload left nothing to reuse; an old one may be gone.
  if (stored.failedAt === 'upload')
    return { ...freshly(fresh, reason, false), item: withStep(fresh, kept), retried: true };
  if (!uploadIsRecent(row, input.now, input.uploadReuseMaxAgeMs)) {
    return {
      ...freshly(fresh, `${reason}; ${JOURNAL_TEXTS.uploadTooOld}`, false),
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

/**
 * Decides what to do with a file (see the module comment's table). Pure.
 *
 * @example decide({ row: null, fresh, key, force: false, resubmitUnknown: false, now, uploadReuseMaxAgeMs, outputs: null })
 * // { action: 'fresh', item: fresh, reason: null, supersede: false }
 */
export function decide(input: DecideInput): RowDecision {
  const { row, fresh, key } = input;
  if (!row) return freshly(fresh, null, false);
  if (input.force) return freshly(fresh, JOURNAL_TEXTS.forced, true);
  if (row.contentHash !== key.contentHash) {
    const thisRun = input.batchId != null && row.batchId === input.batchId;
    return freshly(fresh, thisRun ? JOURNAL_TEXTS.contentChangedInRun : JOURNAL_TEXTS.contentChanged, true);
  }
  if (row.recipeHash !== key.recipeHash) return freshly(fresh, JOURNAL_TEXTS.recipeChanged, true);

  const stored = current(row.item, fresh);
  // A chain with work at the service: the same table, step by step (chain-decision.ts).
  if (isChain(stored) && row.phase !== 'local') {
    return decideChain(input, stored, uploadIsRecent(row, input.now, input.uploadReuseMaxAgeMs));
  }
  switch (row.phase) {
    case 'local':
      // Nothing at the service yet. A local failure or skip is simply checked again (its reason is
      // judged anew); a file the earlier run never finished is continued, which is a resume.
      if (row.item.state === 'failed' || row.item.state === 'skipped') return freshly(fresh, null, false);
      return { ...resume(fresh, JOURNAL_TEXTS.continued), nothingSent: true };
    case 'uploaded': {
      if (!uploadIsRecent(row, input.now, input.uploadReuseMaxAgeMs))
        return freshly(fresh, JOURNAL_TEXTS.uploadTooOld, false);
      const again = withStep(stored, { state: 'uploaded', requestId: null, generationId: null });
      const item: Item = { ...again, state: 'uploaded', reason: null, failedAt: null };
      const sent = holdsServiceWork(stored);
      const decision = resume(item, JOURNAL_TEXTS.resumeUploaded(uploadOutcome(stored), sent));
      return sent ? decision : { ...decision, nothingSent: true };
    }
    case 'submitting':
      return decideSubmitting(input, row, stored);
    case 'submitted':
      return resume(backToSubmitted(stored), JOURNAL_TEXTS.resumeSubmitted(generationIdOf(stored)));
    case 'downloaded':
    case 'reported':
      return decideDownloaded(input, row, stored);
    case 'failed':
      return decideFailed(input, row, stored);
  }
}

/** The decision told for `item`: the rule's words and marks. */
export function decisionOf(d: RowDecision, item: Item): StoreDecision {
  const { action, reason, retried, nothingSent, sameContent } = d;
  return {
    action,
    item,
    reason,
    ...(retried ? { retried } : {}),
    ...(nothingSent ? { nothingSent } : {}),
    ...(sameContent ? { sameContent } : {}),
  };
}
