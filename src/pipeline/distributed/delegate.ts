/**
 * Files handed to the store's workers one at a time, as a runner takes them (RunOptions.delegate):
 * `genpipe watch --store` in distributed mode. Each file becomes a job of the queue, keyed as
 * enqueue.ts keys it (a file already queued, in a worker's hands or done is not added again; one that
 * did not settle is put back for the store to decide on), and the runner's item follows its job: where
 * it stands from its row in the store, its end from the job's result.
 */

import { itemStatus } from '../events.ts';
import type { Item } from '../item.ts';
import { FINAL_ITEM_STATES } from '../item.ts';
import { hashWithCache } from '../journal/content-hash.ts';
import { JOURNAL_TEXTS } from '../journal/texts.ts';
import { recipeFiles } from '../recipe.ts';
import type { PostgresStore, StoreReachability } from '../store-postgres/index.ts';
import { endedItem, givenUpItem } from './batch-follower.ts';
import { NOT_WAITED_FOR } from './distributed-batch.ts';
import { againIfUnfinished, type JobTarget } from './enqueue.ts';
import { fileSha256, type ItemJobData, itemJobId } from './item-queue.ts';
import { pause, storeBack } from './pause.ts';

export interface DelegateOptions extends JobTarget {
  /** The out dir's store: its content-hash cache, its rows. */
  store: PostgresStore;
  /** Between two looks at a job at least (default 1 s; longer while many are followed: LOOKS_PER_SECOND). */
  intervalMs?: number;
  reach?: StoreReachability;
}

/** Looks at jobs per second at most, across the files followed at once (each look: two reads). */
const LOOKS_PER_SECOND = 50;

/** The runner's delegate (RunOptions.delegate) handing each item to the workers (see the module comment). */
export function delegateToWorkers(
  o: DelegateOptions,
): (item: Item, tell: (item: Item) => void, stopping: AbortSignal) => Promise<Item> {
  let recipeHash: Promise<string> | null = null;
  const hashes = o.store.hashCache();
  let followed = 0;
  return async (item, tell, stopping) => {
    followed++;
    try {
      return await follow(item, tell, stopping);
    } finally {
      followed--;
    }
  };

  async function follow(item: Item, tell: (item: Item) => void, stopping: AbortSignal): Promise<Item> {
    recipeHash ??= Promise.all(recipeFiles(o.recipe).map((f) => fileSha256(f))).then((h) => h.join(':'));
    const data: ItemJobData = {
      batch: o.batch,
      inputDir: o.inputDir,
      outDir: o.outDir,
      input: item.input,
      recipe: o.recipePath,
      flags: o.flags,
    };
    const id = itemJobId(data, await hashWithCache(hashes, item.absPath, stopping), await recipeHash);
    const existing = await o.queue.getJob(id);
    if (existing && !(await againIfUnfinished(existing, data))) {
      // Done in an earlier run (this very version of the file): said as a re-run on the journal says it.
      const done = existing.returnvalue?.item;
      if ((await existing.getState()) === 'completed' && done) {
        const succeeded = itemStatus(done) === 'succeeded';
        return {
          ...done,
          ...(succeeded ? { reason: JOURNAL_TEXTS.done } : {}),
          journal: { action: 'done', reason: JOURNAL_TEXTS.done },
        };
      }
    }
    if (!existing) await o.queue.add('item', data, { jobId: id });
    const job = { id, input: item.input, absPath: item.absPath, size: item.size, mtimeMs: item.mtimeMs };
    let shown = `${item.state}|`;
    while (!stopping.aborted) {
      try {
        const state = await o.queue.getJobState(id);
        if (state === 'completed' || state === 'failed') {
          const full = await o.queue.getJob(id);
          if (state === 'failed') return givenUpItem(job, full?.failedReason ?? 'failed');
          const result = full?.returnvalue;
          return result?.item ?? (await o.store.get(item.input))?.item ?? endedItem(job, result, undefined);
        }
        const row = await o.store.get(item.input);
        const now = row?.item;
        if (now && !FINAL_ITEM_STATES.includes(now.state) && `${now.state}|${now.step ?? ''}` !== shown) {
          shown = `${now.state}|${now.step ?? ''}`;
          tell(now);
        }
      } catch (err) {
        // While the store is unreachable the wait goes on (said once); any other fault ends it.
        if (!(await storeBack(o.reach, err, stopping)) && !stopping.aborted) throw err;
      }
      await pause(Math.max(o.intervalMs ?? 1_000, (followed * 1_000) / LOOKS_PER_SECOND), stopping);
    }
    return { ...item, state: 'stopped', reason: NOT_WAITED_FOR };
  }
}
