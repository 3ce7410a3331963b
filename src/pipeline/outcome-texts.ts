/**
 * Words about a create whose outcome is unknown, shared by the stage that meets it (stages/submit.ts)
 * and the journal that recognises it later (store/journal-row.ts): both import this module, neither
 * imports the other.
 */

/**
 * The reason of an item whose create answer was lost: what is known (the job may exist; the service
 * cannot be asked about a job by its request id) and what a later run does (the crash policy: it fails
 * the file again naming the request id, or submits it again with --resubmit-unknown).
 */
export function lostAnswerReason(requestId: string): string {
  return (
    `the answer to the create request was lost after it was sent (X-Request-Id ${requestId}): the job ` +
    `may exist at the service, and the service cannot be asked about a job by its request id. It was ` +
    `not resubmitted, which could pay twice; the next run fails it again naming this request id, or ` +
    `submits it again with --resubmit-unknown`
  );
}
