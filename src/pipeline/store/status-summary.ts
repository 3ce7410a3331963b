/**
 * What `genpipe status <out-dir>` says of an out dir, from its journal alone (nothing is run, nothing is
 * read at the service): the inputs by where their work stands, the failures with their reasons, and
 * what the next run would do with each kind: resume-decision.ts's own decision, told in other words.
 */
import type { Item } from '../item.ts';
import { VANISHED_TAKEN_PHASES } from './admission.ts';
import { EMBEDDED_IDENTITY, redoneOnEmbedded } from './embedded-redo.ts';
import type { JournalRow } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import { decide } from './resume-decision.ts';
import type { BatchRow } from './store.ts';

/** Where an input's work stands. */
export type StatusKind =
  | 'done'
  | 'failed, retried by a re-run'
  | 'failed, not retried'
  | 'outcome unknown'
  | 'being submitted by the running batch'
  | 'at the service'
  | 'at an embedded emulator'
  | 'downloaded'
  | 'failed before the service'
  | 'skipped'
  | 'not yet submitted'
  | 'failed, moved away'
  | 'no longer in the input folder';

/** Each kind's key in `status --json`'s `by_kind` (docs/schemas/status.schema.json). */
export const STATUS_KIND_KEYS: Record<StatusKind, string> = {
  done: 'done',
  'failed, retried by a re-run': 'failed_retried',
  'failed, not retried': 'failed_not_retried',
  'outcome unknown': 'outcome_unknown',
  'being submitted by the running batch': 'being_submitted',
  'at the service': 'at_service',
  'at an embedded emulator': 'at_embedded_emulator',
  downloaded: 'downloaded',
  'failed before the service': 'failed_before_service',
  skipped: 'skipped',
  'not yet submitted': 'not_submitted',
  'failed, moved away': 'failed_moved_away',
  'no longer in the input folder': 'input_gone',
};

/** What a re-run does with the inputs of each kind. */
export const RERUN_TEXTS: Record<StatusKind, string> = {
  done: 'skips them (already done)',
  'failed, retried by a re-run': 'submits them again (their failure may pass now)',
  'failed, not retried': 'leaves them failed (--retry-failed retries them)',
  'outcome unknown':
    'fails them again, naming the request id (their create may have reached the service; --resubmit-unknown submits them again)',
  'being submitted by the running batch':
    'none can run while that batch holds the out dir; its creates are on their way (if it is killed before their answers, a re-run fails them, naming the request id, unless --resubmit-unknown)',
  'at the service': 'reads their generations and downloads the outputs (nothing is created again)',
  'at an embedded emulator':
    'processes them again from the start (an embedded emulator ends with its batch, and its files and generations with it)',
  downloaded: 'writes their result.json and report entries',
  'failed before the service': 'checks them again (nothing was sent for them)',
  skipped: 'checks them again against the recipe',
  'not yet submitted': 'checks and submits them',
  'failed, moved away':
    'leaves them failed: moved out of the input folder (a watch with --on-done move files its failures in failed/), they are not among the files it reads (a watch still reports them as they failed)',
  'no longer in the input folder':
    'takes nothing of them: moved away or deleted, they are not among the files it reads (a watch still reports those that finished as they finished)',
};

/** One failed input. */
export interface StatusFailure {
  input: string;
  reason: string;
  retried: boolean;
}

/** What status knows of the out dir beside its journal. */
export interface StatusContext {
  /**
   * A runner holds the out dir now (its lock, runner-lock.ts's runnerLockHeld): a create it recorded
   * the intent of is on its way, not of unknown outcome. False or null: nothing runs there.
   */
  live: boolean | null;
  /**
   * The re-run of the same command runs against the embedded emulator (the last batch's service, so
   * `--emulator`): work at the earlier run's emulator is processed again (embedded-redo.ts).
   */
  embedded?: boolean;
  /**
   * Whether a row's input (its item's path, or its bytes: raw-names.ts) is still in the input folder
   * the re-run reads (the last batch's); absent when that is not known (the folder is not on this
   * machine). A row whose input is gone is taken up only for the service's work on it (admission.ts's
   * VANISHED_TAKEN_PHASES), as the run's vanishedInFlight.
   */
  present?: (item: Pick<Item, 'input' | 'rawInput'>) => boolean;
}

/** The summary of an out dir's journal. */
export interface StatusSummary {
  lastBatch: BatchRow | null;
  batches: number;
  inputs: number;
  byKind: Partial<Record<StatusKind, number>>;
  failures: StatusFailure[];
  /** Whether a runner holds the out dir now (null: no lock file to tell). */
  live: boolean | null;
}

/**
 * What a re-run without flags would find of a row: its outputs and result.json taken as present (status
 * reads no file), its uploads as young enough (their age changes how a file is sent again, not its kind).
 */
