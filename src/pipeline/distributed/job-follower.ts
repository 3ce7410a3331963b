/**
 * The jobs a runner handed to the store's workers (RunOptions.delegate, delegate.ts), followed to their
 * end by one poll loop for all of them, as the runner's own jobs at the service are by its one poll loop:
 *
 * - Where each file stands on its way (uploaded, submitted…) comes from the store's rows changed since
 *   the last look (their writers' clocks, read with a slack for machines whose clocks disagree; a state
 *   already told is not told again).
 * - That a file ended, and how, comes from its job: the job's result (the item as its drive ended), or,
 *   for a job no worker could do (every try threw), a failed item saying why. A job that had ended
 *   before it was handed over here is a file done in an earlier run, said as a re-run on the journal
 *   says it.
 *
 * Reads per round stay bounded whatever the number of jobs followed: UNFINISHED_READ_PER_ROUND
 * unfinished jobs (in the order they were handed over, which is about the order they end) and one query
 * of the rows. A read that fails while the store is unreachable waits until it is back
 * (StoreReachability), then the round is read again; FAILED_ROUNDS_TAKEN failed rounds with the store
 * reachable end the wait of every job followed with the error. A job whose `stopping` aborts is no
 * longer waited for: its file is reported not finished (NOT_WAITED_FOR), the workers go on with it.
 */

import { itemStatus } from '../events.ts';
import { FINAL_ITEM_STATES, type Item, newItem } from '../item.ts';
import type { ItemProgress, StoreReachability } from '../store/postgres/index.ts';
import { JOURNAL_TEXTS } from '../store/texts.ts';
import type { ItemJobResult, ItemQueue } from './item-queue.ts';
import { pause, storeBack } from './pause.ts';

/** Unfinished jobs read per round at most: jobs end about in the order they were added. */
const UNFINISHED_READ_PER_ROUND = 25;

/** Failed rounds in a row, with the store reachable, before the follow gives up (a connection cut once). */
const FAILED_ROUNDS_TAKEN = 3;

/** How far back each look at the rows reaches past the last one: clocks of other machines may lag. */
const CLOCK_SLACK_MS = 10_000;

/** Why a file the run stopped waiting for is reported unfinished. */
export const NOT_WAITED_FOR =
  'not finished when genpipe stopped waiting for it: the workers go on with it, and the same command run again waits for it';

/** A file's job in the queue, as it was handed over. */
export interface HandedJob {
  id: string;
  /** The job had ended before it was handed over (and was not put back): done in an earlier run. */
  earlier: boolean;
}

export interface FollowerOptions {
  queue: ItemQueue;
  store: {
    changedSince(sinceMs: number): Promise<ItemProgress[]>;
    /** The file's row: what a job of an older version, which returned no item, is reported from. */
    get(input: string): Promise<{ item: Item } | null>;
  };
  /** Between two rounds (default 1 s). */
  intervalMs?: number;
  reach?: StoreReachability;
}

/** A job followed: the runner's item, where it was last told to stand, and its answer. */
interface Followed {
  item: Item;
  job: HandedJob;
  tell: (item: Item) => void;
  /** The state (and step) last told. */
  shown: string;
  /** The item as the store's row last told it. */
  told: Item | null;
  end: (item: Item) => void;
  fail: (err: unknown) => void;
}

/** Final states a job's result may name (anything else is read as failed). */
const ENDED = new Set<string>(FINAL_ITEM_STATES);

/** The failed item of a job no worker could do. */
function givenUpItem(item: Item, reason: string): Item {
  return { ...item, state: 'failed', reason: `no worker could process it: ${reason}` };
}

/** The item a completed job ended with (jobs of older versions return no item: one is made of the result). */
function endedItem(item: Item, result: ItemJobResult | undefined, finishedOn: number | undefined): Item {
  const state = result && ENDED.has(result.state) ? (result.state as Item['state']) : 'failed';
  const done = finishedOn !== undefined ? ` (finished ${new Date(finishedOn).toISOString()})` : '';
  return {
    ...newItem(item.input, item.absPath, item.size, item.mtimeMs),
    ...(result?.place ? { place: result.place } : {}),
    state,
    reason: result?.reason ?? (state === 'failed' ? `the job ended without a result${done}` : null),
  };
}

/** A file done in an earlier run, as a re-run on the journal reports it (report.json's `reused`). */
function doneEarlier(item: Item): Item {
  if (itemStatus(item) !== 'succeeded') return item;
  return { ...item, reason: JOURNAL_TEXTS.done, journal: { action: 'done', reason: JOURNAL_TEXTS.done } };
}

