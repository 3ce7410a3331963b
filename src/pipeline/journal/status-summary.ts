/**
 * What `genpipe status <out-dir>` says of an out dir, from its journal alone (nothing is run, nothing is
 * read at the service): the inputs by where their work stands, the failures with their reasons, and
 * what the next run would do with each kind: resume-decision.ts's own decision, told in other words.
 */
import type { BatchRow } from '../store/store.ts';
import type { JournalRow } from './journal-row.ts';
import type { OutputCheck } from './outputs-check.ts';
import { decide } from './resume-decision.ts';

/** Where an input's work stands. */
export type StatusKind =
  | 'done'
  | 'failed, retried by a re-run'
  | 'failed, not retried'
  | 'outcome unknown'
  | 'at the service'
  | 'downloaded'
  | 'failed before the service'
  | 'skipped'
  | 'not yet submitted';

/** What a re-run does with the inputs of each kind. */
export const RERUN_TEXTS: Record<StatusKind, string> = {
  done: 'skips them (already done)',
  'failed, retried by a re-run': 'submits them again (their failure may pass now)',
  'failed, not retried': 'leaves them failed (--retry-failed retries them)',
  'outcome unknown':
    'fails them again, naming the request id (their create may have reached the service; --resubmit-unknown submits them again)',
  'at the service': 'reads their generations and downloads the outputs (nothing is created again)',
  downloaded: 'writes their result.json and report entries',
  'failed before the service': 'checks them again (nothing was sent for them)',
  skipped: 'checks them again against the recipe',
  'not yet submitted': 'checks and submits them',
};

/** One failed input. */
export interface StatusFailure {
  input: string;
  reason: string;
  retried: boolean;
}

/** The summary of an out dir's journal. */
export interface StatusSummary {
  lastBatch: BatchRow | null;
  batches: number;
  inputs: number;
  byKind: Partial<Record<StatusKind, number>>;
  failures: StatusFailure[];
}

/**
 * What a re-run without flags would find of a row: its outputs and result.json taken as present (status
 * reads no file), its uploads as young enough (their age changes how a file is sent again, not its kind).
 */
const STATUS_OUTPUTS: OutputCheck = { complete: true, resultPresent: true, problems: [] };

/**
 * Where the work of `row` stands: what the next run does with it, as Journal.plan decides it
 * (resume-decision.ts's decide, the one table of those rules), told in status's words.
 */
export function statusKind(row: JournalRow): StatusKind {
  const d = decide({
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
  if (d.retried) return 'failed, retried by a re-run';
  switch (d.action) {
    case 'done':
      return row.phase === 'failed' ? 'failed, not retried' : 'done';
    case 'fail':
      return 'outcome unknown';
    default:
      // Resumed or started again: where the run takes it up.
      if (d.item.state === 'submitted') return 'at the service';
      if (d.item.state === 'downloaded') return 'downloaded';
      if (row.phase === 'local' || row.phase === 'uploaded') {
        if (row.item.state === 'failed') return 'failed before the service';
        if (row.item.state === 'skipped') return 'skipped';
      }
      return 'not yet submitted';
  }
}

/** The summary of `rows` (the active row of each input) and the out dir's `batches` (oldest first). */
export function statusSummary(rows: readonly JournalRow[], batches: readonly BatchRow[]): StatusSummary {
  const byKind: Partial<Record<StatusKind, number>> = {};
  const failures: StatusFailure[] = [];
  for (const row of rows) {
    const kind = statusKind(row);
    byKind[kind] = (byKind[kind] ?? 0) + 1;
    if (row.phase === 'failed' || kind === 'outcome unknown' || kind === 'failed before the service') {
      failures.push({
        input: row.input,
        reason: row.item.reason ?? 'failed',
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
  };
}
