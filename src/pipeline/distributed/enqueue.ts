/**
 * The enqueuing side of distributed mode (`genpipe run --store …`): discovers the input folder as a
 * run does, adds one job per file (item-queue.ts: its id is the item's key, so a file already queued,
 * in progress or done is not added again, whoever enqueues it), and waits for the jobs of the batch.
 */
import { discover } from '../discover.ts';
import type { InputSelection } from '../input-selection.ts';
import { type HashCache, hashWithCache } from '../journal/content-hash.ts';
import { type Recipe, recipeFiles } from '../recipe.ts';
import type { StoreReachability } from '../store-postgres/index.ts';
import { fileSha256, type ItemJobData, type ItemQueue, itemJobId } from './item-queue.ts';

export interface EnqueueOptions {
  queue: ItemQueue;
  /** The store's content-hash cache (a file hashed once is not read again while unchanged). */
  hashes: HashCache;
  inputDir: string;
  outDir: string;
  recipe: Recipe;
  /** The recipe as given (--recipe), absolute; null: genpipe.yaml in the input dir. */
  recipePath: string | null;
  flags: ItemJobData['flags'];
  /** The enqueuing run's batch id. */
  batch: string;
  select?: InputSelection;
  signal?: AbortSignal;
  /** Told of each file discovery leaves out, with why. */
  onSkip?: (input: string, reason: string) => void;
}

/** The jobs of a batch: each file's job id, and how many were new. */
export interface Enqueued {
  jobs: Array<{ id: string; input: string }>;
  added: number;
  /** Jobs that had failed for good, tried again. */
  retried: number;
}

/** Discovers the input folder and adds a job per file (see the module comment). */
export async function enqueueFolder(o: EnqueueOptions): Promise<Enqueued> {
  const recipeHashes: string[] = [];
  for (const f of recipeFiles(o.recipe)) recipeHashes.push(await fileSha256(f));
  const recipeHash = recipeHashes.join(':');
  const out: Enqueued = { jobs: [], added: 0, retried: 0 };
  for await (const found of discover(o.inputDir, {
    outDir: o.outDir,
    skipFiles: recipeFiles(o.recipe),
    ...(o.onSkip ? { onSkip: o.onSkip } : {}),
    ...(o.select ? { select: o.select } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  })) {
    const data: ItemJobData = {
      batch: o.batch,
      inputDir: o.inputDir,
      outDir: o.outDir,
      input: found.input,
      recipe: o.recipePath,
      flags: o.flags,
    };
    const contentHash = await hashWithCache(o.hashes, found.absPath, o.signal);
    const id = itemJobId(data, contentHash, recipeHash);
    out.jobs.push({ id, input: found.input });
    const existing = await o.queue.getJob(id);
    if (existing) {
      if ((await existing.getState()) === 'failed') {
        await existing.retry('failed');
        out.retried++;
      }
      continue;
    }
    await o.queue.add('item', data, { jobId: id });
    out.added++;
  }
  return out;
}

/** How the jobs of a batch ended. */
export interface BatchJobsEnd {
  completed: number;
  /** Jobs failed for good (every try threw), with the last error. */
  failed: Array<{ input: string; reason: string }>;
}

/** Failed rounds in a row, with the store reachable, before the wait gives up (a connection cut once). */
const FAILED_ROUNDS_TAKEN = 3;

/** Unfinished jobs read per round at most: jobs end about in the order they were added. */
const UNFINISHED_READ_PER_ROUND = 25;

/**
 * Waits until every job of the batch completed or failed for good, reading their states every
 * `intervalMs` (in the order they were added, each round up to UNFINISHED_READ_PER_ROUND still open:
 * the reads per round stay bounded whatever the size of the batch); `onProgress` hears how many are
 * done. A read that fails while the store is unreachable waits until it is back (opts.reach), and
 * the round is read again.
 */
export async function waitForJobs(
  queue: ItemQueue,
  jobs: Enqueued['jobs'],
  opts: {
    intervalMs?: number;
    signal?: AbortSignal;
    onProgress?: (done: number, total: number) => void;
    /** Told of a failed read: while the store is unreachable the wait goes on until it is back. */
    reach?: StoreReachability;
  } = {},
): Promise<BatchJobsEnd> {
  const open = new Map(jobs.map((j) => [j.id, j.input]));
  const end: BatchJobsEnd = { completed: 0, failed: [] };
  let told = -1;
  let failedRounds = 0;
  for (;;) {
    let unfinished = 0;
    try {
      for (const [id, input] of [...open]) {
        if (unfinished >= UNFINISHED_READ_PER_ROUND) break;
        const state = await queue.getJobState(id);
        if (state === 'completed') {
          end.completed++;
          open.delete(id);
        } else if (state === 'failed') {
          const job = await queue.getJob(id);
          end.failed.push({ input, reason: job?.failedReason ?? 'failed' });
          open.delete(id);
        } else {
          unfinished++;
        }
      }
    } catch (err) {
      if (await opts.reach?.failed(err)) failedRounds = 0;
      else if (!opts.reach || ++failedRounds >= FAILED_ROUNDS_TAKEN) throw err;
      else await new Promise((r) => setTimeout(r, opts.intervalMs ?? 1_000));
      continue;
    }
    failedRounds = 0;
    const done = jobs.length - open.size;
    if (done !== told) opts.onProgress?.(done, jobs.length);
    told = done;
    if (open.size === 0) return end;
    opts.signal?.throwIfAborted();
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 1_000));
  }
}
