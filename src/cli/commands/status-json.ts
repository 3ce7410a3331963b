/**
 * `genpipe status --json`: the summary as one JSON object in the shape of every JSON document genpipe
 * prints — snake_case keys, times as ISO 8601 UTC strings (docs/schemas/status.schema.json). The
 * summary, the batch row and the workers are the process's own objects (camelCase, ms since the
 * epoch): written out here, once.
 */
import type { KeyQuotaUse, QueueCounts, WorkerRow } from '../../pipeline/distributed/index.ts';
import {
  type ReportHeldBack,
  STATUS_KIND_KEYS,
  type StatusFailure,
  type StatusSummary,
} from '../../pipeline/index.ts';
import type { BatchRow } from '../../pipeline/store/index.ts';
import { isoTime } from '../../spec/iso-time.ts';
import { snakeKeys } from '../snake-keys.ts';

/** What a store shared by several processes adds (status.ts's SharedStatus). */
interface SharedParts {
  workers: WorkerRow[];
  queue: QueueCounts | null;
  quota: KeyQuotaUse[];
}

/** The object `status --json` prints. */
export interface StatusJson {
  out_dir: string;
  journal: string;
  last_batch: BatchJson | null;
  batches: number;
  inputs: number;
  by_kind: Record<string, number>;
  failures: StatusFailure[];
  live: boolean | null;
  held_back: ReportHeldBack[];
  workers?: WorkerJson[];
  queue?: QueueCounts | null;
  quota?: QuotaJson[];
}

interface BatchJson {
  id: number;
  started_at: string;
  finished_at: string | null;
  status: BatchRow['status'];
  input_dir: string;
  out_dir: string;
  service: string | null;
  /** The flags as given, by their names in snake_case (`retry_failed`). */
  options: Record<string, unknown>;
  pid: number;
}

interface WorkerJson {
  id: string;
  host: string;
  pid: number;
  role: string;
  started_at: string;
  seen_ago_ms: number;
  heartbeat_ms: number;
  in_hand: number;
  alive: boolean;
}

interface QuotaJson {
  service: string;
  key: string;
  window_ms: number;
  requests: number;
  request_limit: number | null;
  jobs: number;
  pending: number;
  ceiling: number | null;
}

function batchJson(b: BatchRow): BatchJson {
  return {
    id: b.id,
    started_at: isoTime(b.startedAt),
    finished_at: b.finishedAt === null ? null : isoTime(b.finishedAt),
    status: b.status,
    input_dir: b.inputDir,
    out_dir: b.outDir,
    service: b.service,
    options: snakeKeys(b.options),
    pid: b.pid,
  };
}

function workerJson(w: WorkerRow): WorkerJson {
  return {
    id: w.id,
    host: w.host,
    pid: w.pid,
    role: w.role,
    started_at: isoTime(w.startedAt),
    seen_ago_ms: w.seenAgoMs,
    heartbeat_ms: w.heartbeatMs,
    in_hand: w.inHand,
    alive: w.alive,
  };
}

function quotaJson(q: KeyQuotaUse): QuotaJson {
  return {
    service: q.service,
    key: q.key,
    window_ms: q.windowMs,
    requests: q.requests,
    request_limit: q.requestLimit,
    jobs: q.jobs,
    pending: q.pending,
    ceiling: q.ceiling,
  };
}

/**
 * The object `status --json` prints for `summary` (see the module comment).
 *
 * @example statusJson('/data/out', '/data/out/.genpipe/journal.db', summary, []).by_kind // { done: 3, skipped: 1 }
 */
export function statusJson(
  outDir: string,
  journal: string,
  summary: StatusSummary,
  heldBack: ReportHeldBack[],
  shared?: SharedParts,
): StatusJson {
  const byKind: Record<string, number> = {};
  for (const [kind, n] of Object.entries(summary.byKind) as [keyof typeof STATUS_KIND_KEYS, number][])
    byKind[STATUS_KIND_KEYS[kind]] = n;
  return {
    out_dir: outDir,
    journal,
    last_batch: summary.lastBatch ? batchJson(summary.lastBatch) : null,
    batches: summary.batches,
    inputs: summary.inputs,
    by_kind: byKind,
    failures: summary.failures.map((f) => ({ input: f.input, reason: f.reason, retried: f.retried })),
    live: summary.live,
    held_back: heldBack,
    ...(shared
      ? {
          workers: shared.workers.map(workerJson),
          queue: shared.queue,
          quota: shared.quota.map(quotaJson),
        }
      : {}),
  };
}
