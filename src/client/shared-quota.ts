/**
 * The seam to a quota shared by every process that uses the same API key: the creates' request
 * window, the key's job slots and its job ceiling. A client given one (ClientOptions.sharedQuota)
 * consults it for every create after its own governor has admitted it: a job slot is reserved first
 * (waiting while the key's jobs are at the ceiling any process learned), then a request slot is taken
 * right before the create is written (with the caller's intent, recorded in the same transaction by an
 * implementation that can). The reservation becomes the job's slot on the 201, is given back when the
 * service made no job (and, for "Too many concurrent jobs", the key's ceiling is learned from it), and
 * the job's slot is released when a get()/wait() observes the job terminal. Without one, the client
 * paces by what it learns alone (the in-process behaviour, unchanged). Implementations keep no lock
 * across an HTTP call: each method is one decision.
 */

/** The request window paced by: the service's length and allowance. */
export interface SharedWindow {
  /** The length paced by, ms: the caller's upper bound of it. */
  windowMs: number;
  limit: number;
  /**
   * The caller's exclusive lower bound of the length, when it learned it (not given it): the quota may
   * then pace by the bounds every process on the key learned, intersected.
   */
  loMs?: number;
}

/** The answer to asking for a request slot. */
export type SharedSlotAnswer = (
  | {
      granted: true;
      /** True when the intent given was recorded in the slot's own transaction. */
      intentRecorded?: boolean;
    }
  | { granted: false; retryInMs: number }
) & {
  /**
   * The bounds of the window's length every process on the key learned, intersected (lo exclusive, hi
   * inclusive, ms), when the quota keeps them: the caller paces by them too.
   */
  window?: { loMs: number; hiMs: number };
};

/** The answer to asking for a job slot. */
export type SharedJobSlotAnswer =
  | { granted: true; ceiling: number | null }
  | {
      granted: false;
      /** The key's ceiling (null: being learned, creates go a few at a time). */
      ceiling: number | null;
      /** The key's jobs holding slots. */
      jobs: number;
      /** Creates of the key on their way (slots reserved). */
      pending: number;
    };

/** A quota shared across processes (see the module comment). */
export interface SharedQuota {
  /**
   * Takes a slot in the shared window for the create carrying `requestId`, or says how long to wait.
   * `intent` is what the caller gave create() (CreateOptions.intent): an implementation that knows it
   * records it in the transaction that takes the slot, so a slot is never taken without it.
   */
  takeRequestSlot(requestId: string, window: SharedWindow, intent?: unknown): Promise<SharedSlotAnswer>;
  /** Reserves one of the key's job slots for the create carrying `requestId`, when the ceiling allows. */
  reserveJobSlot(requestId: string): Promise<SharedJobSlotAnswer>;
  /**
   * Records that job `generationId` holds one of the key's job slots (its create, carrying
   * `requestId`, was answered 201): the create's reservation becomes the job's slot.
   */
  jobStarted(generationId: string, requestId?: string): Promise<void>;
  /**
   * The create carrying `requestId` made no job: its reservation is given back. `refused` says the
   * service answered "Too many concurrent jobs": the key's ceiling is learned from it. Returns the
   * key's ceiling then known (null: none).
   */
  jobNotStarted(requestId: string, refused: 'concurrency' | null): Promise<number | null>;
  /** Frees job `generationId`'s slot (observed terminal, or unknown to the service). */
  jobEnded(generationId: string): Promise<void>;
  /**
   * The jobs holding the key's slots, whoever took them. A process that died leaves its slots here;
   * Generations.recoverSharedJobSlots() asks the service about each and frees those that ended.
   */
  heldJobs(): Promise<string[]>;
  /**
   * Moves the window's record of the create carrying `requestId` to now, once its answer came back:
   * the service counted it when it arrived, which may be well after its slot was taken (a loaded
   * machine, a slow intent write), and the answer's time is never earlier than that, so the window
   * stays exact-or-early for the other processes. Optional; best effort.
   */
  requestAnswered?(requestId: string): Promise<void>;
  /**
   * How long a create may find the key's job slots full before the client asks the service about the
   * jobs holding them (recoverSharedJobSlots), in case a dead process left them; default 15 s.
   */
  readonly recoverAfterMs?: number;
  /** How often a create waiting for a job slot asks again; default 250 ms. */
  readonly pollMs?: number;
}
