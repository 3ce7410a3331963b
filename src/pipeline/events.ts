/**
 * Events a batch emits, one per item transition or batch milestone. Progress displays (TTY, plain
 * lines, --json) and reports are built from these alone.
 */
import type { Item, ItemGeneration, ItemState, StageName } from './item.ts';

export type PipelineEvent =
  | { type: 'batch_started'; at: number; input_dir: string; out_dir: string; emulator: boolean }
  | { type: 'item_discovered'; at: number; input: string; size: number }
  | {
      type: 'item_state';
      at: number;
      input: string;
      /**
       * The item's out folder (Item.place), once the journal gave it one (it does at admission, and to
       * every final item): what tells two versions of one file name apart, as in report.json. Absent
       * before, and without a journal.
       */
      place?: string;
      /** The step a chain item is at (Item.step); absent for a single-request rule's item. */
      step?: string;
      /**
       * A chain step's own moment, said in `reason`: `started` (its generation was created: `step
       * 'animate' started`), `done` (`step 'animate' done`) or `failed` (`step 'animate' failed: <why>`).
       * Absent otherwise.
       */
      step_event?: 'started' | 'done' | 'failed';
      state: ItemState;
      /** The stage that moved (or failed) the item; null when no stage did (stopped, or from_journal). */
      stage: StageName | null;
      reason: string | null;
      /**
       * On `submitted` and `failed`: the generation the item's step got from the service and the
       * request id of its create, when it has them (what a user gives support). Absent otherwise.
       */
      generation_id?: string;
      request_id?: string;
      /**
       * On `planned`, on a chain step's `done` and on the final states: the generations the item's rule
       * asks for, by type, and which the service completed (what they cost, on the dashboard). Absent
       * otherwise, and before the item is planned.
       */
      generations?: ItemGeneration[];
      /**
       * True when the item is reported as an earlier run left it, nothing run in this one ("already
       * done in an earlier run", "failed in an earlier run (…), not retried"). Absent otherwise.
       */
      from_journal?: true;
      /** True when another input's work stood for the item's (workReused): nothing sent, nothing spent. Absent otherwise. */
      reused?: true;
    }
  | {
      type: 'batch_stopping';
      at: number;
      reason: string;
      /**
       * When the stop is how the batch normally ends (a watch stopped by a signal), that end in a
       * person's words ('Ctrl-C / SIGINT'): told as `stopping: …`, not `stopping early: …`. Absent otherwise.
       */
      end?: string;
    }
  | { type: 'batch_finished'; at: number; totals: BatchTotals };

export interface BatchTotals {
  inputs: number;
  succeeded: number;
  failed: number;
  skipped: number;
  /**
   * Items left unprocessed: the batch stopped before they were done (report.json's `unprocessed`, its
   * `pending` counted here too: the batch has ended).
   */
  unprocessed: number;
  /** Entries of the input folder that are not inputs (see report.json `ignored`; watch: at its last complete rescan). */
  ignored?: number;
}

export type EventSink = (event: PipelineEvent) => void;

/** A `batch_finished` event's totals from a report's (its files still pending counted as unprocessed). */
export function batchTotals(
  t: {
    inputs: number;
    succeeded: number;
    failed: number;
    skipped: number;
    unprocessed: number;
    pending: number;
  },
  ignored: { total: number } | null | undefined,
): BatchTotals {
  return {
    inputs: t.inputs,
    succeeded: t.succeeded,
    failed: t.failed,
    skipped: t.skipped,
    unprocessed: t.unprocessed + t.pending,
    ...(ignored ? { ignored: ignored.total } : {}),
  };
}

/** The item as a report line: what a user needs to know about one file. */
export function itemStatus(
  item: Pick<Item, 'state'>,
): 'succeeded' | 'failed' | 'skipped' | 'unprocessed' | 'pending' {
  switch (item.state) {
    case 'reported':
    case 'downloaded':
      return 'succeeded';
    case 'failed':
      return 'failed';
    case 'skipped':
      return 'skipped';
    case 'stopped':
      return 'unprocessed';
    default:
      return 'pending';
  }
}

/** An item's status in the batch report (and its result.json). */
export type ReportStatus = ReturnType<typeof itemStatus>;
