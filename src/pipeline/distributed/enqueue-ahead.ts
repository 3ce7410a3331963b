/**
 * `genpipe run --store`'s source of items: the folder's files enqueued for the workers ahead of the
 * runner (enqueue.ts: a chunk at a time, as fast as the queue takes them, whatever the runner follows
 * at once), each handed to the runner once its job is in the queue; the runner's delegate (delegate.ts)
 * then follows that job. What discovery leaves out is kept for the reports; a file discovery failed
 * (no job: no worker could open it) is handed over failed, and the runner reports it as a run does.
 */
import type { Item } from '../item.ts';
import { IgnoredEntries, type ReportIgnored } from '../report/index.ts';
import { createReadyQueue } from '../watch/ready-queue.ts';
import { type Enqueued, type EnqueueOptions, enqueueFolder } from './enqueue.ts';
import type { HandedJob } from './job-follower.ts';

export interface AheadOptions extends Omit<EnqueueOptions, 'onSkip' | 'onJob' | 'onFailed' | 'signal'> {
  /** Told once every file is enqueued. */
  onEnqueued?: (enqueued: Enqueued) => void;
}

/** The folder enqueued ahead of the runner. */
export interface Ahead {
  /** RunOptions.source: each file as found, once its job is in the queue. */
  source: AsyncIterable<Item>;
  /** RunOptions.ignored: what discovery left out so far. */
  ignored(): ReportIgnored | null;
  /** The job of a file handed over (once: DelegateOptions.ahead). */
  take(input: string): HandedJob | undefined;
  /** Enqueues no more files (the batch stops); the source ends with those enqueued. */
  stop(): void;
}

/** Starts enqueuing the folder (see the module comment). */
export function enqueueAhead(o: AheadOptions): Ahead {
  const ignored = new IgnoredEntries();
  const jobs = new Map<string, HandedJob>();
  const ready = createReadyQueue<Item>();
  const stopped = new AbortController();
  let failure: { err: unknown } | null = null;
  const enqueued = enqueueFolder({
    ...o,
    signal: stopped.signal,
    onSkip: (input, reason) => ignored.add(input, reason),
    onJob: (job, found) => {
      jobs.set(found.input, job);
      ready.push(found);
    },
    onFailed: (item) => ready.push(item),
  })
    .then(
      (e) => o.onEnqueued?.(e),
      (err: unknown) => {
        // Stopped on purpose: the files enqueued so far are the batch.
        if (!stopped.signal.aborted) failure = { err };
      },
    )
    .finally(() => ready.end());
  async function* source(): AsyncGenerator<Item> {
    yield* ready;
    await enqueued;
    if (failure) throw failure.err;
  }
  return {
    source: source(),
    ignored: () => ignored.section(),
    take: (input) => {
      const job = jobs.get(input);
      jobs.delete(input);
      return job;
    },
    stop: () => stopped.abort(),
  };
}
