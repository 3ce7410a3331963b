/**
 * The runner: moves every file of a batch through the stages of stage-list.ts, and owns everything the
 * stages do not — concurrency, pacing waits, cancellation, retries, persistence, events and reports.
 *
 * - Files stream from discovery (or from `source`: genpipe watch's ready files); at most
 *   `maxInFlight` items are being worked on at once, so memory and work stay bounded whatever the size
 *   of the tree (a finished item is kept only as its small report record). Two items of the same input
 *   (watch: a file that changed while its earlier version was processed) never run at once.
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
 *   and every other file — including those not yet discovered — is reported as not processed.
 *   With `stopGraceMs`, stop() gives that work only so long: then it is cancelled too (the journal
 *   keeps what it reached, for the next run). Aborting `signal` cancels in-flight work at once.
 * - report.json and report.html are rewritten every `reportIntervalMs` while items change, and at the end.
 */
import { setMaxListeners } from 'node:events';
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import pLimit from 'p-limit';
import { type GenpipeClient, GenpipeError, sleep } from '../client/index.ts';
import { discover } from './discover.ts';
import type { EventSink, PipelineEvent } from './events.ts';
import { isRetryableFailureCode } from './failure-class.ts';
import { INPUT_CHANGED_TEXTS, InputChangedError } from './input-changed.ts';
import { FINAL_ITEM_STATES, type Item, type ItemJournalNote, newItem, type StageName } from './item.ts';
import { sha256File } from './journal/content-hash.ts';
import { JOURNAL_TEXTS } from './journal/texts.ts';
import { GenerationPoller, POLL_DEFAULTS } from './poller.ts';
import { createRedactor, type Redact } from './progress/redact.ts';
import { type Recipe, recipeFiles } from './recipe.ts';
import { type ReferenceMemory, SharedReferences } from './references.ts';
import {
  type BatchReport,
  itemPlace,
  type ReportJournalMeta,
  uniqueItems,
  unprocessedReason,
  writeReports,
} from './report/index.ts';
import { writeResultJson } from './report/result-json.ts';
import type { RunContext } from './run-context.ts';
import { batchStopReason, isAbort } from './runner-errors.ts';
import { type Release, Slots } from './runner-slots.ts';
import { sweepBatchScratch, sweepItemScratch } from './runner-sweep.ts';
import { failItem } from './stage.ts';
import { type PoolName, type StageStep, stepFor } from './stage-list.ts';
import { BASE64_MAX_BYTES } from './stages/upload.ts';
import { uploadsGone } from './uploads-gone.ts';

/**
 * True when a create that escaped the submit stage was answered by the service (an HTTP status: a
 * batch-stopping 401, 402, 403 or a 502/503 that outlasted the client's retries), which queues nothing.
 * A connection failure or a timeout may have reached the service: not this.
 */
