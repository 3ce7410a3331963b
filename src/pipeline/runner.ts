/**
 * The runner: moves every file of a batch through the stages of stage-list.ts, and owns everything the
 * stages do not — concurrency, pacing waits, cancellation, retries, persistence, events and reports.
 *
 * - Files stream from discovery; at most `maxInFlight` items are being worked on at once, so memory
 *   and work stay bounded whatever the size of the tree (a finished item is kept only as its small
 *   report record).
 * - Local stages run in a pool sized to the machine; uploads, downloads and result writing each in a
 *   bounded pool; jobs in flight (from submit until the job ends) are capped at `concurrency`. Inside
 *   that cap the client's pacer and governor keep creates within the service's window and ceiling.
 * - All jobs are waited on through one shared poll loop.
 * - After every transition the item is passed to `persist` (issue 5's journal; a no-op by default)
 *   and an `item_state` event is emitted.
 * - A generation that fails with a retryable failure_code is resubmitted up to `maxResubmits` times.
 * - A batch-stopping error (401, 402, 403 client state, service unreachable) or stop() ends the
 *   batch early: nothing new starts, jobs already at the service are still waited on and downloaded,
 *   and every other file — including those not yet discovered — is reported as not processed.
 *   Aborting `signal` cancels in-flight work too.
 * - report.json and report.html are rewritten every `reportIntervalMs` and at the end.
 */
import { setMaxListeners } from 'node:events';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import pLimit from 'p-limit';
import type { GenpipeClient } from '../client/index.ts';
import { FAILURE_CODES, type FailureCode } from '../spec/index.ts';
import { discover } from './discover.ts';
import type { EventSink, PipelineEvent } from './events.ts';
import type { Item, StageName } from './item.ts';
import { GenerationPoller, POLL_DEFAULTS } from './poller.ts';
import { createRedactor, type Redact } from './progress/redact.ts';
import { type Recipe, recipeFiles } from './recipe.ts';
import { SharedReferences } from './references.ts';
import { type BatchReport, unprocessedReason, writeReports } from './report/index.ts';
import { writeResultJson } from './report/result-json.ts';
import type { RunContext } from './run-context.ts';
import { batchStopReason, isAbort } from './runner-errors.ts';
import { type Release, Slots } from './runner-slots.ts';
import { type PoolName, type StageStep, stepFor } from './stage-list.ts';
import { BASE64_MAX_BYTES } from './stages/upload.ts';

/** Defaults of a run, in one place. */
export const RUN_DEFAULTS = {
  /** Jobs in flight at most (submitted and not yet ended). */
  concurrency: 8,
  /** Resubmissions of a generation that failed with a retryable failure_code. */
  maxResubmits: 1,
  /** Uploads at once. */
  uploadConcurrency: 4,
  /** Downloads at once. */
  downloadConcurrency: 4,
  /** ms between rewrites of report.json / report.html while the batch runs (0: only at the end). */
  reportIntervalMs: 5_000,
  /** First wait of a file-readiness poll after an upload (the client's floor still applies). */
  filePollIntervalMs: 1_000,
} as const;

/** Options of a batch run. */
export interface RunOptions {
  inputDir: string;
  outDir: string;
  /** The loaded, validated recipe. */
  recipe: Recipe;
  /** The client to use (not closed by the runner). */
  client: GenpipeClient;
  /** Jobs in flight at most (default 8). */
  concurrency?: number;
  /** Time between two reads of one job by the shared poll loop (default 2000 ms). */
  pollIntervalMs?: number;
  /** Reads per second at most across all jobs (default 20). */
  maxGetsPerSecond?: number;
  /** First wait of a file-readiness poll (default 1000 ms). */
  filePollIntervalMs?: number;
  /** Resubmissions of a retryably failed generation (default 1). */
  maxResubmits?: number;
  /** Local stages at once (default: the machine's parallelism, at least 2). */
  localConcurrency?: number;
  uploadConcurrency?: number;
  downloadConcurrency?: number;
  /** Largest image sent as base64 under `upload: base64` (default 4 MiB). */
  base64MaxBytes?: number;
  /** Aborting it cancels the batch, in-flight work included. */
  signal?: AbortSignal;
  /** Receives every event of the batch. */
  onEvent?: EventSink;
  /** Called with the item after every transition (and by submit before it sends); awaited. */
  persist?: (item: Item) => void | Promise<void>;
  /** Masks secrets in what is written (default: key- and bearer-shaped strings). */
  redact?: Redact;
  /** The batch runs against the embedded emulator (said in the report). */
  emulator?: boolean;
  /** ms between report rewrites while running; 0 for only at the end (default 5000). */
  reportIntervalMs?: number;
}

