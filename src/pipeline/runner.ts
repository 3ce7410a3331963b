/**
 * The runner: moves every file of a batch through the stages of stage-list.ts, and owns everything the
 * stages do not — concurrency, pacing waits, cancellation, retries, persistence, events and reports.
 *
 * - Files stream from discovery (or from `source`: genpipe watch's ready files); at most
 *   `maxInFlight` items are being worked on at once, so memory and work stay bounded whatever the size
 *   of the tree (a finished item's report record goes to the batch's view file, only its entry stays).
 *   Two items of the same input (watch: a file that changed while its earlier version was processed)
 *   never run at once.
 * - Each item goes to its place (Item.place, given by `admit`; `placeFor` for an item admit never saw):
 *   its out folder, and its identity in the reports, so two versions of one file name that each have a
 *   folder of their own are reported side by side.
 * - Local stages run in a pool sized to the machine; uploads, downloads and result writing each in a
 *   bounded pool; jobs in flight (from submit until the job ends) are capped at `concurrency`. Inside
 *   that cap the client's pacer and governor keep creates within the service's window and ceiling.
 * - All jobs are waited on through one shared poll loop.
 * - After every transition the item is passed to `persist` (the journal; a no-op by default) and an
 *   `item_state` event is emitted. With `admit` (the journal), each planned item is handed to it before
 *   anything is checked or sent: it comes back fresh, resumed at a later state (an upload, a
 *   generation or outputs of an earlier run are reused, never redone; an upload only while the
 *   service still holds it `ready`) or done. When discovery ends,
 *   `vanished` hands back journaled generations whose input is gone, so paid work is still collected.
 *   A journal that cannot be written stops the batch at once (cause `journal`).
 * - A generation that fails with a retryable failure_code is resubmitted up to `maxResubmits` times in
 *   each run (an item an earlier run failed and this one retries gets as many), each after the
 *   client's resubmit backoff (generations.resubmitDelay), its job slot free meanwhile.
 * - What is sent of a file is what was checked and journaled (input-changed.ts): each planned item
 *   carries its content hash (admit's key; hashed here without a journal), and a stage that finds the
 *   bytes it would send are others rejects with InputChangedError before anything is created from
 *   them. Such an item is processed again from the start at once (`inputChanged: 'again'`, up to
 *   `changedAgainMax` times, then failed retryably), or left to the source to hand over again
 *   (`'source'`: watch).
 * - A batch-stopping error (401, 402, 403 client state, service unreachable) or stop() ends the
 *   batch early: nothing new starts, jobs already at the service are still waited on and downloaded,
 *   and every other file already discovered is reported as not processed; the files discovery finds
 *   after the stop are only counted (report.json `stopped_early.not_looked_at`), none of them costs
 *   a journal write or a report row, so the wind-down takes no longer with the size of the tree.
 *   With `stopGraceMs`, stop() gives that work only so long: then it is cancelled too (the journal
 *   keeps what it reached, for the next run). Aborting `signal` cancels in-flight work at once.
 * - report.json and report.html are rewritten every `reportIntervalMs` while items change, and at the end.
 *
 * Its parts (runner/): options.ts (defaults and their resolution), stop-control.ts (the stop and
 * cancel policy), pools.ts (the bounded pools), batch-items.ts (the batch state), scheduler.ts
 * (starts drives, keeps two items of one input apart), item-driver.ts (one item through the stages),
 * step-policy.ts (what a stage's entry in stage-list.ts asks of the runner), report-refresher.ts,
 * view-file.ts (the finished items' report views, on disk).
 */
import { legacyAsGeneration } from '../client/index.ts';
import { discover } from './discover.ts';
import { batchTotals, type EventSink, type PipelineEvent } from './events.ts';
import type { Item } from './item.ts';
import { GenerationPoller, RecentJobDurations } from './poller.ts';
import { inputKey } from './raw-names.ts';
import { recipeFiles } from './recipe.ts';
import { SharedReferences } from './references.ts';
import { IgnoredEntries, itemPlace, type ReportHead, reportStop } from './report/index.ts';
import type { RunContext } from './run-context.ts';
import { BatchItems } from './runner/batch-items.ts';
import { ItemDriver } from './runner/item-driver.ts';
import {
  type AdmitDecision,
  type ResolvedRun,
  type RunOptions,
  resolveRunOptions,
} from './runner/options.ts';
import { Pools } from './runner/pools.ts';
import { ReportRefresher } from './runner/report-refresher.ts';
import { Scheduler } from './runner/scheduler.ts';
import { sweepBatchScratch, sweepItemScratch } from './runner/scratch-sweep.ts';
import { type BatchStop, StopControl } from './runner/stop-control.ts';
import { ViewFile } from './runner/view-file.ts';
import { ItemTakenOverError } from './store/item-taken-over.ts';

