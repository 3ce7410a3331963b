/**
 * The defaults of a distributed worker (worker.ts applies them). Alone so that the commands'
 * definitions, whose help states them, load no queue.
 */

/** Defaults of a worker, in one place. */
export const WORKER_DEFAULTS = {
  /** Files a worker holds at once (queue jobs taken); its jobs at the service are the runner's concurrency. */
  filesAtOnce: 8,
} as const;
