/**
 * What the dashboard shows of a batch, kept from its events (PipelineEvent) or read from a journal:
 * one row per file (by input) in its latest state, a short history of its transitions for the detail
 * pane, the counts by status, and the batch's own line (started, stopping, finished). Rows changed
 * since the last `takeChanges` are what the server streams (Server-Sent Events) to the pages.
 *
 * Nothing here holds a secret: events carry none (the runner redacts its reasons), and a row keeps
 * only what an event says of a file.
 */
import type { GenerationType } from '../../spec/index.ts';
import { type PriceList, priceOf } from '../dry-run/price-list.ts';
import { itemStatus, type PipelineEvent } from '../events.ts';
import { FINAL_ITEM_STATES, type ItemGeneration, type ItemState } from '../item.ts';
import type { DashboardQuota } from './quota-view.ts';

/** A file's status on the page: the report's, with `reused` for one done in an earlier run. */
export type DashboardStatus = 'pending' | 'succeeded' | 'reused' | 'failed' | 'skipped' | 'unprocessed';

/** One transition of a file, for its detail pane. */
export interface DashboardStep {
  at: number;
  state: ItemState;
  stage: string | null;
  step: string | null;
  reason: string | null;
}

/** One file as the page shows it. */
export interface DashboardRow {
  /** The row's number in this process (stable: the thumbnail's and the actions' handle). */
  id: number;
  input: string;
  place: string | null;
  status: DashboardStatus;
  state: ItemState;
  stage: string | null;
  /** A chain's step the file is at; null for a single-request rule. */
  step: string | null;
  reason: string | null;
  generationId: string | null;
  requestId: string | null;
  /** The model's change count at the row's last change (what a page's stream resumes from). */
  seq: number;
  /** First and latest event of the file (ms since the epoch). */
  firstAt: number;
  lastAt: number;
  /** Has a thumbnail (an image or a video by its name). */
  thumb: boolean;
  /** The out dir the file is of, as shown, on a page of many (a store's); null otherwise. */
  outDir: string | null;
  /** The process that last worked on it (`host pid N`), when the store says; null otherwise. */
  by: string | null;
}

/** The batch's own line. */
export interface DashboardBatch {
  command: string;
  startedAt: number | null;
  stopping: string | null;
  finishedAt: number | null;
  /** A watch's files held back as incomplete (with why), from its source; empty otherwise. */
  heldBack: { input: string; reason: string; since: number }[];
  /**
   * A watch's files not started yet: settling (being written; since when unchanged) and found, waiting
   * for the intake (in the order they are taken); at most WAITING_SHOWN of each. Null: not a watch.
   */
  waiting: { settling: { input: string; since: number }[]; queued: string[] } | null;
  /** True for a page served from an out dir's journal, nothing running. */
  readOnly: boolean;
  /** The client's quota now (null: no client, as from a journal). */
  quota: DashboardQuota | null;
  /** The intake is paused (the dashboard's pause of a watch). */
  intakePaused: boolean;
  /** Files found and waiting for the intake (a watch's queue, shown while it is paused). */
  intakeWaiting: number;
  /** The actions that cannot apply in the batch's state now, with why (actionsNotNow; shown disabled). */
  notNow: Record<string, string>;
  /** The workers on the store (`genpipe dashboard --store`); null: no store read. */
  workers: DashboardWorker[] | null;
  /** Their count as `genpipe status` says it (`2 alive, 1 gone; and 1 run --no-work, …`); null: none read. */
  workersSaid: string | null;
  /** Credits spent and estimated (null: no prices known). */
  credits: DashboardCredits | null;
  /** The out dirs of a page of many (a store's), as shown; null on a page of one. */
  outDirs: string[] | null;
  /**
   * A run still walking its input dir: the counts, the time left and the credits cover only the files
   * found so far (each a lower bound). False once every file was found, and for a watch (its inbox has
   * no end) or a page read from a journal.
   */
  finding: boolean;
  /**
   * Files finished per minute while files were in progress (the time with none in progress left out,
   * as a watch's idle inbox), over the last RATE_FILES finished in this batch; null before the first.
   */
  perMinute: number | null;
}

/** What the files' generations cost, at the dry run's prices (priceOf). */
export interface DashboardCredits {
  /** The generations the service completed for the files of this batch (not those reused from earlier runs). */
  spent: number;
  /** Spent, and the price of what the files not finished yet still ask for (a file not planned yet: the mean of those planned). */
  estimated: number;
  /** Where the prices came from, in words. */
  source: string;
  /** Generation types the prices do not name (not counted). */
  unpriced: string[];
}

