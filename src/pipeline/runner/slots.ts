/**
 * A counting semaphore whose waits can be cancelled: the runner's bound on items in flight (so
 * discovery never runs far ahead of the work) and on jobs in flight (--concurrency, held from a
 * submit until its job ends, across two stages — which a per-stage pool cannot express).
 */
import { abortReason } from '../../client/index.ts';

/** Gives the slot back; calling it again does nothing. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  fail: (reason: unknown) => void;
}

/** A first-come, first-served counting semaphore. */
export class Slots {
  private used = 0;
  private readonly queue: Waiter[] = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`Expected a positive integer for size but received ${size}`);
  }

  /** Slots taken now. */
  get inUse(): number {
    return this.used;
  }

  /**
   * Waits for a free slot and takes it.
   * @param signal - aborting it leaves the queue and rejects with its reason
   */
  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.used < this.size && this.queue.length === 0) {
      this.used++;
      return Promise.resolve(this.releaser());
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i !== -1) this.queue.splice(i, 1);
        reject(abortReason(signal as AbortSignal));
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        fail: reject,
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.queue.push(waiter);
    });
  }

  private releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next) next.grant(this.releaser());
      else this.used--;
    };
  }
}
