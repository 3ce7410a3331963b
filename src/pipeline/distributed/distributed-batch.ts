/**
 * A batch of distributed mode, as `genpipe run --store` runs it: the folder's files enqueued for the
 * workers (enqueue.ts), this run's own share worked on by a worker of its own (unless --no-work), the
 * batch followed to its end (batch-follower.ts), and report.json / report.html written from the store
 * and the jobs' results. It is a Batch (runner.ts) like a run's own: the same events reach the same
 * progress display, log file and metrics, and the same stop() answers a signal.
 *
 * stop(): the run stops waiting, its own worker gives the files in its hands back to the queue (the
 * store keeps how far each got), and the report says which files were not finished then: the other
 * workers go on with them, and the same command run again waits for them (enqueuing nothing twice).
 */
import { batchTotals, type EventSink } from '../events.ts';
import { type Item, newItem } from '../item.ts';
import type { Redact } from '../progress/index.ts';
import { IgnoredEntries, type ReportJournalMeta, writeReports } from '../report/index.ts';
import type { BatchStop } from '../runner/stop-control.ts';
import type { Batch, BatchResult } from '../runner.ts';
import type { PostgresStore, StoreReachability } from '../store-postgres/index.ts';
import { type FollowEnd, type FollowedJob, followBatch } from './batch-follower.ts';
import { type Enqueued, type EnqueueOptions, enqueueFolder } from './enqueue.ts';

/** The run's own share of the work: a worker started before the files are enqueued. */
export interface OwnShare {
  start(): Promise<void>;
  /** Files in its hands now. */
  readonly inHand: number;
  /** Stops taking jobs; `giveBack`: the files in hand stop and go back to the queue, else they finish. */
  close(giveBack: boolean): Promise<void>;
}

export interface DistributedBatchOptions {
  /** What to enqueue (the queue, the folder, the recipe, the job flags, the batch id, the selection). */
  enqueue: Omit<EnqueueOptions, 'onSkip' | 'onJob' | 'signal'>;
  /** The out dir's store: where the rows the report is written from are. */
  store: PostgresStore;
  /** null: --no-work. */
  share: OwnShare | null;
  onEvent?: EventSink;
  redact: Redact;
  /** The report's word on the journal (the store, the crash policy). */
  journal?: ReportJournalMeta | null;
  /** Aborts everything at once (a second signal). */
  signal?: AbortSignal;
  reach?: StoreReachability;
  /** Between two looks at the batch's jobs (default 1 s). */
  intervalMs?: number;
  /** Told once the files are enqueued. */
  onEnqueued?: (enqueued: Enqueued) => void;
}

/** Why a file the run stopped waiting for is reported unfinished. */
export const NOT_WAITED_FOR =
  'not finished when genpipe stopped waiting for it: the workers go on with it, and the same command run again waits for it';

/** Starts a distributed batch (see the module comment). */
export function startDistributedBatch(o: DistributedBatchOptions): Batch {
  const startedAt = Date.now();
  const emit: EventSink = (e) => {
    try {
      o.onEvent?.(e);
    } catch {
      // A display that throws does not stop the batch.
    }
  };
  const waiting = new AbortController();
  const abort = () => waiting.abort();
  if (o.signal?.aborted) waiting.abort();
  else o.signal?.addEventListener('abort', abort, { once: true });
  // Set by stop(), read in the batch's body (an object: the body's reads are not narrowed to null).
  const stopped: { stop: BatchStop | null } = { stop: null };
  let windingUp = false;
  const done = (async (): Promise<BatchResult> => {
    emit({
      type: 'batch_started',
      at: startedAt,
      input_dir: o.enqueue.inputDir,
      out_dir: o.enqueue.outDir,
      emulator: false,
    });
    const ignored = new IgnoredEntries();
    // Files discovery failed before any stage (no job: no worker could open them), reported as they are.
    const failedHere: Item[] = [];
    let gaveBack = true;
    await o.share?.start();
    try {
      const enqueued = await enqueueFolder({
        ...o.enqueue,
        signal: waiting.signal,
        onSkip: (input, reason) => ignored.add(input, reason),
        onJob: (job) => emit({ type: 'item_discovered', at: Date.now(), input: job.input, size: job.size }),
        onFailed: (item) => {
          failedHere.push(item);
          emit({ type: 'item_discovered', at: Date.now(), input: item.input, size: item.size });
          emit({
            type: 'item_state',
            at: Date.now(),
            input: item.input,
            state: item.state,
            stage: item.failedAt,
            reason: item.reason,
          });
        },
      });
      o.onEnqueued?.(enqueued);
      const end = await followBatch({
        queue: o.enqueue.queue,
        store: o.store,
        jobs: enqueued.jobs,
        emit,
        startedAt,
        signal: waiting.signal,
        ...(o.intervalMs !== undefined ? { intervalMs: o.intervalMs } : {}),
        ...(o.reach ? { reach: o.reach } : {}),
      });
      gaveBack = end.open.length > 0;
      windingUp = true;
      await o.share?.close(gaveBack);
      const items = [
        ...failedHere,
        ...(await reportItems(o.store, enqueued.jobs, end.ended, new Set(end.open))),
      ];
      const finishedAt = Date.now();
      const report = await writeReports(o.enqueue.outDir, items, {
        startedAt,
        finishedAt,
        redact: o.redact,
        inputDir: o.enqueue.inputDir,
        ignored: ignored.section(),
        journal: o.journal ?? null,
        ...(stopped.stop ? { stoppedEarly: { reason: stopped.stop.reason } } : {}),
      });
      emit({ type: 'batch_finished', at: finishedAt, totals: batchTotals(report.totals, report.ignored) });
      const { items: _, ...head } = report;
      return { report: head, items: [], stop: stopped.stop, reportNotWritten: null, startedAt, finishedAt };
    } finally {
      o.signal?.removeEventListener('abort', abort);
      if (!windingUp) await o.share?.close(true).catch(() => undefined);
    }
  })();
  return {
    done,
    stop(reason = 'stopped') {
      if (stopped.stop || windingUp) return;
      stopped.stop = { reason, cause: 'interrupted' };
      emit({ type: 'batch_stopping', at: Date.now(), reason });
      waiting.abort();
    },
    get windingUp() {
      return windingUp;
    },
  };
}

/**
 * The report's items: the item each file's job ended with (refused before it was planned, or failed
 * because no worker could do it, included), else the file's row in the store (a job of an older
 * version); a file not finished when the run stopped waiting is said to be so.
 */
async function reportItems(
  store: PostgresStore,
  jobs: readonly FollowedJob[],
  ended: FollowEnd['ended'],
  open: Set<string>,
): Promise<Item[]> {
  const items: Item[] = [];
  // A store that cannot be read now (the run stopped during an outage) costs the files' details, not the
  // reports: the files not finished are said to be so all the same.
  const rowOf = async (input: string) => (await store.get(input).catch(() => null))?.item ?? null;
  for (const job of jobs) {
    const fromJob = ended.get(job.input);
    let item = fromJob?.whole ? fromJob.item : ((await rowOf(job.input)) ?? fromJob?.item ?? null);
    // A file the run stopped waiting for: whatever its row says of a worker's stop, the workers go on.
    if (!item || open.has(job.input)) {
      item = {
        ...(item ?? newItem(job.input, job.absPath, job.size, job.mtimeMs)),
        state: 'stopped',
        reason: NOT_WAITED_FOR,
      };
    }
    items.push(item);
  }
  return items;
}
