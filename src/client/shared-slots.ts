/**
 * A client's side of a shared quota (shared-quota.ts), for its creates: the waits for the key's job
 * slot and request slot, the recovery of slots a dead process left (once when the client first
 * creates, and again whenever a create finds the key's slots full for longer than recoverAfterMs), and
 * the wake-up of waiting creates when one of this client's creates made its job or one of its jobs
 * ends (other processes' are seen by asking again every pollMs).
 */
import type { SharedQuota, SharedWindow } from './shared-quota.ts';
import { abortReason, sleep } from './sleep.ts';

const DEFAULT_RECOVER_AFTER_MS = 15_000;
const DEFAULT_POLL_MS = 250;

/** What SharedSlots needs from its client. */
export interface SharedSlotsDeps {
  quota: SharedQuota;
  /** Frees the slots of held jobs that ended (Generations.recoverSharedJobSlots); how many. */
  recover: (signal?: AbortSignal) => Promise<number>;
  log?: ((message: string) => void) | undefined;
}

/** The shared quota's waits for one client (see the module comment). */
export class SharedSlots {
  private readonly wakers = new Set<() => void>();
  private recovery: Promise<void> | null = null;
  private recoveredOnce = false;
  private lastRecoveryAt = 0;
  private readonly recoverAfterMs: number;
  private readonly pollMs: number;

  constructor(private readonly deps: SharedSlotsDeps) {
    this.recoverAfterMs = deps.quota.recoverAfterMs ?? DEFAULT_RECOVER_AFTER_MS;
    this.pollMs = deps.quota.pollMs ?? DEFAULT_POLL_MS;
  }

  get quota(): SharedQuota {
    return this.deps.quota;
  }

  /**
   * Frees the slots of the key's held jobs that ended, once at a time however many creates ask
   * (a failure is noted, not thrown: the slots then wait for the next recovery).
   */
  recover(): Promise<void> {
    this.recovery ??= (async () => {
      try {
        const freed = await this.deps.recover();
        if (freed > 0) this.deps.log?.(`shared quota: freed ${freed} job slot(s) of jobs that had ended`);
      } catch (err) {
        this.deps.log?.(`shared quota: the held jobs could not be checked (${(err as Error).message})`);
      } finally {
        this.lastRecoveryAt = Date.now();
        this.recovery = null;
        this.wake();
      }
    })();
    return this.recovery;
  }

  /**
   * Waits until one of the key's job slots is reserved for the create carrying `requestId`. The first
   * create of the client recovers the slots of dead processes first. Returns the key's ceiling as
   * the quota knows it (null: not learned yet).
   */
  async jobSlot(requestId: string, signal: AbortSignal | undefined): Promise<number | null> {
    if (!this.recoveredOnce) {
      this.recoveredOnce = true;
      await this.recover();
    }
    let fullSince: number | null = null;
    for (;;) {
      const answer = await this.deps.quota.reserveJobSlot(requestId);
      if (answer.granted) return answer.ceiling;
      const now = Date.now();
      fullSince ??= now;
      if (
        answer.ceiling !== null &&
        now - fullSince >= this.recoverAfterMs &&
        now - this.lastRecoveryAt >= this.recoverAfterMs
      ) {
        await this.recover();
        continue;
      }
      await this.sleepOrWake(this.pollMs, signal);
    }
  }

  /**
   * Waits for a slot in the key's request window for `requestId`, recording `intent` with it when the
   * quota can. True when the intent was recorded in the slot's transaction.
   */
  async requestSlot(
    requestId: string,
    window: SharedWindow,
    intent: unknown,
    signal: AbortSignal | undefined,
    /** Told the window's bounds the key's processes learned together, whenever the quota says them. */
    onWindow?: (bounds: { loMs: number; hiMs: number }) => void,
  ): Promise<boolean> {
    for (;;) {
      const answer = await this.deps.quota.takeRequestSlot(requestId, window, intent);
      if (answer.window) onWindow?.(answer.window);
      if (answer.granted) return answer.intentRecorded === true;
      await sleep(answer.retryInMs, signal);
    }
  }

  /** The create carrying `requestId` made no job: its reservation goes back (see SharedQuota). */
  async notStarted(requestId: string, refused: 'concurrency' | null): Promise<number | null> {
    try {
      return await this.deps.quota.jobNotStarted(requestId, refused);
    } finally {
      this.wake();
    }
  }

  /**
   * The create carrying `requestId` made job `generationId`: its reservation becomes the job's slot,
   * and the creates waiting here ask again at once (while the key's ceiling is unknown, a running job
   * makes room for one more create on its way).
   */
  async started(generationId: string, requestId: string): Promise<void> {
    try {
      await this.deps.quota.jobStarted(generationId, requestId);
    } catch (err) {
      // The job exists whatever the quota heard: its create succeeded. The reservation stands for it
      // until it lapses or a recovery asks the service about the job.
      this.deps.log?.(`shared quota: job ${generationId} could not be recorded (${(err as Error).message})`);
    } finally {
      this.wake();
    }
  }

  /**
   * Job `generationId` ended: its slot is freed and the creates waiting here ask again at once (a
   * failure is noted: the slot is freed by the next recovery, which asks the service about it).
   */
  async ended(generationId: string): Promise<void> {
    try {
      await this.deps.quota.jobEnded(generationId);
    } catch (err) {
      this.deps.log?.(
        `shared quota: the end of job ${generationId} could not be recorded (${(err as Error).message})`,
      );
    } finally {
      this.wake();
    }
  }

  private wake(): void {
    const all = [...this.wakers];
    this.wakers.clear();
    for (const w of all) w();
  }

  private sleepOrWake(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        reject(abortReason(signal as AbortSignal));
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
