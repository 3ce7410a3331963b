/**
 * A run's view of the batch it enqueued while workers — its own among them — do the work: the events a
 * run's progress display, log file and metrics take (`item_state`), read from the store and the queue
 * rather than from a runner of its own.
 *
 * - Where each file stands on its way (uploaded, submitted…) comes from the store's rows changed since
 *   the last look (their writers' clocks, read with a slack for machines whose clocks disagree; a state
 *   already shown is not shown again).
 * - That a file ended, and how, comes from its job: the job's result (the item as its drive ended), or,
 *   for a job no worker could do (every try threw), a failed item saying why.
 *
 * Reads per round stay bounded whatever the batch's size: UNFINISHED_READ_PER_ROUND unfinished jobs (in
 * the order they were added, which is about the order they end) and one query of the rows. A read that
 * fails while the store is unreachable waits until it is back (StoreReachability), then the round is
 * read again.
 */

import { type EventSink, itemStatus } from '../events.ts';
import { currentStep, FINAL_ITEM_STATES, type Item, newItem } from '../item.ts';
import { JOURNAL_TEXTS } from '../journal/texts.ts';
import { reachedBy } from '../stage-list.ts';
import type { ItemProgress, StoreReachability } from '../store-postgres/index.ts';
import type { ItemJobResult, ItemQueue } from './item-queue.ts';
import { pause, storeBack } from './pause.ts';

/** Unfinished jobs read per round at most: jobs end about in the order they were added. */
const UNFINISHED_READ_PER_ROUND = 25;

/** Failed rounds in a row, with the store reachable, before the follow gives up (a connection cut once). */
const FAILED_ROUNDS_TAKEN = 3;

/** How far back each look at the rows reaches past the last one: clocks of other machines may lag. */
const CLOCK_SLACK_MS = 10_000;

/** A job of the batch. */
export interface FollowedJob {
  id: string;
  input: string;
  absPath: string;
  size: number;
  mtimeMs: number;
}

/** How following ended. */
export interface FollowEnd {
  /**
   * The final item of each input whose job ended: its job's result, or the failure of a job no worker
   * could do. `whole`: false when made from the result of a job of an older version, which returned no
   * item (the file's row in the store, when it has one, says more).
   */
  ended: Map<string, { item: Item; whole: boolean }>;
  /** Inputs whose job had not ended when following stopped. */
  open: string[];
}

export interface FollowOptions {
  queue: ItemQueue;
  store: { changedSince(sinceMs: number): Promise<ItemProgress[]> };
  jobs: readonly FollowedJob[];
  emit: EventSink;
  /** When the batch started (ms): rows written before it are an earlier run's. */
  startedAt: number;
  intervalMs?: number;
  /** Stops following (the run stops waiting): the jobs not ended are listed in `open`. */
  signal?: AbortSignal;
  reach?: StoreReachability;
}

/** The words of a file done in an earlier run (the journal's). */
const ALREADY_DONE = JOURNAL_TEXTS.done;

/** Final states a job's result may name (anything else is read as failed). */
const ENDED = new Set<string>(FINAL_ITEM_STATES);

/** A submitted or failed file's generation and request id, as a run's own events carry them. */
function idsOf(item: Item): { generation_id?: string; request_id?: string } {
  if (item.state !== 'submitted' && item.state !== 'failed') return {};
  const step = currentStep(item);
  return {
    ...(step?.generationId ? { generation_id: step.generationId } : {}),
    ...(step?.requestId ? { request_id: step.requestId } : {}),
  };
}

/** The failed item of a job no worker could do. */
export function givenUpItem(job: FollowedJob, reason: string): Item {
  return {
    ...newItem(job.input, job.absPath, job.size, job.mtimeMs),
    state: 'failed',
    reason: `no worker could process it: ${reason}`,
  };
}

/** The item a completed job ended with (jobs of older versions return no item: one is made of the result). */
export function endedItem(
  job: FollowedJob,
  result: ItemJobResult | undefined,
  finishedOn: number | undefined,
): Item {
  if (result?.item) return result.item;
  const state = result && ENDED.has(result.state) ? (result.state as Item['state']) : 'failed';
  const base = newItem(job.input, job.absPath, job.size, job.mtimeMs);
  const done = finishedOn !== undefined ? ` (finished ${new Date(finishedOn).toISOString()})` : '';
  return {
    ...base,
    ...(result?.place ? { place: result.place } : {}),
    state,
    reason: result?.reason ?? (state === 'failed' ? `the job ended without a result${done}` : null),
  };
}