export { type AdmitDecision, RUN_DEFAULTS, type RunOptions } from './runner/options.ts';
export { type BatchStop, JournalWriteError, journalErrorWords } from './runner/stop-control.ts';

/** What a batch ends with. */
export interface BatchResult {
  /** report.json without its items (they are in the file). */
  report: ReportHead;
  /**
   * With `keepItems`: every item in its final state (one per place, as its report view), sorted by
   * input path. Empty otherwise: a batch keeps no item in memory once it is reported.
   */
  items: Item[];
  stop: BatchStop | null;
  /** Why the final report.json and report.html could not be written (the out dir refused them); null when they were. */
  reportNotWritten: string | null;
  startedAt: number;
  finishedAt: number;
}

/** A running batch. */
export interface Batch {
  /** Settles when every item is final and the reports are written. */
  done: Promise<BatchResult>;
  /**
   * Stops taking new work (SIGINT); jobs already at the service are still finished, for at most
   * `stopGraceMs` when it is set (then cancelled and left, as far as they got, to the journal).
   * `end`: the stop is how this batch normally ends (a watch's signal), in those words (the
   * batch_stopping event's `end`).
   */
  stop(reason?: string, end?: string): void;
  /** True once every item is final: only the final reports are left to write (bounded work). */
  readonly windingUp: boolean;
  /**
   * Takes a file in again while the batch runs (the dashboard's retry of a run's failed file): driven
   * as a file found anew, its admission the journal's. False once the batch stopped or its last file
   * ended (nothing is taken in any more).
   */
  again(item: Item): boolean;
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
  // An earlier version a decision left in flight is driven too, once the scheduler is there.
  let takeUpLeft: (d: AdmitDecision) => void = () => undefined;
  const run = resolveRunOptions(withLeftBehind(options, (d) => takeUpLeft(d)));
  const startedAt = Date.now();
  const emit = safeEmit(options.onEvent);
  const stops = new StopControl(
    options.signal,
    (reason, end) => {
      emit({ type: 'batch_stopping', at: Date.now(), reason, ...(end === undefined ? {} : { end }) });
    },
    options.journal?.file ?? null,
  );
  const views = new ViewFile(run.outDir);
  const items = new BatchItems(views);
  const pools = new Pools(run);
  const ctx = runContext(run, stops);
  const driver = new ItemDriver(run, ctx, pools, stops, items, emit);
  // The inputs found that the store may not know this batch saw (see feed).
  const seen = new Set<string>();
  const scheduler = new Scheduler(driver, items, (item) => {
    if (item.journal) seen.delete(item.input);
    options.onItemEnded?.(item);
  });
  takeUpLeft = (d) => {
    if (!stops.stop) void driveTakenUp(run, d, { scheduler, emit });
  };
  const writesReports = options.reports !== false;
  // What discovery leaves out of the input folder; a source (watch) is not a walk of it, and tells its own.
  const ignored = options.source ? null : new IgnoredEntries();
  const ignoredSource = options.ignored;
  const reports = new ReportRefresher(
    run.outDir,
    {
      startedAt,
      redact: run.redact,
      inputDir: run.inputDir,
      emulator: run.emulator,
      journal: options.journal ?? null,
      ignoredEntries: ignored ?? (ignoredSource ? { section: ignoredSource } : null),
      heldBack: options.heldBack ?? null,
    },
    items,
    run.reportIntervalMs,
    !options.source,
    writesReports,
  );

