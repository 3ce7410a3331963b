/**
 * Stage wait (submitted → completed): waits for the item's generation through the batch's one shared
 * poll loop (ctx.poller), never a timer of its own, naming the job's kind and create time so the loop
 * reads it first when jobs of its kind were seen ended. Reads go through the client, so its concurrency
 * governor learns of every job that ends. A generation that failed fails the item with its
 * failure_code and failure_reason; whether a retryable failure is resubmitted is the runner's call.
 */
import { NotFoundError, redactShapes } from '../../client/index.ts';
import { failureOfError, failureOfGeneration, MEDIA_FETCH_FAILURE_KIND } from '../failure-class.ts';
import { type Item, stepOf } from '../item.ts';
import { isLegacyRequest, legacySentMediaUrl } from '../legacy-request.ts';
import { jobKindOf } from '../poller.ts';
import type { RunContext } from '../run-context.ts';
import { isRunnersToHandle, reasonOf } from '../runner-errors.ts';
import { advanceStep, expectState, failStep } from '../stage.ts';

/**
 * The reason of an item whose generation failed: `<failure_code>: <failure_reason>`.
 *
 * @example failureReasonOf({ failure_code: 'content_moderated', failure_reason: 'The prompt …' })
 * // 'content_moderated: The prompt …'
 */
export function failureReasonOf(g: { failure_code: string | null; failure_reason: string | null }): string {
  const reason = g.failure_reason ?? 'the generation failed';
  return g.failure_code ? `${g.failure_code}: ${reason}` : reason;
}

/**
 * A media fetch failure's reason with the URL the surface could not fetch (its credentials masked) and
 * what to mend; any other reason as it is.
 */
function withMediaUrl(reason: string, kind: string, item: Item): string {
  if (kind !== MEDIA_FETCH_FAILURE_KIND) return reason;
  const url = legacySentMediaUrl(stepOf(item).request as Record<string, unknown>);
  const at = url === null ? '' : ` at ${redactShapes(url)}`;
  return `${reason}: the service could not fetch the file${at} (publish it there or mend the rule's media_url, and run again)`;
}

/**
 * Waits until the item's generation is completed (advances to `completed`) or failed (fails the item
 * at `wait`, with `generation` holding the service's failure_code and failure_reason, and `failure`
 * whether a later run may retry it).
 *
 * @example const next = await wait(submittedItem, ctx); // next.generation → { state: 'completed', … }
 */
export async function wait(item: Item, ctx: RunContext): Promise<Item> {
  expectState(item, 'wait', 'submitted');
  ctx.signal.throwIfAborted();
  const id = stepOf(item).generationId;
  if (!id) return failStep(item, 'wait', 'no generation id was recorded for this item');
  try {
    // Timed from the create's answer (submit's end): the poll loop reads the job first when jobs of
    // its kind were seen ended, and learns from it.
    const submitted = item.timings.submit?.finished_at;
    // A job of the legacy surface is read by its own GET, through the loop of those jobs.
    const poller = isLegacyRequest(stepOf(item).request) ? ctx.legacyPoller : ctx.poller;
    const g = await poller.wait(id, {
      signal: ctx.signal,
      kind: jobKindOf(stepOf(item).request),
      ...(submitted !== undefined ? { createdAt: submitted } : {}),
    });
    const generation = { state: g.state, failure_code: g.failure_code, failure_reason: g.failure_reason };
    if (g.state === 'completed') {
      ctx.completedReads.set(id, g);
      return advanceStep(item, 'completed', { generation });
    }
    const failure = failureOfGeneration(g);
    return failStep(
      item,
      'wait',
      withMediaUrl(failureReasonOf(g), failure.kind, item),
      { generation },
      { failure },
    );
  } catch (err) {
    if (isRunnersToHandle(err, ctx.signal)) throw err;
    if (err instanceof NotFoundError) {
      // Not the file's problem: a new generation may well succeed.
      return failStep(
        item,
        'wait',
        `generation ${id} is unknown to the service (${reasonOf(err)})`,
        {},
        {
          failure: { kind: 'generation unknown to the service', retryable: true },
        },
      );
    }
    return failStep(
      item,
      'wait',
      `generation ${id} could not be read: ${reasonOf(err)}`,
      {},
      {
        failure: failureOfError(err),
      },
    );
  }
}
