/**
 * What a progress display knows, built from PipelineEvents alone: where each item is, how many are done,
 * and from the recent finishing rate, the throughput and an ETA.
 */
import type { BatchTotals, PipelineEvent } from '../events.ts';
import { FINAL_ITEM_STATES, type ItemState, STAGE_NAMES, type StageName } from '../item.ts';

/** Finishes within this window set the throughput (and so the ETA). */
export const THROUGHPUT_WINDOW_MS = 60_000;

/** The stage an item in a (non-final) state is waiting for or running. */
export const STAGE_OF_STATE: Partial<Record<ItemState, StageName>> = {
  discovered: 'sniff',
  sniffed: 'plan',
  planned: 'check',
  checked: 'upload',
  uploaded: 'submit',
  submitted: 'wait',
  completed: 'download',
  downloaded: 'report',
};

export interface ProgressState {
  /** When the batch started (or the first event came), ms since the epoch. */
  startedAt: number | null;
  inputDir: string | null;
  outDir: string | null;
  emulator: boolean;
  /**
   * Current state per report entry: by place (the event's `place`, which an item has once the journal
   * admitted it, and every final item has), so that two versions of one file name with folders of
   * their own count twice, as in report.json.
   */
  items: Map<string, ItemState>;
  /** Current state per input of the items without a place yet (all of them without a journal). */
  unplaced: Map<string, ItemState>;
  /** Times at which items reached a final state, oldest first (pruned to the throughput window). */
  recentDone: number[];
  /** Once the batch is stopping, the words that say so and why (stoppingText). */
  stopping: string | null;
  /** The batch's totals once it finished. */
  finished: { at: number; totals: BatchTotals } | null;
}

/** Counts of a moment of the batch. */
export interface ProgressCounts {
  total: number;
  /** Items in a final state. */
  done: number;
  /** Items not yet final, by the stage they wait for or run. */
  byStage: Record<StageName, number>;
  succeeded: number;
  failed: number;
  skipped: number;
  unprocessed: number;
}

/** An empty state, before any event. */
export function newProgressState(): ProgressState {
  return {
    startedAt: null,
    inputDir: null,
    outDir: null,
    emulator: false,
    items: new Map(),
    unplaced: new Map(),
    recentDone: [],
    stopping: null,
    finished: null,
  };
}

function isFinal(state: ItemState | undefined): boolean {
  return state !== undefined && FINAL_ITEM_STATES.includes(state);
}

function prune(state: ProgressState, now: number): void {
  const from = now - THROUGHPUT_WINDOW_MS;
  let drop = 0;
  while (drop < state.recentDone.length && state.recentDone[drop]! < from) drop++;
  if (drop > 0) state.recentDone.splice(0, drop);
}

/** Updates `state` with one event (in place). */
export function applyEvent(state: ProgressState, event: PipelineEvent): void {
  state.startedAt ??= event.at;
  switch (event.type) {
    case 'batch_started':
      state.startedAt = event.at;
      state.inputDir = event.input_dir;
      state.outDir = event.out_dir;
      state.emulator = event.emulator;
      break;
    case 'item_discovered':
      // A new look at the input (watch: a file changed or dropped again), until it has a place.
      state.unplaced.set(event.input, 'discovered');
      break;
    case 'item_state': {
      let before: ItemState | undefined;
      if (event.place === undefined) {
        before = state.unplaced.get(event.input);
        state.unplaced.set(event.input, event.state);
      } else {
        const there = state.items.get(event.place);
        if (there !== undefined && !isFinal(there)) {
          before = there; // the item already had its place (a later look at the input may be unplaced)
        } else {
          // The item just got its place (or takes over the place of an earlier one that ended there).
          before = state.unplaced.get(event.input);
          state.unplaced.delete(event.input);
        }
        state.items.set(event.place, event.state);
      }
      if (!isFinal(before) && isFinal(event.state)) {
        state.recentDone.push(event.at);
        prune(state, event.at);
      }
      break;
    }
    case 'batch_stopping':
      state.stopping = stoppingText(event);
      break;
    case 'batch_finished':
      state.finished = { at: event.at, totals: event.totals };
      break;
  }
}

/**
 * Counts the finished items of earlier batches a batch reports (RunOptions.earlier, BatchItems.seed), at
 * their places, so that the running counts are those of report.json and the closing summary — the out
 * dir's history, not one session's. A later item at a place replaces the earlier one, as in the report.
 * An earlier item whose outputs were downloaded counts as succeeded, as the report lists it.
 *
 * @example seedEarlier(state, await journal.finishedItems())
 */
export function seedEarlier(
  state: ProgressState,
  items: Iterable<{ input: string; place?: string; state: ItemState }>,
): void {
  for (const item of items) {
    const place = item.place ?? item.input;
    if (state.items.has(place)) continue;
    state.items.set(place, item.state === 'downloaded' ? 'reported' : item.state);
  }
}

/**
 * The words of a batch that starts stopping: `stopping early: <reason>`, or `stopping: <end>` when the
 * stop is how the batch normally ends (a watch's signal).
 *
 * @example stoppingText({ type: 'batch_stopping', at: 0, reason: 'stopped by Ctrl-C / SIGINT', end: 'Ctrl-C / SIGINT' }) // 'stopping: Ctrl-C / SIGINT'
 */
export function stoppingText(event: Extract<PipelineEvent, { type: 'batch_stopping' }>): string {
  return event.end === undefined ? `stopping early: ${event.reason}` : `stopping: ${event.end}`;
}

/** Counts by stage and by outcome. */
export function progressCounts(state: ProgressState): ProgressCounts {
  const byStage = Object.fromEntries(STAGE_NAMES.map((s) => [s, 0])) as Record<StageName, number>;
  const c: ProgressCounts = {
    total: state.items.size + state.unplaced.size,
    done: 0,
    byStage,
    succeeded: 0,
    failed: 0,
    skipped: 0,
    unprocessed: 0,
  };
  for (const s of [...state.items.values(), ...state.unplaced.values()]) {
    switch (s) {
      case 'reported':
        c.succeeded++;
        c.done++;
        break;
      case 'failed':
        c.failed++;
        c.done++;
        break;
      case 'skipped':
        c.skipped++;
        c.done++;
        break;
      case 'stopped':
        c.unprocessed++;
        c.done++;
        break;
      default:
        byStage[STAGE_OF_STATE[s]!]++;
    }
  }
  return c;
}

/**
 * Items finished per minute, over the last minute (or since the start when younger); null before the
 * first item finished.
 */
export function throughputPerMinute(state: ProgressState, now: number): number | null {
  if (state.startedAt === null) return null;
  prune(state, now);
  if (state.recentDone.length === 0) return null;
  const window = Math.min(THROUGHPUT_WINDOW_MS, Math.max(1000, now - state.startedAt));
  return (state.recentDone.length / window) * 60_000;
}

/** ms until every known item is done at the current throughput; null when it cannot be told yet (no item known or none finished). */
export function etaMs(state: ProgressState, now: number): number | null {
  const counts = progressCounts(state);
  const remaining = counts.total - counts.done;
  if (counts.total === 0) return null;
  if (remaining === 0) return 0;
  const rate = throughputPerMinute(state, now);
  return rate ? (remaining / rate) * 60_000 : null;
}