/** Follows the jobs to their end (see the module comment). */
export async function followBatch(o: FollowOptions): Promise<FollowEnd> {
  const open = new Map(o.jobs.map((j) => [j.id, j]));
  const byInput = new Map(o.jobs.map((j) => [j.input, j]));
  const shown = new Map<string, string>();
  const end: FollowEnd = { ended: new Map(), open: [] };
  let since = o.startedAt - CLOCK_SLACK_MS;
  let failedRounds = 0;
  const showProgress = (p: ItemProgress) => {
    const job = byInput.get(p.input);
    if (!job || !open.has(job.id) || ENDED.has(p.state)) return;
    const key = `${p.state}|${p.step ?? ''}`;
    if (shown.get(p.input) === key) return;
    shown.set(p.input, key);
    o.emit({
      type: 'item_state',
      at: Date.now(),
      input: p.input,
      place: p.place,
      ...(p.step ? { step: p.step } : {}),
      state: p.state,
      // No stage: this process ran none (its metrics count only its own creates).
      stage: null,
      reason: reachedBy(p.item).said,
      ...idsOf(p.item),
    });
  };
  const finish = (job: FollowedJob, ended: Item, earlier: boolean, whole = true) => {
    open.delete(job.id);
    // A file done in an earlier run is reported as a re-run on the journal reports it (report.json's
    // `reused`, the closing summary's journal line).
    const item: Item =
      earlier && itemStatus(ended) === 'succeeded'
        ? { ...ended, journal: { action: 'done', reason: ALREADY_DONE } }
        : ended;
    end.ended.set(job.input, { item, whole });
    // Reported as the journal left it (done earlier, or failed earlier and not retried): its words.
    const fromJournal = item.journal?.action === 'done';
    o.emit({
      type: 'item_state',
      at: Date.now(),
      input: job.input,
      ...(item.place ? { place: item.place } : {}),
      state: item.state,
      stage: item.state === 'failed' && !fromJournal ? item.failedAt : null,
      reason: fromJournal ? (item.journal?.reason ?? item.reason) : item.reason,
      ...(fromJournal ? { from_journal: true as const } : {}),
      ...(item.state === 'failed' ? idsOf(item) : {}),
    });
  };
  for (;;) {
    try {
      const lookedAt = Date.now();
      for (const p of await o.store.changedSince(since)) showProgress(p);
      since = lookedAt - CLOCK_SLACK_MS;
      await readJobs(o.queue, [...open.values()], (job, state, data) => {
        if (state === 'completed') {
          const item = endedItem(job, data.result, data.finishedOn);
          finish(job, item, data.earlier, data.result?.item !== undefined);
        } else {
          finish(job, givenUpItem(job, data.failedReason ?? 'failed'), false);
        }
      });
    } catch (err) {
      if (o.signal?.aborted) break;
      if (await storeBack(o.reach, err, o.signal)) failedRounds = 0;
      else if (o.signal?.aborted) break;
      else if (!o.reach || ++failedRounds >= FAILED_ROUNDS_TAKEN) throw err;
      else await pause(o.intervalMs ?? 1_000, o.signal);
      if (o.signal?.aborted) break;
      continue;
    }
    failedRounds = 0;
    if (open.size === 0 || o.signal?.aborted) break;
    await pause(o.intervalMs ?? 1_000, o.signal);
    if (o.signal?.aborted) break;
  }
  end.open = [...open.values()].map((j) => j.input);
  return end;

  /** Reads the states of the first unfinished jobs, telling `ended` of each that ended. */
  async function readJobs(
    queue: ItemQueue,
    jobs: FollowedJob[],
    ended: (
      job: FollowedJob,
      state: 'completed' | 'failed',
      data: { result?: ItemJobResult; failedReason?: string; finishedOn?: number; earlier: boolean },
    ) => void,
  ): Promise<void> {
    let unfinished = 0;
    for (const job of jobs) {
      if (unfinished >= UNFINISHED_READ_PER_ROUND) return;
      const state = await queue.getJobState(job.id);
      if (state !== 'completed' && state !== 'failed') {
        unfinished++;
        continue;
      }
      const full = await queue.getJob(job.id);
      const finishedOn = full?.finishedOn ?? undefined;
      ended(job, state, {
        ...(full?.returnvalue ? { result: full.returnvalue } : {}),
        ...(full?.failedReason ? { failedReason: full.failedReason } : {}),
        ...(finishedOn !== undefined ? { finishedOn } : {}),
        earlier: finishedOn !== undefined && finishedOn < o.startedAt,
      });
    }
  }
}