const STATUS_OUTPUTS: OutputCheck = { complete: true, resultPresent: true, problems: [] };

/** Where an input's work stands, and the reason the next run gives it when it fails it. */
export interface RowStatus {
  kind: StatusKind;
  /** The failure the journal holds, or the one the next run records (outcome unknown); else null. */
  reason: string | null;
}

/**
 * Where the work of `row` stands: what the next run does with it, as Journal.plan decides it
 * (resume-decision.ts's decide, the one table of those rules, and against the embedded emulator
 * redoneOnEmbedded after it, as the run's admission does), told in status's words. Beside a live
 * batch (`context.live`), a create whose intent is recorded is on its way: no run would decide on it.
 */
export function statusKind(row: JournalRow, context: StatusContext = { live: null }): StatusKind {
  return rowStatus(row, context).kind;
}

/** statusKind with the reason (see RowStatus). */
export function rowStatus(row: JournalRow, context: StatusContext = { live: null }): RowStatus {
  const status = decidedStatus(row, context);
  // A finished input moved away keeps how it finished (as a watch's --on-done move files successes and
  // failures alike): done, or failed with its reason; any other one gone is taken up by nothing.
  if (status.kind === 'done' || context.present?.(row.item) !== false) return status;
  if ((VANISHED_TAKEN_PHASES as readonly string[]).includes(row.phase)) return status;
  if (row.item.state === 'failed') return { kind: 'failed, moved away', reason: row.item.reason };
  return { kind: 'no longer in the input folder', reason: row.item.reason };
}

/** rowStatus of a row whose input is in the input folder (resume-decision.ts's decide). */
function decidedStatus(row: JournalRow, context: StatusContext): RowStatus {
  const decided = decide({
    row,
    fresh: row.item,
    key: { contentHash: row.contentHash, recipeHash: row.recipeHash },
    force: false,
    resubmitUnknown: false,
    retryFailed: false,
    now: Date.now(),
    uploadReuseMaxAgeMs: Number.POSITIVE_INFINITY,
    outputs: STATUS_OUTPUTS,
  });
  const d = context.embedded ? redoneOnEmbedded(row.item, decided) : decided;
  const kind = (k: StatusKind): RowStatus => ({ kind: k, reason: row.item.reason });
  if (d.retried) return kind('failed, retried by a re-run');
  if (d !== decided) return kind('at an embedded emulator');
  switch (d.action) {
    case 'done':
      return kind(row.phase === 'failed' ? 'failed, not retried' : 'done');
    case 'fail':
      // A lost answer failed the item already: of unknown outcome whether a batch runs or not.
      if (context.live === true && row.item.state !== 'failed') {
        return { kind: 'being submitted by the running batch', reason: null };
      }
      return { kind: 'outcome unknown', reason: d.reason };
    default:
      return kind(resumedKind(row, d.item));
  }
}

/** The kind of a row the next run resumes or starts again: where it takes it up. */
function resumedKind(row: JournalRow, resumed: JournalRow['item']): StatusKind {
  if (resumed.state === 'submitted') return 'at the service';
  if (resumed.state === 'downloaded') return 'downloaded';
  if (row.phase === 'local' || row.phase === 'uploaded') {
    if (row.item.state === 'failed') return 'failed before the service';
    if (row.item.state === 'skipped') return 'skipped';
  }
  return 'not yet submitted';
}

/**
 * The summary of `rows` (the active row of each input) and the out dir's `batches` (oldest first), with
 * `context.live` saying whether a runner holds the out dir now.
 */
export function statusSummary(
  rows: readonly JournalRow[],
  batches: readonly BatchRow[],
  context: StatusContext = { live: null },
): StatusSummary {
  const byKind: Partial<Record<StatusKind, number>> = {};
  const failures: StatusFailure[] = [];
  // The re-run of the same command is the last batch's: against the embedded emulator when it was.
  const rerun = { embedded: batches.at(-1)?.service === EMBEDDED_IDENTITY, ...context };
  for (const row of rows) {
    const { kind, reason } = rowStatus(row, rerun);
    byKind[kind] = (byKind[kind] ?? 0) + 1;
    const failed =
      row.phase === 'failed' ||
      kind === 'outcome unknown' ||
      kind === 'failed before the service' ||
      kind === 'failed, moved away';
    if (failed) {
      failures.push({
        input: row.item.input, // a name that is not valid UTF-8 as the report prints it
        reason: reason ?? 'failed',
        retried: kind === 'failed, retried by a re-run',
      });
    }
  }
  return {
    lastBatch: batches.at(-1) ?? null,
    batches: batches.length,
    inputs: rows.length,
    byKind,
    failures,
    live: context.live,
  };
}