/** Why a batch ended early. */
export interface BatchStop {
  reason: string;
  /** service: 401/402/403/unreachable; interrupted: stop() (SIGINT); aborted: the signal; input: the input dir could not be read. */
  cause: 'service' | 'interrupted' | 'aborted' | 'input';
}

/** What a batch ends with. */
export interface BatchResult {
  report: BatchReport;
  /** Every item in its final state, sorted by input path. */
  items: Item[];
  stop: BatchStop | null;
  startedAt: number;
  finishedAt: number;
}

/** A running batch. */
export interface Batch {
  /** Settles when every item is final and the reports are written. */
  done: Promise<BatchResult>;
  /** Stops taking new work (SIGINT); jobs already at the service are still finished. */
  stop(reason?: string): void;
}

/** The retryable failure codes of the interface's table. */
function isRetryableFailure(code: string | null | undefined): boolean {
  return !!code && code in FAILURE_CODES && FAILURE_CODES[code as FailureCode].retryable;
}

/**
 * Starts a batch (see the module comment).
 *
 * @example
 * const batch = startBatch({ inputDir: 'in', outDir: 'out', recipe, client, onEvent: progress.sink });
 * process.once('SIGINT', () => batch.stop());
 * const { report, stop } = await batch.done;
 */
export function startBatch(options: RunOptions): Batch {
  const inputDir = resolve(options.inputDir);
  const outDir = resolve(options.outDir);
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? RUN_DEFAULTS.concurrency));
  const localConcurrency = Math.max(1, options.localConcurrency ?? Math.max(2, availableParallelism()));
  const uploadConcurrency = Math.max(1, options.uploadConcurrency ?? RUN_DEFAULTS.uploadConcurrency);
  const downloadConcurrency = Math.max(1, options.downloadConcurrency ?? RUN_DEFAULTS.downloadConcurrency);
  const maxResubmits = Math.max(0, options.maxResubmits ?? RUN_DEFAULTS.maxResubmits);
  const reportIntervalMs = options.reportIntervalMs ?? RUN_DEFAULTS.reportIntervalMs;
  const redact = options.redact ?? createRedactor();
  const persistHook = options.persist ?? (() => undefined);
  const startedAt = Date.now();

  // Cancellation: `abort` cancels in-flight work; `stopping` only stops new work.
  const abort = new AbortController();
  const stopping = new AbortController();
  // Every in-flight stage, request and slot wait listens to these: many more than Node's warning limit.
  setMaxListeners(0, abort.signal, stopping.signal);
  let stop: BatchStop | null = null;

  const emit = (event: PipelineEvent): void => {
    try {
      options.onEvent?.(event);
    } catch {
      // a display's problem must not end the batch
    }
  };
  const triggerStop = (reason: string, cause: BatchStop['cause']): void => {
    if (stop) return;
    stop = { reason, cause };
    emit({ type: 'batch_stopping', at: Date.now(), reason });
    stopping.abort(new Error(reason));
  };
  const onOuterAbort = () => {
    triggerStop('the batch was cancelled', 'aborted');
    abort.abort(options.signal?.reason);
  };
  if (options.signal?.aborted) onOuterAbort();
  else options.signal?.addEventListener('abort', onOuterAbort, { once: true });

  const poller = new GenerationPoller({
    get: (id, o) => options.client.generations.get(id, o),
    intervalMs: options.pollIntervalMs ?? POLL_DEFAULTS.intervalMs,
    maxGetsPerSecond: options.maxGetsPerSecond ?? POLL_DEFAULTS.maxGetsPerSecond,
    signal: abort.signal,
  });
  const filePollIntervalMs = options.filePollIntervalMs ?? RUN_DEFAULTS.filePollIntervalMs;
  const ctx: RunContext = {
    inputDir,
    outDir,
    recipe: options.recipe,
    signal: abort.signal,
    client: options.client,
    references: new SharedReferences({
      client: options.client,
      recipe: options.recipe,
      signal: abort.signal,
      filePollIntervalMs,
    }),
    poller,
    persist: async (item) => {
      await persistHook(item);
    },
    redact,
    settings: {
      filePollIntervalMs,
      base64MaxBytes: options.base64MaxBytes ?? BASE64_MAX_BYTES,
    },
  };

  const pools: Record<Exclude<PoolName, 'jobs' | 'poll'>, ReturnType<typeof pLimit>> = {
    local: pLimit(localConcurrency),
    upload: pLimit(uploadConcurrency),
    download: pLimit(downloadConcurrency),
    report: pLimit(4),
  };
  const jobs = new Slots(concurrency);
  const inFlight = new Slots(2 * concurrency + localConcurrency + uploadConcurrency + downloadConcurrency);

  /** Every item of the batch by input, in its latest state (for the reports). */
  const items = new Map<string, Item>();

  /** Keeps, journals and announces an item's transition (`reason` overrides the item's in the event). */
  const record = async (item: Item, stage: StageName | null, reason = item.reason): Promise<void> => {
    items.set(item.input, item);
    await ctx.persist(item);
    emit({ type: 'item_state', at: Date.now(), input: item.input, state: item.state, stage, reason });
  };

  const stoppedItem = (item: Item): Item => {
    const base = unprocessedReason(stop ? { reason: stop.reason } : null);
    const reason =
      item.generationId && item.state !== 'failed'
        ? `${base}; generation ${item.generationId} was submitted, but its outcome was not collected`
        : base;
    return { ...item, state: 'stopped', reason };
  };

  /** The item after `err` escaped a stage: stopped (abort, batch stop) or failed (anything else). */
  const afterThrow = (item: Item, step: StageStep, err: unknown): Item => {
    const stopWhy = batchStopReason(err);
    if (stopWhy !== null) {
      triggerStop(stopWhy, 'service');
      return stoppedItem(item);
    }
    if (isAbort(err, abort.signal) || abort.signal.aborted) return stoppedItem(item);
    const why = err instanceof Error ? err.message : String(err);
    return { ...item, state: 'failed', failedAt: step.name, reason: redact(`internal error: ${why}`) };
  };

  const runStep = async (step: StageStep, item: Item): Promise<Item> => {
    if (stop && !step.whileStopping) return stoppedItem(item);
    const started = Date.now();
    const begun: Item = { ...item, timings: { ...item.timings, [step.name]: { started_at: started } } };
    let next: Item;
    try {
      next = await step.run(begun, ctx);
    } catch (err) {
      next = afterThrow(begun, step, err);
    }
    const timing = { started_at: started, finished_at: Date.now() };
    return { ...next, timings: { ...next.timings, [step.name]: timing } };
  };

  /** The item sent back to submit after a retryable generation failure, its attempt kept. */
  const resubmitted = (item: Item): Item => ({
    ...item,
    state: 'uploaded',
    reason: null,
    failedAt: null,
    earlierAttempts: [
      ...(item.earlierAttempts ?? []),
      {
        generation_id: item.generationId,
        request_id: item.requestId,
        failure_code: item.generation?.failure_code ?? null,
        failure_reason: item.generation?.failure_reason ?? null,
      },
    ],
    generationId: null,
    requestId: null,
    generation: null,
  });

  const drive = async (first: Item): Promise<void> => {
    let item = first;
    let job: Release | null = null;
    try {
      for (;;) {
        const step = stepFor(item.state);
        if (!step) break;
        let next: Item;
        if (stop && !step.whileStopping) {
          next = stoppedItem(item);
        } else if (step.pool === 'jobs') {
          try {
            job = await jobs.acquire(stopping.signal);
            next = await runStep(step, item);
          } catch (err) {
            next = stop ? stoppedItem(item) : afterThrow(item, step, err);
          }
        } else if (step.pool === 'poll') {
          next = await runStep(step, item);
        } else {
          const pool = pools[step.pool];
          next = await pool(() => runStep(step, item));
        }
        if (job && next.state !== 'submitted') {
          job();
          job = null;
        }
        if (
          step.name === 'wait' &&
          next.state === 'failed' &&
          !stop &&
          next.generation?.state === 'failed' &&
          isRetryableFailure(next.generation.failure_code) &&
          next.attempts <= maxResubmits
        ) {
          const why = `resubmitting after ${next.reason} (attempt ${next.attempts + 1} of ${maxResubmits + 1})`;
          item = resubmitted(next);
          await record(item, step.name, why);
          continue;
        }
        item = next;
        await record(item, item.state === 'stopped' ? null : step.name);
      }
      if (item.state === 'failed' || item.state === 'skipped') {
        await writeResultJson(item, outDir, { redact }).catch(() => undefined);
      }
    } finally {
      if (job) job();
    }
  };

  // ---- reports --------------------------------------------------------------------------------
  let reportWriting: Promise<unknown> | null = null;
  const meta = { startedAt, redact, inputDir, emulator: options.emulator ?? false };
  const refreshReports = (): void => {
    if (reportWriting) return;
    reportWriting = writeReports(outDir, [...items.values()], { ...meta, now: Date.now() })
      .catch(() => undefined)
      .finally(() => {
        reportWriting = null;
      });
  };
  const reportTimer = reportIntervalMs > 0 ? setInterval(refreshReports, reportIntervalMs) : null;
  reportTimer?.unref();

  // ---- the batch ------------------------------------------------------------------------------
  const run = async (): Promise<BatchResult> => {
    emit({
      type: 'batch_started',
      at: startedAt,
      input_dir: inputDir,
      out_dir: outDir,
      emulator: meta.emulator,
    });
    const tasks = new Set<Promise<void>>();
    try {
      const walk = discover(inputDir, { outDir, skipFiles: recipeFiles(options.recipe) });
      try {
        for await (const found of walk) {
          emit({ type: 'item_discovered', at: Date.now(), input: found.input, size: found.size });
          let slot: Release | null = null;
          if (!stop) slot = await inFlight.acquire(stopping.signal).catch(() => null);
          if (!slot) {
            await record(stoppedItem(found), null);
            continue;
          }
          const release = slot;
          items.set(found.input, found);
          await ctx.persist(found);
          const task = drive(found).finally(release);
          tasks.add(task);
          void task.finally(() => tasks.delete(task));
        }
      } catch (err) {
        if (items.size === 0 && !stop) throw err;
        triggerStop(
          `the input dir could not be read: ${err instanceof Error ? err.message : String(err)}`,
          'input',
        );
      }
      await Promise.all(tasks);
    } finally {
      if (reportTimer) clearInterval(reportTimer);
      poller.close();
      options.signal?.removeEventListener('abort', onOuterAbort);
    }
    if (reportWriting) await reportWriting;
    const finishedAt = Date.now();
    const finalStop = stop as BatchStop | null;
    const report = await writeReports(outDir, [...items.values()], {
      ...meta,
      finishedAt,
      now: finishedAt,
      stoppedEarly: finalStop ? { reason: finalStop.reason } : null,
    });
    const t = report.totals;
    emit({
      type: 'batch_finished',
      at: finishedAt,
      totals: {
        inputs: t.inputs,
        succeeded: t.succeeded,
        failed: t.failed,
        skipped: t.skipped,
        stopped: t.unprocessed + t.pending,
      },
    });
    const all = [...items.values()].sort((a, b) => (a.input < b.input ? -1 : a.input > b.input ? 1 : 0));
    return { report, items: all, stop: finalStop, startedAt, finishedAt };
  };

  return {
    done: run(),
    stop: (reason = 'interrupted') => triggerStop(reason, 'interrupted'),
  };
}

/**
 * Runs a batch to its end (startBatch without the handle).
 *
 * @example const { report, stop } = await runBatch({ inputDir, outDir, recipe, client });
 */
export function runBatch(options: RunOptions): Promise<BatchResult> {
  return startBatch(options).done;
}
