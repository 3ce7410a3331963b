/**
 * The crash policy: what happens to an item whose create may have reached the service but whose
 * generation id was never recorded (a row found in `submitting` after a kill, a lost answer, a batch
 * stopped mid-create).
 *
 * The service has no way to look a job up by its X-Request-Id and no idempotent create, so the
 * outcome cannot be learned. Two choices:
 * - DEFAULT, never pay twice: the item fails with a reason that names the request id and the flag;
 *   the job, if it exists, is paid once and its result is not collected.
 * - `--resubmit-unknown`: the item is submitted again with a new request id; the earlier request id is
 *   kept in `earlierAttempts`. If the first create did reach the service, the item is paid twice.
 */
import { currentStep, type Item, withStep } from '../item.ts';
import { isOutcomeUnknown, type JournalRow } from './journal-row.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/** What the policy does with an item whose submission outcome is unknown. */
export type UnknownSubmissionOutcome =
  | {
      action: 'fail';
      /** The item failed at submit with the reason texts.unknownOutcome. */
      item: Item;
      reason: string;
    }
  | {
      action: 'resubmit';
      /** The item back in `uploaded` with no request id, ready for submit. */
      item: Item;
      reason: string;
    };

/**
 * Applies the crash policy to a row (pure: the row and the flag decide).
 *
 * @param row - the journal row (its item and live state)
 * @param resubmitUnknown - true for `--resubmit-unknown` (default false: fail, never pay twice)
 * @returns what to do, or null when the row's submission outcome is not unknown
 * @example
 * unknownSubmissionPolicy(row, false)
 * // { action: 'fail', item: { …, state: 'failed', failedAt: 'submit', reason: 'submission outcome unknown …' } }
 */
export function unknownSubmissionPolicy(
  row: Pick<JournalRow, 'item' | 'liveState'>,
  resubmitUnknown: boolean,
): UnknownSubmissionOutcome | null {
  const { item } = row;
  const step = currentStep(item);
  if (!isOutcomeUnknown(item, row.liveState) || !step?.requestId) return null;
  const requestId = step.requestId;
  if (!resubmitUnknown) {
    const reason = JOURNAL_TEXTS.unknownOutcome(requestId);
    return { action: 'fail', reason, item: { ...item, state: 'failed', failedAt: 'submit', reason } };
  }
  return {
    action: 'resubmit',
    reason: JOURNAL_TEXTS.resubmitUnknown(requestId),
    item: {
      ...withStep(item, {
        state: 'uploaded',
        generationId: null,
        requestId: null,
        generation: null,
        earlierAttempts: [
          ...(step.earlierAttempts ?? []),
          {
            generation_id: null,
            request_id: requestId,
            failure_code: null,
            failure_reason: JOURNAL_TEXTS.resubmittedUnknown,
          },
        ],
      }),
      state: 'uploaded',
      reason: null,
      failedAt: null,
    },
  };
}
