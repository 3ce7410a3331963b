/**
 * What a create that did not answer with a generation makes of the step, on either surface: a lost
 * answer fails it with its request id (the crash policy's to judge: the job may exist), a local
 * refusal without one (nothing was sent), any other answer with its reason and failure class.
 * Aborts and batch-stopping errors are rethrown for the runner.
 */
import { LostResponseError, PreflightError } from '../../client/index.ts';
import { failureOfError } from '../failure-class.ts';
import type { Item } from '../item.ts';
import { lostAnswerReason } from '../outcome-texts.ts';
import { isRunnersToHandle, reasonOf } from '../runner-errors.ts';
import { failStep } from '../stage.ts';

/**
 * @param pending - the item with the create's request id on its step
 * @param signal - the batch's abort signal
 */
export function createFailed(pending: Item, requestId: string, err: unknown, signal: AbortSignal): Item {
  if (isRunnersToHandle(err, signal)) throw err;
  if (err instanceof LostResponseError) return failStep(pending, 'submit', lostAnswerReason(requestId));
  // Nothing was sent: the request id was never used.
  if (err instanceof PreflightError) {
    return failStep(pending, 'submit', err.detail, { requestId: null }, { failure: failureOfError(err) });
  }
  return failStep(pending, 'submit', reasonOf(err), {}, { failure: failureOfError(err) });
}