  let notLookedAt: NotLookedAt = { n: 0, partial: false };
  let windingUp = false;
  /** Set with windingUp, and on a failure too: `again` takes nothing any more. */
  let settled = false;
  const finish = async (): Promise<BatchResult> => {
    emit({
      type: 'batch_started',
      at: startedAt,
      input_dir: run.inputDir,
      out_dir: run.outDir,
      emulator: run.emulator,
    });
    try {
      if (writesReports) await sweepBatchScratch(run.outDir).catch(() => 0);
      for (const item of (await options.earlier?.()) ?? []) items.seed(item);
      const fed = await feed(run, { stops, pools, items, driver, scheduler, emit }, seen, ignored);
      notLookedAt = fed.notLookedAt;
      options.onFoundAll?.();
      reports.discovered();
      await collectVanished(run, seen, { stops, driver, scheduler, emit });
      await scheduler.drain();
      windingUp = true;
      settled = true;
    } finally {
      settled = true;
      reports.halt();
      ctx.poller.close();
      ctx.legacyPoller.close();
      stops.dispose();
    }
    const finishedAt = Date.now();
    const stop = stops.stop;
    const {
      report,
      items: all,
      notWritten,
    } = await reports.finish(
      finishedAt,
      reportStop(stop, {
        ...(notLookedAt.n > 0 ? { not_looked_at: notLookedAt.n } : {}),
        ...(notLookedAt.n > 0 && notLookedAt.partial ? { not_looked_at_partial: true as const } : {}),
      }),
      options.keepItems,
    );
    emit({
      type: 'batch_finished',
      at: finishedAt,
      totals: batchTotals(report.totals, report.ignored),
    });
    return { report, items: all, stop, reportNotWritten: notWritten, startedAt, finishedAt };
  };

