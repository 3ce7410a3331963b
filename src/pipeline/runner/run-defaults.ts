/**
 * The defaults of a run (options.ts applies them). Alone so that the commands' definitions, whose
 * help states them, load no runner.
 */

/** Defaults of a run, in one place. */
export const RUN_DEFAULTS = {
  /** Jobs in flight at most (submitted and not yet ended). */
  concurrency: 32,
  /** Resubmissions of a generation that failed with a retryable failure_code. */
  maxResubmits: 1,
  /** Uploads at once. */
  uploadConcurrency: 4,
  /** Downloads at once. */
  downloadConcurrency: 4,
  /** ms between rewrites of report.json / report.html while the batch runs (0: only at the end). */
  reportIntervalMs: 5_000,
  /** First wait of a file-readiness poll after an upload (the client's floor still applies). */
  filePollIntervalMs: 1_000,
  /**
   * Times one item whose file changed after its check is processed again from the start in a run;
   * once more and it fails (retryably: the next run tries it again).
   */
  changedAgainMax: 3,
} as const;