/** Follows the jobs handed to the workers (see the module comment). */
export class JobFollower {
  /** By job id, in the order handed over. */
  private readonly open = new Map<string, Followed>();
  private readonly byInput = new Map<string, Followed>();
  /** The rows changed since then are read next (ms, by the writers' clocks, less the slack). */
  private since = Date.now() - CLOCK_SLACK_MS;
  /** The poll loop while any job is followed; aborted once none is. */
  private loop: AbortController | null = null;

  constructor(private readonly o: FollowerOptions) {}

  /**
   * The final item of `item`, whose job `job` is in the queue, once the job ended; meanwhile `tell`
   * hears where it stands. `stopping` aborted: at once, the item as far as it is known, not finished.
   */
  follow(item: Item, job: HandedJob, tell: (item: Item) => void, stopping: AbortSignal): Promise<Item> {
    return new Promise<Item>((resolve, reject) => {
      const f: Followed = {
        item,
        job,
        tell,
        shown: `${item.state}|`,
        told: null,
        end: (final) => {
          stopping.removeEventListener('abort', onStop);
          this.drop(f);
          resolve(final);
        },
        fail: (err) => {
          stopping.removeEventListener('abort', onStop);
          this.drop(f);
          reject(err);
        },
      };
      const onStop = () => f.end({ ...(f.told ?? item), state: 'stopped', reason: NOT_WAITED_FOR });
      if (stopping.aborted) return onStop();
      stopping.addEventListener('abort', onStop, { once: true });
      this.open.set(job.id, f);
      this.byInput.set(item.input, f);
      if (!this.loop) {
        const loop = new AbortController();
        this.loop = loop;
        void this.run(loop.signal);
      }
    });
  }

  private drop(f: Followed): void {
    if (this.open.get(f.job.id) === f) this.open.delete(f.job.id);
    if (this.byInput.get(f.item.input) === f) this.byInput.delete(f.item.input);
    if (this.open.size === 0) {
      this.loop?.abort();
      this.loop = null;
    }
  }

  /** Rounds while any job is followed (see the module comment). */
  private async run(signal: AbortSignal): Promise<void> {
    const intervalMs = this.o.intervalMs ?? 1_000;
    let failedRounds = 0;
    while (!signal.aborted) {
      try {
        const lookedAt = Date.now();
        for (const p of await this.o.store.changedSince(this.since)) this.show(p);
        this.since = lookedAt - CLOCK_SLACK_MS;
        await this.readJobs();
        failedRounds = 0;
      } catch (err) {
        if (signal.aborted) return;
        if (await storeBack(this.o.reach, err, signal)) {
          failedRounds = 0;
          continue;
        }
        if (signal.aborted) return;
        if (!this.o.reach || ++failedRounds >= FAILED_ROUNDS_TAKEN) {
          for (const f of [...this.open.values()]) f.fail(err);
          return;
        }
      }
      await pause(intervalMs, signal);
    }
  }

  /** Tells a followed file's new state (not its final one: that comes from its job). */
  private show(p: ItemProgress): void {
    const f = this.byInput.get(p.input);
    if (!f || ENDED.has(p.state)) return;
    const key = `${p.state}|${p.step ?? ''}`;
    if (f.shown === key) return;
    f.shown = key;
    f.told = p.item;
    f.tell(p.item);
  }

  /** Reads the states of the first unfinished jobs, ending those that ended. */
  private async readJobs(): Promise<void> {
    let unfinished = 0;
    for (const f of [...this.open.values()]) {
      if (unfinished >= UNFINISHED_READ_PER_ROUND) return;
      if (this.open.get(f.job.id) !== f) continue;
      const state = await this.o.queue.getJobState(f.job.id);
      if (state !== 'completed' && state !== 'failed') {
        unfinished++;
        continue;
      }
      const full = await this.o.queue.getJob(f.job.id);
      if (state === 'failed') {
        f.end(givenUpItem(f.item, full?.failedReason ?? 'failed'));
        continue;
      }
      const result = full?.returnvalue;
      const final =
        result?.item ??
        (await this.o.store.get(f.item.input))?.item ??
        endedItem(f.item, result, full?.finishedOn ?? undefined);
      f.end(f.job.earlier ? doneEarlier(final) : final);
    }
  }
}