function createRefused(err: unknown): boolean {
  return err instanceof GenpipeError && err.status !== null;
}

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
  /**
   * Times one item whose file changed after its check is processed again from the start in a run;
   * once more and it fails (retryably: the next run tries it again).
   */
  changedAgainMax: 3,
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
  persist?: (item: Item) => Promise<void>;
  /** Masks secrets in what is written (default: key- and bearer-shaped strings). */
  redact?: Redact;
  /** The batch runs against the embedded emulator (said in the report). */
  emulator?: boolean;
  /** ms between report rewrites while running; 0 for only at the end (default 5000). */
  reportIntervalMs?: number;
  /**
   * Where the items come from instead of discovering `inputDir` (genpipe watch: its ready files, as
   * `discovered` items, or journaled items in a later state). The batch ends when it ends.
   */
  source?: AsyncIterable<Item>;
  /**
   * The journal's decision for a planned item (before it is checked): continue with `item` from its
   * state. Called once per planned item, in the local pool.
   */
  admit?: (item: Item, signal: AbortSignal) => Promise<AdmitDecision>;
  /**
   * Called once the items ran out (unless the batch stopped): journaled work whose input was not seen
   * in this batch (`seen`), each to be driven from its state so a paid generation is still collected.
   */
  vanished?: (seen: (input: string) => boolean) => Promise<AdmitDecision[]>;
  /**
   * The place (out folder) of an item `admit` never decided on — skipped, or failed or stopped before
   * it was planned — for its result.json and its report entry (the journal's: never a folder holding
   * the service's work for another version of the file). Without it such an item uses its input path.
   */
  placeFor?: (item: Item) => Promise<string>;
  /** A reason to fail an item at check instead of checking it (watch: a file that never became complete). */
  failAtCheck?: (item: Item) => string | null;
  /**
   * An item whose file is found changed since its check, before anything was created from it
   * (InputChangedError): `again` (default) processes it again from the start at once — the same path,
   * looked at anew: sniff, plan, admit (its new key), check —, at most `changedAgainMax` times in the
   * batch, then fails it with a retryable failure; `source` ends it not processed, for the source to
   * hand the file over again (watch: once the file is stable; the new item waits for this one).
   */
  inputChanged?: 'again' | 'source';
  /** See inputChanged (default RUN_DEFAULTS.changedAgainMax). */
  changedAgainMax?: number;
  /**
   * Called when an item reached its final state and its result is recorded (watch --on-done). It may
   * return the item with a new `absPath` (the input was moved), which the reports then show.
   */
  onItemDone?: (item: Item) => undefined | Item | Promise<undefined | Item>;
  /**
   * After stop(): how long work already at the service may go on before it is cancelled as well (the
   * journal keeps what each item reached). Default: no limit (it is finished).
   */
  stopGraceMs?: number;
  /** The batch runs with a journal: shown in report.json and report.html. */
  journal?: ReportJournalMeta | null;
  /** Shared reference uploads of earlier runs to reuse (the journal). */
  referenceMemory?: ReferenceMemory;
}

/** What `admit` decides for an item (the journal's JournalDecision fits). */
export interface AdmitDecision {
  /** fresh: process from the start; resume: continue from `item.state`; done: `item` is final. */
  action: ItemJournalNote['action'];
  item: Item;
  /** Why, in words (null for a file never seen before). */
  reason: string | null;
  /** The item failed in an earlier run and is tried again (fresh or resumed). */
  retried?: boolean;
}

/** The journal could not record a transition: the batch stops at once (see RunOptions.persist). */
export class JournalWriteError extends Error {
  override name = 'JournalWriteError';
}

/** Why a batch ended early. */
export interface BatchStop {
  reason: string;
  /**
   * service: 401/402/403/unreachable; interrupted: stop() (SIGINT); aborted: the signal; input: the
   * input dir could not be read; journal: the journal could not be written.
   */
  cause: 'service' | 'interrupted' | 'aborted' | 'input' | 'journal';
}

/** What a batch ends with. */
export interface BatchResult {
  report: BatchReport;
  /** Every item in its final state (one per place), sorted by input path. */
  items: Item[];
  stop: BatchStop | null;
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
   */
  stop(reason?: string): void;
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
  const changedAgainMax = Math.max(0, options.changedAgainMax ?? RUN_DEFAULTS.changedAgainMax);
  const reportIntervalMs = options.reportIntervalMs ?? RUN_DEFAULTS.reportIntervalMs;
  const redact = options.redact ?? createRedactor();
  const persistHook = options.persist ?? (async () => undefined);
  const startedAt = Date.now();

  // Cancellation: `abort` cancels in-flight work; `stopping` only stops new work.
  const abort = new AbortController();
  const stopping = new AbortController();
  // Every in-flight stage, request and slot wait listens to these: many more than Node's warning limit.
  setMaxListeners(0, abort.signal, stopping.signal);
  let stop: BatchStop | null = null;
  let graceTimer: NodeJS.Timeout | null = null;

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