  return {
    done: finish().finally(() => views.close()),
    stop: (reason = 'interrupted', end) => stops.interrupt(reason, options.stopGraceMs, end),
    again: (item) => {
      // Once the batch stops or its last file ended, nothing more is taken in.
      if (stops.stop || windingUp || settled) return false;
      emit({ type: 'item_discovered', at: Date.now(), input: item.input, size: item.size });
      scheduler.start(item, null);
      return true;
    },
    get windingUp() {
      return windingUp;
    },
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

/** The event sink, never throwing: a display's problem must not end the batch. */
function safeEmit(sink: EventSink | undefined): (event: PipelineEvent) => void {
  return (event) => {
    try {
      sink?.(event);
    } catch {
      // a display's problem must not end the batch
    }
  };
}

/** The context every stage of the batch reads; `persist` failures stop the batch (journal). */
function runContext(run: ResolvedRun, stops: StopControl): RunContext {
  const { options } = run;
  const signal = stops.abort.signal;
  return {
    inputDir: run.inputDir,
    outDir: run.outDir,
    recipe: options.recipe,
    signal,
    stopping: stops.stopping.signal,
    client: options.client,
    references: new SharedReferences({
      client: options.client,
      recipe: options.recipe,
      signal,
      filePollIntervalMs: run.filePollIntervalMs,
      ...(options.referenceMemory ? { memory: options.referenceMemory } : {}),
    }),
    poller: new GenerationPoller({
      get: (id, o) => options.client.generations.get(id, o),
      intervalMs: run.pollIntervalMs,
      maxGetsPerSecond: run.maxGetsPerSecond,
      schedule: run.pollSchedule,
      durations: options.jobDurations ?? new RecentJobDurations(),
      signal,
    }),
    legacyPoller: new GenerationPoller({
      get: async (id, o) => legacyAsGeneration(await options.client.legacy.get(id, o)),
      intervalMs: run.pollIntervalMs,
      maxGetsPerSecond: run.maxGetsPerSecond,
      schedule: run.pollSchedule,
      durations: options.jobDurations ?? new RecentJobDurations(),
      signal,
    }),
    completedReads: new Map(),
    persist: async (item) => {
      try {
        await run.persist(item);
      } catch (err) {
        // Another worker holds the item now (distributed mode): this one leaves it, the batch goes on.
        if (err instanceof ItemTakenOverError) throw err;
        throw stops.journalFailed(err);
      }
    },
    journalFailed: (err) => stops.journalFailed(err),
    redact: run.redact,
    settings: { filePollIntervalMs: run.filePollIntervalMs, base64MaxBytes: run.base64MaxBytes },
  };
}

interface BatchParts {
  stops: StopControl;
  pools: Pools;
  items: BatchItems;
  driver: ItemDriver;
  scheduler: Scheduler;
  emit: (event: PipelineEvent) => void;
}

/** The files found after the batch stopped, counted only; `partial` when the count was cut short. */
interface NotLookedAt {
  n: number;
  partial: boolean;
}

/**
 * Hands every found item (discovery or the `source`) to the scheduler, each with an in-flight slot;
 * once the batch stops, the one waiting for a slot is reported not processed and the rest are only
 * counted (no journal write, no report row: a stop's wind-down does not grow with the tree), until a
 * cancel (second signal) cuts the count short. What discovery leaves out goes to `ignored`. Each input
 * found goes to `seen`, for `vanished`; the scheduler takes it out again once its item was admitted (the
 * store then knows it was seen), so `seen` keeps only the inputs the store never saw: a batch of any
 * size does not keep every input in memory.
 */
async function feed(
  run: ResolvedRun,
  parts: BatchParts,
  seen: Set<string>,
  ignored: IgnoredEntries | null,
): Promise<{ notLookedAt: NotLookedAt }> {
  const { stops, pools, items, driver, scheduler, emit } = parts;
  const notLookedAt: NotLookedAt = { n: 0, partial: false };
  const walk =
    run.options.source ??
    discover(run.inputDir, {
      outDir: run.outDir,
      skipFiles: recipeFiles(run.options.recipe),
      onSkip: (input, reason) => ignored?.add(input, reason),
      ...(run.options.select ? { select: run.options.select } : {}),
    });
  try {
    for await (const found of walk) {
      // A walk of the input dir is only counted on after a stop; a source (watch) tells its own.
      if (stops.stop && !run.options.source) {
        notLookedAt.n++;
        // A cancel (second signal) cuts the count short; a local failure's abort counts on.
        if (stops.abort.signal.aborted && (!stops.failedLocally || run.options.signal?.aborted)) {
          notLookedAt.partial = true;
          break;
        }
        continue;
      }
      seen.add(inputKey(found));
      emit({ type: 'item_discovered', at: Date.now(), input: found.input, size: found.size });
      await run.options.intakeGate?.wait(stops.stopping.signal);
      const slot = stops.stop ? null : await pools.inFlight.acquire(stops.stopping.signal).catch(() => null);
      if (slot) {
        scheduler.start(found, slot);
      } else if (!scheduler.isActive(inputKey(found))) {
        // Saved as found first, as start does: a new look at the file, not the earlier item's row.
        await driver.persist(found).catch(() => undefined);
        await driver.record(items.nextEntry(), await driver.placed(driver.stoppedItem(found)), null);
      }
    }
  } catch (err) {
    if (items.size === 0 && !stops.stop) throw err;
    stops.trigger(
      `the input dir could not be read: ${err instanceof Error ? err.message : String(err)}`,
      'input',
    );
  }
  return { notLookedAt };
}

/**
 * Once the items ran out (unless the batch stopped): journaled work whose input was not seen, each
 * driven from its state so a paid generation is still collected.
 */
async function collectVanished(
  run: ResolvedRun,
  seen: Set<string>,
  parts: Omit<BatchParts, 'pools' | 'items'>,
): Promise<void> {
  const vanished = run.options.vanished;
  if (!vanished || parts.stops.stop) return;
  let back: Awaited<ReturnType<typeof vanished>> = [];
  try {
    back = await vanished((input) => seen.has(input));
  } catch (err) {
    parts.stops.journalFailed(err);
  }
  for (const d of back) await driveTakenUp(run, d, parts);
}

/** Drives a row the store took up (vanishedInFlight, or a decision's leftBehind) from its state. */
async function driveTakenUp(
  run: ResolvedRun,
  d: AdmitDecision,
  parts: Pick<BatchParts, 'scheduler' | 'emit'>,
): Promise<void> {
  const item: Item = { ...d.item, journal: { action: d.action, reason: d.reason } };
  parts.emit({ type: 'item_discovered', at: Date.now(), input: item.input, size: item.size });
  await sweepItemScratch(run.outDir, itemPlace(item)).catch(() => 0);
  parts.scheduler.start(item, null);
}

/**
 * `options` whose admit hands a decision's leftBehind (an earlier version left in flight: the store's
 * left-in-flight.ts) to `takeUp`, for the runner to drive it beside the file.
 */
function withLeftBehind(options: RunOptions, takeUp: (d: AdmitDecision) => void): RunOptions {
  const admit = options.admit;
  if (!admit) return options;
  return {
    ...options,
    admit: async (item, signal, waitedOn) => {
      const decision = await admit(item, signal, waitedOn);
      if (decision.leftBehind) takeUp(decision.leftBehind);
      return decision;
    },
  };
}
