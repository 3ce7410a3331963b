/**
 * A run's options, their defaults and their resolution (as fastify's `processOptions`): everything
 * the runner's parts read is taken from a RunOptions once, here, with its default applied.
 */

import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import type { GenpipeClient, JobDurations, PollScheduleName } from '../../client/index.ts';
import type { EventSink } from '../events.ts';
import type { InputSelection } from '../input-selection.ts';
import type { Item, ItemJournalNote } from '../item.ts';
import { POLL_DEFAULTS } from '../poller.ts';
import { createRedactor, type Redact } from '../progress/redact.ts';
import type { Recipe } from '../recipe.ts';
import type { ReferenceMemory } from '../references.ts';
import type { HeldBackFile, ReportIgnored, ReportJournalMeta } from '../report/index.ts';
import type { ReusedFrom } from '../reuse-outputs.ts';
import { BASE64_MAX_BYTES } from '../stages/upload.ts';
import type { IntakeGate } from './intake-gate.ts';
import { RUN_DEFAULTS } from './run-defaults.ts';

export { RUN_DEFAULTS } from './run-defaults.ts';

/** Options of a batch run. */
export interface RunOptions {
  inputDir: string;
  outDir: string;
  /** The loaded, validated recipe. */
  recipe: Recipe;
  /** The client to use (not closed by the runner). */
  client: GenpipeClient;
  /** Jobs in flight at most (default 32). */
  concurrency?: number;
  /**
   * The longest time between two reads of one job by the shared poll loop (default 2000 ms); with the
   * fixed schedule, the time between every two.
   */
  pollIntervalMs?: number;
  /** How the shared poll loop times its reads (default adaptive; see src/client/generation-poller.ts). */
  pollSchedule?: PollScheduleName;
  /**
   * How long jobs of each kind took (a store seeds and persists it); default: learned in this batch only.
   */
  jobDurations?: JobDurations;
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
   * The batch's result lists its items (BatchResult.items, read back once the reports are written).
   * Off by default: a batch keeps no finished item in memory.
   */
  keepItems?: boolean;
  /**
   * Where the items come from instead of discovering `inputDir` (genpipe watch: its ready files, as
   * `discovered` items, or journaled items in a later state). The batch ends when it ends.
   */
  source?: AsyncIterable<Item>;
  /**
   * Called once every file was found (the walk of the input dir ended, or the source did), while the
   * last ones may still be in progress: until then the totals count only the files found so far.
   */
  onFoundAll?: () => void;
  /** Paused, the files found wait before they are started (the dashboard's pause of a run). */
  intakeGate?: IntakeGate;
  /**
   * With `source`: what the source left out of the input folder, with why (watch: its last complete
   * rescan), for the reports' `ignored`; null while it does not know yet.
   */
  ignored?: () => ReportIgnored | null;
  /**
   * With `source`: the files it holds back as incomplete now, with why and since when (watch's), for
   * the reports' `held_back`; a change among them rewrites the reports.
   */
  heldBack?: () => readonly HeldBackFile[];
  /**
   * The files to take among those discovered (--include, --exclude, --max-files); the others are
   * listed as ignored with why. Not used with `source`.
   */
  select?: InputSelection;
  /**
   * The journal's decision for a planned item (before it is checked): continue with `item` from its
   * state. Called once per planned item, in the local pool, and again after a `wait` (`waitedOn`: the
   * row waited for).
   */
  admit?: (item: Item, signal: AbortSignal, waitedOn?: number) => Promise<AdmitDecision>;
  /**
   * Called once the items ran out (unless the batch stopped): journaled work whose input was not seen
   * in this batch, each to be driven from its state so a paid generation is still collected. `seen`
   * names the inputs found that `admit` never took (skipped, failed or stopped before planning); the
   * store leaves out those it admitted itself.
   */
  vanished?: (seen: (input: string) => boolean) => Promise<AdmitDecision[]>;
  /**
   * The place (out folder) of an item `admit` never decided on — skipped, or failed or stopped before
   * it was planned — for its result.json and its report entry (the journal's: never a folder holding
   * the service's work for another version of the file). Without it such an item uses its input path.
   */
  placeFor?: (item: Item) => Promise<string>;
  /**
   * Items earlier batches of the out dir finished (watch: the store's finishedItems), reported from the
   * start as they were, each until an item of this batch takes its place: a watch's reports are the
   * out dir's history, inputs an earlier session moved away included, not one session's.
   */
  earlier?: () => Promise<readonly Item[]>;
  /**
   * false: the batch writes no report.json / report.html and sweeps no batch-level scratch of the out
   * dir (a worker of distributed mode: the run that enqueued the batch writes its reports, and other
   * workers write in the same out dir). Default true.
   */
  reports?: boolean;
  /** Called with every item's final state when its drive ends (stopped included). */
  onItemEnded?: (item: Item) => void;
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
   * The items' stages run elsewhere (distributed mode's workers: `watch --store`): the runner hands
   * each item it takes to `delegate` instead of driving it, and reports what `tell` says of where it
   * stands meanwhile and the final item it resolves to. `stopping` aborts when the batch stops taking
   * new work: the delegate then resolves at once to the item as far as it knows (stopped). The runner's
   * source, reports, onItemDone and stop policy stay as they are.
   */
  delegate?: (item: Item, tell: (item: Item) => void, stopping: AbortSignal) => Promise<Item>;
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
  /** A resume of a file the earlier run sent nothing for: continued, not counted as resumed. */
  nothingSent?: boolean;
  /**
   * The other input with the same content and recipe the decision follows: reuse links its outputs
   * (its item's, under its place; a chain's `steps` only, when given) into this item's place; wait
   * waits for it.
   */
  sameContent?: ReusedFrom & { id: number; input: string; renamed?: true };
  /** wait: resolves when `admit` may be asked again, with `sameContent.id` as `waitedOn`. */
  settled?: (signal?: AbortSignal) => Promise<void>;
  /**
   * A dry run's preview only: the identity of the file's work (its content and recipe, opaque), and
   * whether another input's work of the same identity would stand for it (see the store's WorkIdentity).
   */
  work?: { id: string; mayReuse: boolean; steps?: Readonly<Record<string, string>> };
  /**
   * The earlier version of the file this decision replaced while its generation was in flight, resumed
   * to be collected into its own place: the runner drives it beside the file (after it). Absent otherwise.
   */
  leftBehind?: AdmitDecision;
}