/** A worker on the store, as its heartbeat row says. */
export interface DashboardWorker {
  host: string;
  pid: number;
  /** A worker, a distributed run, or a `run --no-work` (works on no file). */
  role: string;
  alive: boolean;
  inHand: number;
  seenAgoMs: number;
  /** The files it last worked on that are not finished (at most WORKER_FILES_SHOWN). */
  files: string[];
}

/** Files listed of each kind a watch has waiting (DashboardBatch.waiting). */
export const WAITING_SHOWN = 200;

/** Files named per worker on the page. */
export const WORKER_FILES_SHOWN = 20;

/** Everything the page needs at first paint. */
export interface DashboardSnapshot {
  batch: DashboardBatch;
  counts: Record<string, number>;
  rows: DashboardRow[];
  /** The actions this process can take (none for a read-only page). */
  actions: string[];
  /** The change count it was read at: its stream resumes after it (`api/events?after=`). */
  seq: number;
  /** Actions it cannot take, with why (shown disabled). */
  unavailable: Record<string, string>;
}

/** Generations counted by type. */
type Count = Partial<Record<GenerationType, number>>;

function add(count: Count, type: string): void {
  const t = type as GenerationType;
  count[t] = (count[t] ?? 0) + 1;
}

/** Files finished last that the rate is measured over (BatchLine.perMinute). */
export const RATE_FILES = 200;

/**
 * Files finished per minute of busy time (see DashboardBatch.perMinute): over the last RATE_FILES
 * rows finished since `since`, the time covered by at least one file in progress (each row from its
 * start to its end, a pending one to `now`); null when none finished.
 */
export function busyRate(rows: Iterable<DashboardRow>, since: number, now: number): number | null {
  const finished: DashboardRow[] = [];
  const spans: [number, number][] = [];
  for (const r of rows) {
    if (r.status === 'pending') spans.push([r.firstAt, now]);
    else if ((r.status === 'succeeded' || r.status === 'failed') && r.lastAt >= since) finished.push(r);
  }
  if (finished.length === 0) return null;
  finished.sort((a, b) => b.lastAt - a.lastAt);
  const recent = finished.slice(0, RATE_FILES);
  const from = Math.min(...recent.map((r) => r.firstAt));
  for (const r of recent) spans.push([r.firstAt, r.lastAt]);
  spans.sort((a, b) => a[0] - b[0]);
  let busy = 0;
  let end = -Infinity;
  for (const [a0, b] of spans) {
    const a = Math.max(a0, from, end);
    if (b > a) busy += b - a;
    end = Math.max(end, b);
  }
  return busy <= 0 ? null : Number(((recent.length * 60_000) / busy).toFixed(1));
}

/** Transitions kept per file for its detail pane. */
const HISTORY_LIMIT = 40;
/**
 * Files whose transitions are kept, the latest changed (a long watch sees files without end: the
 * steps of one long finished are dropped, its row and its result.json stay).
 */
export const HISTORY_FILES = 2_000;

const THUMB_NAME = /\.(png|jpe?g|webp|gif|avif|heic|heif|tiff?|mp4|mov|m4v|webm|mkv|avi)$/i;

/**
 * The page's status of an item state: report.json's `status`, `reused` for one whose outputs are an
 * earlier run's or another input's (`reused`: from the journal, or workReused).
 */
export function statusOf(state: ItemState, reused: boolean): DashboardStatus {
  const status = itemStatus({ state });
  return status === 'succeeded' && reused ? 'reused' : status;
}

/** The page's actions that cannot apply in the batch's state now, each with why (the page disables them). */
export function actionsNotNow(
  batch: Pick<DashboardBatch, 'finishedAt' | 'stopping' | 'intakePaused'>,
): Record<string, string> {
  const ended = batch.finishedAt !== null ? 'the batch has ended' : batch.stopping;
  if (ended !== null) {
    return { stop: ended, pause: ended, resume: ended, retry: ended, 'retry-all': ended };
  }
  return batch.intakePaused
    ? { pause: 'the intake is paused already' }
    : { resume: 'the intake is not paused' };
}

/** The counts the page shows at a glance: by status, and files in progress by state. */
export function countRows(rows: Iterable<DashboardRow>): Record<string, number> {
  const counts: Record<string, number> = { total: 0 };
  for (const r of rows) {
    counts.total = (counts.total ?? 0) + 1;
    counts[r.status] = (counts[r.status] ?? 0) + 1;
    if (r.status === 'pending') counts[`in_${r.state}`] = (counts[`in_${r.state}`] ?? 0) + 1;
  }
  return counts;
}

