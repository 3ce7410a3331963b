/**
 * The store's tables besides items — batches, the content-hash cache, shared references, quota state,
 * job durations — read and written once for every dialect (statements.ts), each a Step on a connection
 * or a transaction (sql.ts).
 */
import type { JobDurationSample } from '../../client/index.ts';
import { sameIdentity } from './content-hash.ts';
import { recordedOptions } from './recorded-options.ts';
import type { Sql } from './sql.ts';
import type { Statements } from './statements.ts';
import type { BatchRow, FileIdentity, LockHolder, QuotaState, QuotaStateInput } from './store.ts';

type Texts = Statements['table'];
type S<T> = Generator<Promise<unknown>, T>;

interface BatchRowSql {
  id: number;
  started_at: number;
  finished_at: number | null;
  status: string;
  input_dir: string;
  out_dir: string;
  service: string | null;
  options: string;
  pid: number;
}

/** Who holds `outDir`, as its runner_locks row records it (a holder that died included), or null. */
export function* lockHolder(sql: Sql, t: Texts, outDir: string): S<LockHolder | null> {
  type LockRow = { pid: number; proc_start: string | null; host: string; acquired_at: number };
  const [row] = yield* sql.all<LockRow>(t.lockHolder, [outDir]);
  return row
    ? { pid: row.pid, procStart: row.proc_start, host: row.host, acquiredAt: row.acquired_at }
    : null;
}

/** The batches of `outDir`, oldest first (a `running` one whose pid is gone was interrupted). */
export function* listBatches(sql: Sql, t: Texts, outDir: string): S<BatchRow[]> {
  const rows = yield* sql.all<BatchRowSql>(t.batches, [outDir]);
  return rows.map((b) => ({
    id: Number(b.id),
    startedAt: b.started_at,
    finishedAt: b.finished_at,
    status: b.status as BatchRow['status'],
    inputDir: b.input_dir,
    outDir: b.out_dir,
    service: b.service,
    options: recordedOptions(JSON.parse(b.options) as Record<string, unknown>),
    pid: b.pid,
  }));
}

/** The hash recorded for `path` when it was taken at `identity`; else null. */
export function* cachedHash(sql: Sql, t: Texts, path: string, identity: FileIdentity): S<string | null> {
  type HashRowSql = {
    dev: string;
    ino: string;
    size: number;
    mtime_ns: string;
    ctime_ns: string;
    hash: string;
  };
  const [row] = yield* sql.all<HashRowSql>(t.hash, [path]);
  if (!row) return null;
  const at = { dev: row.dev, ino: row.ino, size: row.size, mtimeNs: row.mtime_ns, ctimeNs: row.ctime_ns };
  return sameIdentity(identity, at) ? row.hash : null;
}

export function* saveHash(
  sql: Sql,
  t: Texts,
  path: string,
  identity: FileIdentity,
  hash: string,
  now: number,
): S<void> {
  const { dev, ino, size, mtimeNs, ctimeNs } = identity;
  yield* sql.run(t.saveHash, [path, dev, ino, size, mtimeNs, ctimeNs, hash, now]);
}

/** The file_id of the recorded upload, when made at or after `notBefore` (ms since the epoch). */
export function* reference(
  sql: Sql,
  t: Texts,
  key: [service: string, name: string, contentHash: string],
  notBefore: number,
): S<string | null> {
  const [row] = yield* sql.all<{ file_id: string; uploaded_at: number }>(t.reference, key);
  return row && row.uploaded_at >= notBefore ? row.file_id : null;
}

export function* quotaState(
  sql: Sql,
  t: Texts,
  service: string,
  keyFingerprint: string,
): S<QuotaState | null> {
  const [row] = yield* sql.all<{
    job_ceiling: number | null;
    request_limit: number | null;
    window_ms: number | null;
    blocked_until: number | null;
    recent_requests: string;
    updated_at: number;
  }>(t.quotaState, [service, keyFingerprint]);
  if (!row) return null;
  return {
    jobCeiling: row.job_ceiling,
    requestLimit: row.request_limit,
    windowMs: row.window_ms,
    blockedUntil: row.blocked_until,
    recentRequests: JSON.parse(row.recent_requests) as number[],
    updatedAt: row.updated_at,
  };
}

export function* saveQuotaState(
  sql: Sql,
  t: Texts,
  key: [service: string, keyFingerprint: string],
  state: QuotaStateInput,
  now: number,
): S<void> {
  const { jobCeiling, requestLimit, windowMs, blockedUntil } = state;
  const recent = JSON.stringify(state.recentRequests);
  yield* sql.run(t.saveQuotaState, [...key, jobCeiling, requestLimit, windowMs, blockedUntil, recent, now]);
}

/** The samples of `service` per kind, oldest first. */
export function* jobDurations(sql: Sql, t: Texts, service: string): S<Map<string, JobDurationSample[]>> {
  const rows = yield* sql.all<{ kind: string; running_at_ms: number; done_by_ms: number }>(t.durations, [
    service,
  ]);
  const out = new Map<string, JobDurationSample[]>();
  for (const row of rows) {
    const list = out.get(row.kind) ?? [];
    list.push({ runningAtMs: row.running_at_ms, doneByMs: row.done_by_ms });
    out.set(row.kind, list);
  }
  return out;
}

/** Adds one sample (in one transaction), dropping the kind's oldest beyond JOB_DURATIONS_KEPT. */
export function* addJobDuration(
  sql: Sql,
  t: Texts,
  key: [service: string, kind: string],
  sample: JobDurationSample,
  now: number,
): S<void> {
  const [running, done] = [Math.round(sample.runningAtMs), Math.round(sample.doneByMs)];
  yield* sql.run(t.addDuration, [...key, running, done, now]);
  yield* sql.run(t.pruneDurations, key);
}