/** A run's settings with every default applied (see resolveRunOptions). */
export interface ResolvedRun {
  options: RunOptions;
  inputDir: string;
  outDir: string;
  concurrency: number;
  localConcurrency: number;
  uploadConcurrency: number;
  downloadConcurrency: number;
  maxResubmits: number;
  changedAgainMax: number;
  reportIntervalMs: number;
  pollIntervalMs: number;
  pollSchedule: PollScheduleName;
  maxGetsPerSecond: number;
  filePollIntervalMs: number;
  base64MaxBytes: number;
  redact: Redact;
  persist: (item: Item) => Promise<void>;
  emulator: boolean;
}

/**
 * The settings of a run from its options: absolute dirs, counts floored to what works, defaults.
 *
 * @example resolveRunOptions({ inputDir: 'in', outDir: 'out', recipe, client }).concurrency // 32
 */
export function resolveRunOptions(options: RunOptions): ResolvedRun {
  return {
    options,
    inputDir: resolve(options.inputDir),
    outDir: resolve(options.outDir),
    concurrency: Math.max(1, Math.floor(options.concurrency ?? RUN_DEFAULTS.concurrency)),
    localConcurrency: Math.max(1, options.localConcurrency ?? Math.max(2, availableParallelism())),
    uploadConcurrency: Math.max(1, options.uploadConcurrency ?? RUN_DEFAULTS.uploadConcurrency),
    downloadConcurrency: Math.max(1, options.downloadConcurrency ?? RUN_DEFAULTS.downloadConcurrency),
    maxResubmits: Math.max(0, options.maxResubmits ?? RUN_DEFAULTS.maxResubmits),
    changedAgainMax: Math.max(0, options.changedAgainMax ?? RUN_DEFAULTS.changedAgainMax),
    reportIntervalMs: options.reportIntervalMs ?? RUN_DEFAULTS.reportIntervalMs,
    pollIntervalMs: options.pollIntervalMs ?? POLL_DEFAULTS.intervalMs,
    pollSchedule: options.pollSchedule ?? POLL_DEFAULTS.schedule,
    maxGetsPerSecond: options.maxGetsPerSecond ?? POLL_DEFAULTS.maxGetsPerSecond,
    filePollIntervalMs: options.filePollIntervalMs ?? RUN_DEFAULTS.filePollIntervalMs,
    base64MaxBytes: options.base64MaxBytes ?? BASE64_MAX_BYTES,
    redact: options.redact ?? createRedactor(),
    persist: options.persist ?? (async () => undefined),
    emulator: options.emulator ?? false,
  };
}