  /** The journal failed: nothing more may be sent (a create whose id cannot be recorded could be paid twice). */
  const journalFailed = (err: unknown): JournalWriteError => {
    if (err instanceof JournalWriteError) return err;
    const why = err instanceof Error ? err.message : String(err);
    const failure = new JournalWriteError(`the journal could not be written (${why})`);
    triggerStop(`${failure.message}; stopped so that no work is sent without being recorded`, 'journal');
    abort.abort(failure);
    return failure;
  };

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
      ...(options.referenceMemory ? { memory: options.referenceMemory } : {}),
    }),
    poller,
    persist: async (item) => {
      try {
        await persistHook(item);
      } catch (err) {
        throw journalFailed(err);
      }
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

  /**
   * Every item of the batch in its latest state (for the reports), by entry: one entry per item
   * started, in the order they started (watch may start several items of one input, one after another).
   * An entry is dropped once a later item takes its place (see keep).
   */
  const items = new Map<number, Item>();
  let lastEntry = 0;
  /** The entry reported at each place. */
  const entryAt = new Map<string, number>();
  /** Items changed since the reports were last written. */
  let reportsStale = true;

  /**
   * The items to report, one per place (a later item in the same folder replaces an earlier one). An
   * item not yet admitted has no place of its own: until it has one or ends, it does not hide an
   * earlier item of its input.
   */
  const reportItems = (): Item[] => {
    const byPlace = new Map<string, Item>();
    for (const item of items.values()) {
      const place = itemPlace(item);
      if (item.place === undefined && !FINAL_ITEM_STATES.includes(item.state) && byPlace.has(place)) continue;
      byPlace.set(place, item);
    }
    return uniqueItems(byPlace.values());
  };

  /** Keeps the item of `entry`; once it has a place (or ends), it replaces an earlier item there. */
  const keep = (entry: number, item: Item): void => {
    items.set(entry, item);
    reportsStale = true;
    if (item.place === undefined && !FINAL_ITEM_STATES.includes(item.state)) return;
    const place = itemPlace(item);
    const before = entryAt.get(place);
    if (before !== undefined && before !== entry) items.delete(before);
    entryAt.set(place, entry);
  };

  /** A final item admit never decided on, with the place `placeFor` gives it. */
  const placed = async (item: Item): Promise<Item> => {
    if (item.place !== undefined || !options.placeFor || !FINAL_ITEM_STATES.includes(item.state)) return item;
    try {
      return { ...item, place: await options.placeFor(item) };
    } catch {
      return item; // the journal failed: the input path, as without one
    }
  };

  /** Keeps, journals and announces an item's transition (`reason` overrides the item's in the event). */
  const record = async (
    entry: number,
    item: Item,
    stage: StageName | null,
    reason = item.reason,
  ): Promise<void> => {
    keep(entry, item);
    try {
      await ctx.persist(item);
    } catch {
      // journalFailed stopped the batch; the item is still reported
    }
    // A failed item's stage is the one that failed it, as in report.json (an item the journal fails at
    // admission failed at `submit`, not at the plan stage it came from). An item the journal reports as
    // an earlier run left it ran no stage in this one.
    const fromJournal = item.journal?.action === 'done';
    const at = fromJournal ? null : item.state === 'failed' && item.failedAt ? item.failedAt : stage;
    emit({
      type: 'item_state',
      at: Date.now(),
      input: item.input,
      ...(item.place !== undefined ? { place: item.place } : {}),
      state: item.state,
      stage: at,
      reason,
      ...(fromJournal ? { from_journal: true as const } : {}),
    });
  };

  const stoppedItem = (item: Item): Item => {
    const base = unprocessedReason(stop ? { reason: stop.reason } : null);
    const later = options.admit ? '; the next run continues it from the journal' : '';
    const reason =
      item.generationId && item.state !== 'failed'
        ? `${base}; generation ${item.generationId} was submitted, but its outcome was not collected${later}`
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
    if (err instanceof JournalWriteError || isAbort(err, abort.signal) || abort.signal.aborted) {
      return stoppedItem(item);
    }
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
      if (err instanceof InputChangedError) throw err; // drive's to handle
      if (step.name === 'submit' && createRefused(err)) {
        // The service answered the create with a refusal that stops the batch (a 503 that outlasted
        // the retries, 401, 402, 403): nothing was queued, so its request id was never used. Recorded
        // so, the next run submits the file instead of taking the create for one of unknown outcome.
        await ctx.persist(begun).catch(() => undefined);
      }
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
    failure: null,
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

  /**
   * A decision to resume at `uploaded` turned fresh when an upload it would submit with is no longer at
   * the service (uploadsGone); an error of the check leaves the decision to submit.
   */
  const checkedUploads = async (planned: Item, decision: AdmitDecision): Promise<AdmitDecision> => {
    if (decision.action !== 'resume' || decision.item.state !== 'uploaded') return decision;
    let gone: string[];
    try {
      gone = await uploadsGone(decision.item, options.client, abort.signal);
    } catch {
      return decision;
    }
    if (gone.length === 0) return decision;
    const earlier = decision.item.earlierAttempts;
    return {
      ...decision,
      action: 'fresh',
      item: earlier ? { ...planned, earlierAttempts: earlier } : planned,
      reason: decision.reason ? `${decision.reason}; ${JOURNAL_TEXTS.uploadGone}` : JOURNAL_TEXTS.uploadGone,
    };
  };

  /**
   * Without a journal: the planned item with its content hash, taken where admit would take it (before
   * the check), in the local pool.
   */
  const hashed = async (item: Item): Promise<Item> => {
    try {
      return { ...item, contentHash: await pools.local(() => sha256File(item.absPath, abort.signal)) };
    } catch (err) {
      if (isAbort(err, abort.signal) || abort.signal.aborted) return stoppedItem(item);
      return failItem(item, 'plan', 'file not found or not readable');
    }
  };

  /**
   * An item whose file changed since its check (`step` found it: InputChangedError), for the
   * `changes`-th time in this drive: a fresh item of the same path, to be processed again from the
   * start; failed retryably past changedAgainMax; not processed with `inputChanged: 'source'`.
   */
  const afterChange = async (item: Item, step: StageStep, changes: number): Promise<Item> => {
    if (options.inputChanged === 'source') {
      return { ...item, state: 'stopped', reason: INPUT_CHANGED_TEXTS.watch };
    }
    if (changes > changedAgainMax) {
      return failItem(item, step.name, INPUT_CHANGED_TEXTS.tooOften(changes), {
        failure: { kind: INPUT_CHANGED_TEXTS.failureKind, retryable: true },
      });
    }
    const now = await stat(item.absPath).catch(() => null);
    return newItem(item.input, item.absPath, now?.size ?? item.size, now?.mtimeMs ?? item.mtimeMs);
  };

  /** A planned item through `admit` (the journal), in the local pool: the item to continue with. */
  const admitted = async (item: Item): Promise<{ item: Item; reason: string | null }> => {
    const admit = options.admit;
    if (!admit) return { item, reason: item.reason };
    if (stop) return { item: stoppedItem(item), reason: null };
    let decision: AdmitDecision;
    try {
      decision = await pools.local(() => admit(item, abort.signal));
    } catch (err) {
      if (isAbort(err, abort.signal) || abort.signal.aborted)
        return { item: stoppedItem(item), reason: null };
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR') {
        return { item: failItem(item, 'plan', 'file not found or not readable'), reason: null };
      }
      journalFailed(err);
      return { item: stoppedItem(item), reason: null };
    }
    // The key's content hash, which a decision turned fresh by checkedUploads would drop.
    const contentHash = decision.item.contentHash;
    decision = await checkedUploads(item, decision);
    const note: ItemJournalNote = {
      action: decision.action,
      reason: decision.reason,
      ...(decision.retried ? { retried: true } : {}),
    };
    if (decision.action !== 'fresh') await sweepItemScratch(outDir, itemPlace(decision.item)).catch(() => 0);
    return {
      item: { ...decision.item, ...(contentHash !== undefined ? { contentHash } : {}), journal: note },
      reason: decision.reason ?? decision.item.reason,
    };
  };

  /**
   * A job slot for an item that enters `wait` without going through submit (resumed by the journal):
   * its generation counts against --concurrency like any other. Not taken once the batch stops.
   */
  const slotForResumed = (item: Item): Promise<Release | null> =>
    item.state === 'submitted' && !stop
      ? jobs.acquire(stopping.signal).catch(() => null)
      : Promise.resolve(null);

  const drive = async (entry: number, first: Item): Promise<void> => {
    let item = first;
    let job: Release | null = await slotForResumed(item);
    /** Resubmissions of the item's generation in this run (--retries counts per run). */
    let resubmits = 0;
    /** Times the item's file was found changed since its check (see afterChange). */
    let changes = 0;
    try {
      for (;;) {
        const step = stepFor(item.state);
        if (!step) break;
        let next: Item;
        const failNow = step.name === 'check' ? (options.failAtCheck?.(item) ?? null) : null;
        try {
          if (stop && !step.whileStopping) {
            next = stoppedItem(item);
          } else if (failNow !== null) {
            next = failItem(item, 'check', failNow, { media: { bytes: item.size } });
          } else if (step.pool === 'jobs') {
            try {
              job = await jobs.acquire(stopping.signal);
              next = await runStep(step, item);
            } catch (err) {
              if (err instanceof InputChangedError) throw err;
              next = stop ? stoppedItem(item) : afterThrow(item, step, err);
            }
          } else if (step.pool === 'poll') {
            next = await runStep(step, item);
          } else {
            const pool = pools[step.pool];
            next = await pool(() => runStep(step, item));
          }
        } catch (err) {
          if (!(err instanceof InputChangedError)) throw err;
          // Nothing was created from the changed bytes: the job slot is free again.
          if (job) {
            job();
            job = null;
          }
          changes++;
          item = await afterChange(item, step, changes);
          const why = item.state === 'discovered' ? INPUT_CHANGED_TEXTS.again : item.reason;
          await record(entry, item, step.name, why);
          continue;
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
          isRetryableFailureCode(next.generation.failure_code) &&
          resubmits < maxResubmits
        ) {
          resubmits++;
          const why = `resubmitting after ${next.reason} (attempt ${resubmits + 1} of ${maxResubmits + 1})`;
          item = resubmitted(next);
          await record(entry, item, step.name, why);
          // A stop ends the wait; the item then ends stopped, its resubmission recorded.
          await sleep(options.client.generations.resubmitDelay(resubmits), stopping.signal).catch(() => {});
          continue;
        }
        if (step.name === 'plan' && next.state === 'planned' && !options.admit) {
          item = await placed(await hashed(next));
          await record(entry, item, item.state === 'stopped' ? null : step.name);
          continue;
        }
        if (step.name === 'plan' && next.state === 'planned' && options.admit) {
          const a = await admitted(next);
          item = await placed(a.item);
          await record(entry, item, item.state === 'stopped' ? null : step.name, a.reason);
          job ??= await slotForResumed(item);
          continue;
        }
        item = await placed(next);
        await record(entry, item, item.state === 'stopped' ? null : step.name);
      }
      if (item.state === 'failed' || item.state === 'skipped') {
        await writeResultJson(item, outDir, { redact }).catch(() => undefined);
      }
    } finally {
      if (job) job();
    }
    if (options.onItemDone && item.state !== 'stopped') {
      try {
        const moved = await options.onItemDone(item);
        if (moved && items.get(entry) === item) keep(entry, moved);
      } catch {
        // the hook reports its own problems; the item's result stands
      }
    }
  };

  // ---- reports --------------------------------------------------------------------------------
  let reportWriting: Promise<unknown> | null = null;
  const meta = {
    startedAt,
    redact,
    inputDir,
    emulator: options.emulator ?? false,
    journal: options.journal ?? null,
  };
  const refreshReports = (): void => {
    if (reportWriting || !reportsStale) return;
    reportsStale = false;
    reportWriting = writeReports(outDir, reportItems(), { ...meta, now: Date.now() })
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
    /** The task working on each input (a later item of the same input waits for it). */
    const active = new Map<string, Promise<void>>();
    /** Inputs this batch has seen (for `vanished`). */
    const seen = new Set<string>();
    const start = (found: Item, release: Release | null): void => {
      const before = active.get(found.input);
      const entry = ++lastEntry;
      const task = (async () => {
        if (before) await before;
        keep(entry, found);
        try {
          await ctx.persist(found);
        } catch {
          // journalFailed stopped the batch; drive reports the item as stopped
        }
        await drive(entry, found);
      })().finally(() => release?.());
      active.set(found.input, task);
      tasks.add(task);
      void task.finally(() => {
        tasks.delete(task);
        if (active.get(found.input) === task) active.delete(found.input);
      });
    };
    try {
      await sweepBatchScratch(outDir).catch(() => 0);
      const walk = options.source ?? discover(inputDir, { outDir, skipFiles: recipeFiles(options.recipe) });
      try {
        for await (const found of walk) {
          seen.add(found.input);
          emit({ type: 'item_discovered', at: Date.now(), input: found.input, size: found.size });
          let slot: Release | null = null;
          if (!stop) slot = await inFlight.acquire(stopping.signal).catch(() => null);
          if (!slot) {
            if (!active.has(found.input)) {
              // Saved as found first, as start does: a new look at the file, not the earlier item's row.
              await ctx.persist(found).catch(() => undefined);
              await record(++lastEntry, await placed(stoppedItem(found)), null);
            }
            continue;
          }
          start(found, slot);
        }
      } catch (err) {
        if (items.size === 0 && !stop) throw err;
        triggerStop(
          `the input dir could not be read: ${err instanceof Error ? err.message : String(err)}`,
          'input',
        );
      }
      if (options.vanished && !stop) {
        let back: AdmitDecision[] = [];
        try {
          back = await options.vanished((input) => seen.has(input));
        } catch (err) {
          journalFailed(err);
        }
        for (const d of back) {
          const item: Item = { ...d.item, journal: { action: d.action, reason: d.reason } };
          emit({ type: 'item_discovered', at: Date.now(), input: item.input, size: item.size });
          await sweepItemScratch(outDir, itemPlace(item)).catch(() => 0);
          start(item, null);
        }
      }
      while (tasks.size > 0) await Promise.all(tasks);
    } finally {
      if (reportTimer) clearInterval(reportTimer);
      if (graceTimer) clearTimeout(graceTimer);
      poller.close();
      options.signal?.removeEventListener('abort', onOuterAbort);
    }
    if (reportWriting) await reportWriting;
    const finishedAt = Date.now();
    const finalStop = stop as BatchStop | null;
    const all = reportItems();
    const report = await writeReports(outDir, all, {
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
    return { report, items: all, stop: finalStop, startedAt, finishedAt };
  };

  return {
    done: run(),
    stop: (reason = 'interrupted') => {
      triggerStop(reason, 'interrupted');
      const grace = options.stopGraceMs;
      if (grace !== undefined && graceTimer === null && !abort.signal.aborted) {
        graceTimer = setTimeout(() => {
          abort.abort(new DOMException('the stop grace period ran out', 'AbortError'));
        }, grace);
        graceTimer.unref();
      }
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
