/**
 * The enqueuing side of distributed mode (`genpipe run --store …`): discovers the input folder as a
 * run does, adds one job per file (item-queue.ts: its id is the item's key, so a file already queued,
 * in progress or done is not added again, whoever enqueues it; one whose file did not settle is put
 * back for the store to decide on, as a re-run does).
 */
import pLimit from 'p-limit';
import { discover } from '../discover.ts';
import type { InputSelection } from '../input-selection.ts';
import type { Item } from '../item.ts';
import { type Recipe, recipeFiles } from '../recipe.ts';
import { type HashCache, hashWithCache } from '../store/content-hash.ts';
import { fileSha256, type ItemJob, type ItemJobData, type ItemQueue, itemJobId } from './item-queue.ts';

/** Where a run's jobs go and what they carry: the queue, the folders, the recipe, the flags, the batch. */
export interface JobTarget {
  queue: ItemQueue;
  inputDir: string;
  outDir: string;
  recipe: Recipe;
  /** The recipe as given (--recipe), absolute; null: genpipe.yaml in the input dir. */
  recipePath: string | null;
  flags: ItemJobData['flags'];
  /** The enqueuing run's batch id. */
  batch: string;
}

export interface EnqueueOptions extends JobTarget {
  /** The store's content-hash cache (a file hashed once is not read again while unchanged). */
  hashes: HashCache;
  select?: InputSelection;
  signal?: AbortSignal;
  /** Told of each file discovery leaves out, with why. */
  onSkip?: (input: string, reason: string) => void;
  /** Told of each file's job as it is enqueued (or found enqueued already), with the file as found. */
  onJob?: (job: EnqueuedJob, found: Item) => void;
  /**
   * Told of each file discovery failed before any stage (a name that is not valid UTF-8, see
   * raw-names.ts): no worker could open it, so it gets no job.
   */
  onFailed?: (item: Item) => void;
}

/** A file's job. */
export interface EnqueuedJob {
  id: string;
  input: string;
  /** The job had ended before (and was not put back): the file was done in an earlier run. */
  earlier: boolean;
}

/** How many files of a batch were enqueued, and how many of their jobs were new. */
export interface Enqueued {
  files: number;
  added: number;
  /**
   * Jobs enqueued before whose file did not succeed, put back in the queue for the store to decide on
   * as a re-run does (a retryable failure submitted again, `--retry-failed`, an unknown create's crash
   * policy), and jobs that had failed for good (no worker could process them), tried again.
   */
  retried: number;
}

/** Files enqueued together: hashed side by side, looked up and added in one round each. */
const CHUNK = 32;

/** Files hashed at once within a chunk. */
const HASHING = 4;

/** The recipe's part of every job id: its files' hashes. */
export async function recipeHashOf(recipe: Recipe): Promise<string> {
  const hashes: string[] = [];
  for (const f of recipeFiles(recipe)) hashes.push(await fileSha256(f));
  return hashes.join(':');
}

/**
 * Discovers the input folder and adds a job per file (see the module comment), a chunk of files at a
 * time: a worker waiting for work gets the first files at once rather than one round trip apart each,
 * and a folder of many thousand files is enqueued in a few round trips per chunk.
 */
export async function enqueueFolder(o: EnqueueOptions): Promise<Enqueued> {
  const recipeHash = await recipeHashOf(o.recipe);
  const out: Enqueued = { files: 0, added: 0, retried: 0 };
  let chunk: Item[] = [];
  for await (const found of discover(o.inputDir, {
    outDir: o.outDir,
    skipFiles: recipeFiles(o.recipe),
    ...(o.onSkip ? { onSkip: o.onSkip } : {}),
    ...(o.select ? { select: o.select } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  })) {
    if (found.state === 'failed') {
      o.onFailed?.(found);
      continue;
    }
    chunk.push(found);
    if (chunk.length < CHUNK) continue;
    await enqueueFiles(o, chunk, recipeHash, out);
    chunk = [];
  }
  if (chunk.length > 0) await enqueueFiles(o, chunk, recipeHash, out);
  return out;
}

/**
 * Hashes the files, adds those not enqueued yet in one round, puts back those that did not settle;
 * counts them in `out` and tells onJob of each. Their jobs, in order.
 */
export async function enqueueFiles(
  o: Omit<EnqueueOptions, 'select' | 'onSkip' | 'onFailed'>,
  files: Item[],
  recipeHash: string,
  out: Enqueued,
): Promise<EnqueuedJob[]> {
  const hashing = pLimit(HASHING);
  const entries = await Promise.all(
    files.map((found) =>
      hashing(async () => {
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
        return { found, data, id, existing: await o.queue.getJob(id) };
      }),
    ),
  );
  const fresh = entries.filter((e) => !e.existing);
  if (fresh.length > 0) {
    await o.queue.addBulk(fresh.map((e) => ({ name: 'item', data: e.data, opts: { jobId: e.id } })));
    out.added += fresh.length;
  }
  const jobs: EnqueuedJob[] = [];
  for (const e of entries) {
    const was = e.existing ? await putBackIfUnfinished(e.existing, e.data) : 'open';
    if (was === 'put back') out.retried++;
    out.files++;
    const job: EnqueuedJob = { id: e.id, input: e.found.input, earlier: was === 'ended' };
    jobs.push(job);
    o.onJob?.(job, e.found);
  }
  return jobs;
}

/** File states a job may have ended with that a re-run does not look at again. */
const SETTLED = new Set(['reported', 'downloaded', 'skipped']);

/**
 * Puts a job enqueued before back in the queue, with this run's batch and flags, when its file did not
 * settle: the job failed for good (no worker could process it), or its file ended failed or not
 * processed, which a re-run hands to the store's decision again (as a run re-run on the journal does).
 * `put back` when it did; `ended` for a job whose file settled (done earlier); `open` for a job queued
 * or in a worker's hands, left as it is.
 */
async function putBackIfUnfinished(job: ItemJob, data: ItemJobData): Promise<'put back' | 'ended' | 'open'> {
  const state = await job.getState();
  if (state === 'failed' || (state === 'completed' && !SETTLED.has(job.returnvalue?.state ?? ''))) {
    try {
      await job.updateData(data);
      await job.retry(state, { resetAttemptsMade: true, resetAttemptsStarted: true });
      return 'put back';
    } catch (err) {
      // Another run put it back first (two runs enqueuing the same folder at once).
      if ((await job.getState()) !== state) return 'open';
      throw err;
    }
  }
  return state === 'completed' ? 'ended' : 'open';
}