/** The rows of a batch, kept from its events (see the module comment). */
export class DashboardModel {
  private readonly rows = new Map<string, DashboardRow>();
  private readonly byId = new Map<number, DashboardRow>();
  private readonly history = new Map<number, DashboardStep[]>();
  private readonly changed = new Set<DashboardRow>();
  /** Each file's generations (by row id), once planned. */
  private readonly generations = new Map<number, ItemGeneration[]>();
  /** Rows whose work another input's stood for (workReused): they cost nothing. */
  private readonly reusedWork = new Set<number>();
  private prices: { list: PriceList; source: string } | null = null;
  /** Changes so far (each row keeps the count at its last: Row.seq). */
  private seq = 0;
  private nextId = 1;
  readonly batch: DashboardBatch;

  /** @param historyFiles - files whose transitions are kept (HISTORY_FILES) */
  constructor(
    command: string,
    readOnly = false,
    private readonly historyFiles = HISTORY_FILES,
  ) {
    this.batch = {
      command,
      startedAt: null,
      stopping: null,
      finishedAt: null,
      heldBack: [],
      waiting: null,
      readOnly,
      quota: null,
      intakePaused: false,
      intakeWaiting: 0,
      notNow: {},
      workers: null,
      workersSaid: null,
      credits: null,
      outDirs: null,
      finding: command === 'run' && !readOnly,
      perMinute: null,
    };
  }

  /** Every file of the batch was found (RunOptions.onFoundAll): the totals are the batch's. */
  foundAll(): void {
    this.batch.finding = false;
  }

  /** The prices the credits are counted at (the dry run's: --price-list, or the emulator's costs). */
  setPrices(prices: PriceList | null, source: string | null): void {
    this.prices = prices === null || source === null ? null : { list: prices, source };
  }

  /** Takes one event of the batch in (a sink of RunOptions.onEvent). */
  apply(event: PipelineEvent): void {
    switch (event.type) {
      case 'batch_started':
        this.batch.startedAt = event.at;
        return;
      case 'batch_stopping':
        this.batch.stopping = event.end ? `stopping: ${event.end}` : `stopping early: ${event.reason}`;
        return;
      case 'batch_finished':
        this.batch.finishedAt = event.at;
        return;
      case 'item_discovered':
        this.upsert(event.input, event.at, 'discovered', {});
        return;
      case 'item_state':
        this.upsert(event.input, event.at, event.state, {
          place: event.place ?? null,
          stage: event.stage,
          step: event.step ?? null,
          reason: event.reason,
          generationId: event.generation_id ?? null,
          requestId: event.request_id ?? null,
          fromJournal: event.from_journal === true,
          reused: event.reused === true,
          ...(event.generations ? { generations: event.generations } : {}),
        });
        return;
    }
  }

  /** A file's row as a journal row or an event says it (the fields given replace the row's). */
  upsert(
    input: string,
    at: number,
    state: ItemState,
    patch: Partial<
      Pick<
        DashboardRow,
        'place' | 'stage' | 'step' | 'reason' | 'generationId' | 'requestId' | 'outDir' | 'by'
      >
    > & {
      fromJournal?: boolean;
      /** Another input's work stood for the file's (workReused). */
      reused?: boolean;
      firstAt?: number;
      generations?: ItemGeneration[];
    },
  ): DashboardRow {
    let row = this.rows.get(input);
    if (!row) {
      row = {
        id: this.nextId++,
        input,
        place: null,
        status: 'pending',
        state,
        stage: null,
        step: null,
        reason: null,
        generationId: null,
        requestId: null,
        seq: 0,
        firstAt: patch.firstAt ?? at,
        lastAt: at,
        thumb: THUMB_NAME.test(input),
        outDir: null,
        by: null,
      };
      this.rows.set(input, row);
      this.byId.set(row.id, row);
    } else if (FINAL_ITEM_STATES.includes(row.state) && !FINAL_ITEM_STATES.includes(state)) {
      // A file taken again (a retry, a changed file): its timings start again.
      row.firstAt = at;
      row.generationId = null;
      row.requestId = null;
    }
    this.seq += 1;
    row.seq = this.seq;
    row.state = state;
    row.status = statusOf(state, patch.fromJournal === true || patch.reused === true);
    if (patch.reused === true) this.reusedWork.add(row.id);
    else this.reusedWork.delete(row.id);
    row.lastAt = at;
    if (patch.place !== undefined && patch.place !== null) row.place = patch.place;
    if (patch.stage !== undefined) row.stage = patch.stage;
    if (patch.step !== undefined) row.step = patch.step;
    if (patch.reason !== undefined) row.reason = patch.reason;
    if (patch.generationId) row.generationId = patch.generationId;
    if (patch.requestId) row.requestId = patch.requestId;
    if (patch.generations) this.generations.set(row.id, patch.generations);
    if (patch.firstAt !== undefined) row.firstAt = patch.firstAt;
    if (patch.outDir !== undefined) row.outDir = patch.outDir;
    if (patch.by !== undefined) row.by = patch.by;
    const steps = this.history.get(row.id) ?? [];
    steps.push({ at, state, stage: row.stage, step: row.step, reason: patch.reason ?? null });
    if (steps.length > HISTORY_LIMIT) steps.splice(0, steps.length - HISTORY_LIMIT);
    // Latest changed last (a Map keeps its order of insertion): the first is the one changed longest ago.
    this.history.delete(row.id);
    this.history.set(row.id, steps);
    if (this.history.size > this.historyFiles) {
      const oldest = this.history.keys().next().value;
      if (oldest !== undefined) this.history.delete(oldest);
    }
    this.changed.add(row);
    return row;
  }

