/**
 * The spellings of the run flags that the pipeline's texts name (a reason tells which flag changes
 * it). The CLI declares its options with these and the texts quote them, so both say the same; this
 * module imports nothing, so any text can use it without an import cycle.
 */
export const RUN_FLAGS = {
  /** The flag that resubmits items whose submission outcome is unknown (the policy's other choice). */
  resubmitUnknownFlag: '--resubmit-unknown',
  /** The flag that redoes every item. */
  forceFlag: '--force',
  /** The flag that retries every failed item, also those whose failure is the file's own. */
  retryFailedFlag: '--retry-failed',
  /** The flag that sends a file although another input with the same content and recipe is done. */
  redoSameContentFlag: '--redo-same-content',
  /** The flag that puts the journal somewhere else. */
  journalFlag: '--journal',
} as const;
