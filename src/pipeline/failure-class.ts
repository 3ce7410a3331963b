/**
 * Whether an item's failure may pass on a later run, decided where the item fails and kept on it
 * (Item.failure), so that a re-run can tell the failures worth retrying from the file's own without
 * reading reason texts:
 * - a generation's failure_code: the interface's table (src/spec FAILURE_CODES), plus
 *   `budget_exhausted`, which is the account's problem, not the file's (see RERUN_RETRYABLE_CODES);
 * - an error of the client: only what the service said about the file or its request itself — a 400,
 *   413 or 422 answer, a file it marked failed — or what its rules refuse before sending is the file's
 *   own. Anything else may pass: 429s that outlast every retry, 5xx, connection failures, timeouts, an
 *   upload whose answer was lost (an upload costs nothing), a 404 or 409 about an id, a 403 of a signed
 *   URL. (A create whose answer was lost is the crash policy's: store/crash-policy.ts.)
 */
import {
  BadRequestError,
  ConnectionError,
  FileFailedError,
  GenpipeError,
  LostResponseError,
  LostUploadError,
  PreflightError,
  RateLimitError,
  SizeMismatchError,
  TimeoutError,
  TooLargeError,
  UnprocessableError,
} from '../client/index.ts';
import { FAILURE_CODES, type FailureCode, isLegacyFetchFailure } from '../spec/index.ts';
import { currentStep, type Item, type ItemFailure } from './item.ts';

/**
 * failure_codes the interface does not call retryable (resubmitting the same request at once does not
 * help) but which a later run retries: `budget_exhausted` means the funds ran out mid-generation,
 * which a top-up mends — the same problem a 402 on a create has, whose files the next run continues.
 */
export const RERUN_RETRYABLE_CODES: readonly string[] = ['budget_exhausted'];

/** True when the interface's table calls `code` retryable (the runner resubmits it within a run). */
export function isRetryableFailureCode(code: string | null | undefined): boolean {
  return !!code && code in FAILURE_CODES && FAILURE_CODES[code as FailureCode].retryable;
}

/**
 * The failure of a generation that ended with `code`.
 *
 * @example failureOfCode('generation_failed') // { kind: 'generation_failed', retryable: true }
 * @example failureOfCode('content_moderated') // { kind: 'content_moderated', retryable: false }
 */
export function failureOfCode(code: string | null): ItemFailure {
  if (code === null) return { kind: 'generation failed', retryable: false };
  return { kind: code, retryable: isRetryableFailureCode(code) || RERUN_RETRYABLE_CODES.includes(code) };
}

/** The kind of a failed generation the surface could not fetch the media URL of. */
export const MEDIA_FETCH_FAILURE_KIND = 'media URL not fetched';

/**
 * The failure of a failed generation: by its failure_code; a legacy generation (no failure_code) that
 * could not fetch its media URL is retried by a later run (the URL, not the file, was at fault: the
 * bytes published later, or the rule's media_url mended).
 *
 * @example failureOfGeneration({ failure_code: null, failure_reason: 'media.url: failed to fetch URL (HTTP 404)' })
 * // { kind: 'media URL not fetched', retryable: true }
 */
export function failureOfGeneration(g: {
  failure_code: string | null;
  failure_reason: string | null;
}): ItemFailure {
  if (g.failure_code === null && isLegacyFetchFailure(g.failure_reason)) {
    return { kind: MEDIA_FETCH_FAILURE_KIND, retryable: true };
  }
  return failureOfCode(g.failure_code);
}

function kindOf(err: GenpipeError): string {
  if (err instanceof RateLimitError) return 'rate limited (HTTP 429)';
  if (err instanceof PreflightError) return `refused before sending (HTTP ${err.status})`;
  if (err instanceof FileFailedError) return 'file refused by the service';
  if (err instanceof ConnectionError) return 'connection failure';
  if (err instanceof TimeoutError) return 'timeout';
  if (err instanceof LostResponseError) return 'answer lost';
  if (err instanceof LostUploadError) return 'upload answer lost';
  if (err instanceof SizeMismatchError) return 'file changed during its upload';
  if (err.status !== null) return `HTTP ${err.status}`;
  return err.name;
}

/**
 * The failure an error of a network stage stands for (see the module comment). Anything that is not
 * a client error (a local file that cannot be read again, …) is not retryable.
 *
 * @example failureOfError(rateLimitError) // { kind: 'rate limited (HTTP 429)', retryable: true }
 */
export function failureOfError(err: unknown): ItemFailure {
  if (!(err instanceof GenpipeError)) return { kind: 'error', retryable: false };
  return { kind: kindOf(err), retryable: !isFilesOwn(err) };
}

/**
 * True when `err` is what the service said about the file or its request itself (a 400, 413 or 422
 * answer, a file it marked failed), what its rules refuse before sending, a file that changed while it
 * was sent, or a create whose answer was lost (never sent again by itself: the crash policy decides).
 */
function isFilesOwn(err: GenpipeError): boolean {
  return (
    err instanceof PreflightError ||
    err instanceof FileFailedError ||
    err instanceof BadRequestError ||
    err instanceof TooLargeError ||
    err instanceof UnprocessableError ||
    err instanceof SizeMismatchError ||
    err instanceof LostResponseError
  );
}

/**
 * The failure of a failed item as recorded; for an item saved before failures were recorded, what
 * its generation says (its failure_code); null when nothing tells.
 */
export function failureOf(item: Item): ItemFailure | null {
  if (item.failure) return item.failure;
  const generation = currentStep(item)?.generation;
  const code = generation?.state === 'failed' ? generation.failure_code : null;
  return code ? failureOfCode(code) : null;
}
