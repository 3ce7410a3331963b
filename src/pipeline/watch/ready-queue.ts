/**
 * A small unbounded queue that turns the watcher's onReady callbacks into an async iterable, for a
 * runner that pulls its inputs (`for await (const file of queue) …`). Iteration ends after `end()`
 * once the queue is drained.
 *
 * Two lanes: values added with `push` are taken first, in order; values added with `pushBehind` only
 * when none of those waits. A watch restarted over thousands of files the journal already finished
 * queues them behind, so that a new file is taken as soon as it is ready, not after all of them.
 *
 * Paused (the dashboard's pause of a watch's intake), values are still added but none is taken until
 * resumed; ended while paused, iteration ends at once, the values left untaken.
 */

export interface ReadyQueue<T> extends AsyncIterable<T> {
  /** Adds a value (ignored after end()). */
  push(value: T): void;
  /** Adds a value that waits behind every value added with push, even later ones (ignored after end()). */
  pushBehind(value: T): void;
  /** No more values: iteration ends once the queued ones are taken. */
  end(): void;
  /** Values queued and not yet taken (both lanes). */
  readonly size: number;
  /** The first `limit` values queued, in the order they are taken. */
  peek(limit: number): T[];
  /** No value is taken until resume() (more calls: nothing). */
  pause(): void;
  resume(): void;
  readonly paused: boolean;
}

/**
 * Makes a queue (see the module comment).
 *
 * @example const q = createReadyQueue<ReadyFile>(); await startWatcher({ dir, onReady: (f) => q.push(f) }); for await (const f of q) …
 */
export function createReadyQueue<T>(): ReadyQueue<T> {
  const first: T[] = [];
  const behind: T[] = [];
  let ended = false;
  let paused = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  return {
    push(value) {
      if (ended) return;
      first.push(value);
      notify();
    },
    pushBehind(value) {
      if (ended) return;
      behind.push(value);
      notify();
    },
    end() {
      ended = true;
      notify();
    },
    get size() {
      return first.length + behind.length;
    },
    peek(limit) {
      return [...first.slice(0, limit), ...behind.slice(0, Math.max(0, limit - first.length))];
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      notify();
    },
    get paused() {
      return paused;
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (paused && ended) return;
        if (paused) {
          await new Promise<void>((r) => {
            wake = r;
          });
          continue;
        }
        if (first.length > 0) {
          yield first.shift() as T;
          continue;
        }
        if (behind.length > 0) {
          yield behind.shift() as T;
          continue;
        }
        if (ended) return;
        await new Promise<void>((r) => {
          wake = r;
        });
      }
    },
  };
}
