/**
 * A worker's runner for the items of one out dir and recipe: one batch of the runner (runner.ts) whose
 * source is the jobs this worker takes, with the store wired in as for `genpipe run`, writing no
 * reports (the run that enqueued the batch writes them). Each item handed in comes back in its final
 * state once its drive ends; two items of one input never run at once (the runner's scheduler).
 */
import type { Item } from '../item.ts';
import { type Batch, type RunOptions, startBatch } from '../runner.ts';

/** The runner options of a session, without what the session sets itself. */
export type SessionRunOptions = Omit<RunOptions, 'source' | 'reports' | 'onItemEnded' | 'vanished'>;

export class ItemSession {
  private readonly pending: Item[] = [];
  private wake: (() => void) | null = null;
  private closed = false;
  /** Why the batch stopped (its `batch_stopping` reason), once it did. */
  private stopped: string | null = null;
  /** Waiters for the final item of each input, first come first served. */
  private readonly waiters = new Map<string, Array<(item: Item) => void>>();
  private readonly batch: Batch;
  /** Settles when the batch ended (after close, or once it stopped). */
  readonly done: Promise<void>;

  constructor(options: SessionRunOptions) {
    this.batch = startBatch({
      ...options,
      source: this.source(),
      reports: false,
      reportIntervalMs: 0,
      // A worker that stops leaves its files where they are, their jobs at the service included: the
      // store keeps how far each got, and whoever takes the file next polls its generation.
      stopGraceMs: 0,
      onItemEnded: (item) => this.ended(item),
      onEvent: (event) => {
        // A batch that stops (the store could not be written, the service refused the key) takes no
        // more work: the worker's next job opens a new session.
        if (event.type === 'batch_stopping') {
          this.closed = true;
          this.stopped ??= event.reason;
        }
        options.onEvent?.(event);
      },
    });
    this.done = this.batch.done.then(
      () => this.endAll(),
      () => this.endAll(),
    );
  }

  /** False once the batch stopped (the store could not be written, the service refused the key). */
  get usable(): boolean {
    return !this.closed;
  }

  /** Why the session's batch stopped (the store could not be written, the worker is stopping), or null. */
  get stopReason(): string | null {
    return this.stopped;
  }

  /** Drives `item` (a `discovered` one) through the stages; its final state. */
  drive(item: Item): Promise<Item> {
    if (this.closed) return Promise.resolve({ ...item, state: 'stopped', reason: 'the worker is stopping' });
    const final = new Promise<Item>((resolve) => {
      const list = this.waiters.get(item.input) ?? [];
      list.push(resolve);
      this.waiters.set(item.input, list);
    });
    this.pending.push(item);
    this.wake?.();
    return final;
  }

  /** No more items: those in flight finish (or, with `stop`, stop as the runner stops a batch). */
  async close(stop = false): Promise<void> {
    this.closed = true;
    this.wake?.();
    if (stop) this.batch.stop('the worker is stopping');
    await this.done;
  }

  private ended(item: Item): void {
    const list = this.waiters.get(item.input);
    const resolve = list?.shift();
    if (list && list.length === 0) this.waiters.delete(item.input);
    resolve?.(item);
  }

  private endAll(): void {
    this.closed = true;
    for (const [input, list] of this.waiters) {
      for (const resolve of list) {
        resolve({ input, state: 'stopped', reason: 'the worker stopped before this item ended' } as Item);
      }
    }
    this.waiters.clear();
  }

  private async *source(): AsyncGenerator<Item> {
    for (;;) {
      const next = this.pending.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
  }
}
