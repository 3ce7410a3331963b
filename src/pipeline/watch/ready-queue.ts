/**
 * A small unbounded queue that turns the watcher's onReady callbacks into an async iterable, for a
 * runner that pulls its inputs (`for await (const file of queue) …`). Iteration ends after `end()`
 * once the queue is drained.
 */

export interface ReadyQueue<T> extends AsyncIterable<T> {
  /** Adds a value (ignored after end()). */
  push(value: T): void;
  /** No more values: iteration ends once the queued ones are taken. */
  end(): void;
  /** Values queued and not yet taken. */
  readonly size: number;
}

/**
 * Makes a queue (see the module comment).
 *
 * @example const q = createReadyQueue<ReadyFile>(); await startWatcher({ dir, onReady: (f) => q.push(f) }); for await (const f of q) …
 */
export function createReadyQueue<T>(): ReadyQueue<T> {
  const values: T[] = [];
  let ended = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  return {
    push(value) {
      if (ended) return;
      values.push(value);
      notify();
    },
    end() {
      ended = true;
      notify();
    },
    get size() {
      return values.length;
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (values.length > 0) {
          yield values.shift() as T;
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