  /** The row of a number the page gave; undefined for one this process never made. */
  row(id: number): DashboardRow | undefined {
    return this.byId.get(id);
  }

  /** A file's transitions, oldest first; null once dropped (see HISTORY_FILES). */
  historyOf(id: number): DashboardStep[] | null {
    return this.history.get(id) ?? null;
  }

  /** The rows changed after change `seq` (a snapshot's), for a stream opened after it. */
  changedAfter(seq: number): DashboardRow[] {
    if (seq >= this.seq) return [];
    return [...this.rows.values()].filter((r) => r.seq > seq);
  }

  /** The rows changed since the last call (each once), and forgets them. */
  takeChanges(): DashboardRow[] {
    const out = [...this.changed];
    this.changed.clear();
    return out;
  }

  /** The inputs whose latest state is failed. */
  failedInputs(): string[] {
    return [...this.rows.values()].filter((r) => r.status === 'failed').map((r) => r.input);
  }

  counts(): Record<string, number> {
    const counts = countRows(this.rows.values());
    counts.held_back = this.batch.heldBack.length;
    if (this.batch.waiting) counts.waiting = this.batch.waiting.settling.length + this.batch.intakeWaiting;
    this.batch.notNow = actionsNotNow(this.batch);
    this.batch.credits = this.credits();
    this.batch.perMinute = busyRate(this.rows.values(), this.batch.startedAt ?? 0, Date.now());
    return counts;
  }

  /** Credits spent and estimated (see DashboardCredits); null without prices. */
  private credits(): DashboardCredits | null {
    if (this.prices === null) return null;
    const spent: Count = {};
    const toCome: Count = {};
    const planned: Count = {};
    let plannedFiles = 0;
    let unplanned = 0;
    for (const r of this.rows.values()) {
      if (r.status !== 'pending' && r.status !== 'succeeded' && r.status !== 'failed') continue;
      if (this.reusedWork.has(r.id)) continue;
      const gens = this.generations.get(r.id);
      if (!gens || gens.length === 0) {
        if (r.status === 'pending') unplanned += 1;
        continue;
      }
      plannedFiles += 1;
      for (const g of gens) {
        add(planned, g.type);
        if (g.completed) add(spent, g.type);
        else if (r.status === 'pending') add(toCome, g.type);
      }
    }
    const list = this.prices.list;
    const paid = priceOf(list, spent);
    const rest = priceOf(list, toCome);
    const perFile = plannedFiles === 0 ? 0 : priceOf(list, planned).credits / plannedFiles;
    const unpriced = new Set([...Object.keys(paid.unpriced), ...Object.keys(rest.unpriced)]);
    return {
      spent: paid.credits,
      estimated: Number((paid.credits + rest.credits + unplanned * perFile).toFixed(2)),
      source: this.prices.source,
      unpriced: [...unpriced].sort(),
    };
  }

  snapshot(actions: string[], unavailable: Record<string, string> = {}): DashboardSnapshot {
    return {
      batch: this.batch,
      counts: this.counts(),
      rows: [...this.rows.values()],
      actions,
      unavailable,
      seq: this.seq,
    };
  }
}
