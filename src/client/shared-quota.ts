/**
 * The seam to a quota shared by every process that uses the same API key: the creates' request
 * window and the jobs' slots under the ceiling. A client given one (ClientOptions.sharedQuota)
 * consults it for every create after its own pacer and governor have admitted it — a request slot
 * right before the create is written, a job slot when the create is answered 201, released when a
 * get()/wait() observes the job terminal. Without one, the client paces by what it learns alone (the
 * in-process behaviour, unchanged). Implementations keep no lock across an HTTP call: each method is
 * one decision.
 */

/** The request window paced by: the service's length and allowance. */
export interface SharedWindow {
  windowMs: number;
  limit: number;
}

/** The answer to asking for a request slot. */
export type SharedSlotAnswer = { granted: true } | { granted: false; retryInMs: number };

/** A quota shared across processes (see the module comment). */
export interface SharedQuota {
  /** Takes a slot in the shared window for the create carrying `requestId`, or says how long to wait. */
  takeRequestSlot(requestId: string, window: SharedWindow): Promise<SharedSlotAnswer>;
  /** Records that job `generationId` holds one of the key's job slots (its create was answered 201). */
  jobStarted(generationId: string): Promise<void>;
  /** Frees job `generationId`'s slot (observed terminal, or unknown to the service). */
  jobEnded(generationId: string): Promise<void>;
  /**
   * The jobs holding the key's slots, whoever took them. A process that died leaves its slots here;
   * Generations.recoverSharedJobSlots() asks the service about each and frees those that ended.
   */
  heldJobs(): Promise<string[]>;
}
