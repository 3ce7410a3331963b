/**
 * Files handed to the store's workers as a runner takes them (RunOptions.delegate): distributed mode,
 * `genpipe run --store` and `genpipe watch --store`. Each file is a job of the queue, keyed as
 * enqueue.ts keys it (a file already queued, in a worker's hands or done is not added again; one that
 * did not settle is put back for the store to decide on); a file enqueued ahead of the runner (run's
 * folder, enqueue-ahead.ts) is not enqueued again. The runner's item then follows its job
 * (job-follower.ts): where it stands from its row in the store, its end from the job's result.
 */

import { unprocessedReason } from '../report/index.ts';
import type { RunOptions } from '../runner.ts';
import type { PostgresStore, StoreReachability } from '../store/postgres/index.ts';
import { type Enqueued, enqueueFiles, type JobTarget, recipeHashOf } from './enqueue.ts';
import { type HandedJob, JobFollower } from './job-follower.ts';

export interface DelegateOptions extends JobTarget {
  /** The out dir's store: its content-hash cache, its rows. */
  store: PostgresStore;
  /** Between two looks at the jobs followed (default 1 s). */
  intervalMs?: number;
  reach?: StoreReachability;
  /** The jobs enqueued ahead of the runner (run: the folder's), each taken once by its file's input. */
  ahead?: { take(input: string): HandedJob | undefined };
}

/** The runner's delegate (RunOptions.delegate) handing each item to the workers (see the module comment). */
export function delegateToWorkers(o: DelegateOptions): NonNullable<RunOptions['delegate']> {
  const follower = new JobFollower({
    queue: o.queue,
    store: o.store,
    ...(o.intervalMs !== undefined ? { intervalMs: o.intervalMs } : {}),
    ...(o.reach ? { reach: o.reach } : {}),
  });
  const hashes = o.store.hashCache();
  let recipeHash: Promise<string> | null = null;
  return async (item, tell, stopping) => {
    let job = o.ahead?.take(item.input);
    if (!job) {
      // Nothing is handed to the workers once the batch stops taking new work.
      if (stopping.aborted) return { ...item, state: 'stopped', reason: unprocessedReason(null) };
      recipeHash ??= recipeHashOf(o.recipe);
      const counts: Enqueued = { files: 0, added: 0, retried: 0 };
      try {
        [job] = await enqueueFiles({ ...o, hashes, signal: stopping }, [item], await recipeHash, counts);
      } catch (err) {
        if (stopping.aborted) return { ...item, state: 'stopped', reason: unprocessedReason(null) };
        throw err;
      }
    }
    return follower.follow(item, job as HandedJob, tell, stopping);
  };
}
