/**
 * `genpipe status <out-dir>`: what an out dir's journal says, without running anything or calling the
 * service — the last batch, the inputs by where their work stands, what failed and why, and what the
 * next `run` would do with each. Safe while a run is going: it takes no lock and writes nothing, not
 * even an older genpipe's journal's upgrade (it reads a journal it may not write). The command's
 * definition and its checks before a journal is read are in status-command.ts.
 */
import { existsSync } from 'node:fs';
import {
  type KeyQuotaUse,
  type QueueCounts,
  queueCounts,
  sharedDatabaseOf,
  type WorkerRow,
  works,
} from '../../pipeline/distributed/index.ts';
import {
  type Journal,
  JournalFileError,
  JournalLockedError,
  NetworkFilesystemError,
  openJournal,
  RERUN_TEXTS,
  runnerLockHeld,
  type StatusContext,
  type StatusKind,
  type StatusSummary,
  statusSummary,
} from '../../pipeline/index.ts';
import { printable } from '../../pipeline/progress/index.ts';
import { inputPathIn } from '../../pipeline/raw-names.ts';
import type { BatchRow } from '../../pipeline/store/index.ts';
import type { PostgresStore } from '../../pipeline/store/postgres/index.ts';
import { plural } from '../../spec/plural.ts';
import { openRunStore } from '../store-option.ts';
import { UsageError } from '../usage-error.ts';
import { heldBackLines, statusHeldBack } from './status-held.ts';
import { statusJson } from './status-json.ts';

/** Failures listed one by one; the rest are counted. */
export const STATUS_FAILURES_LISTED = 50;

const KIND_ORDER: readonly StatusKind[] = [
  'done',
  'failed, retried by a re-run',
  'failed, not retried',
  'outcome unknown',
  'being submitted by the running batch',
  'at the service',
  'at an embedded emulator',
  'downloaded',
  'failed before the service',
  'skipped',
  'not yet submitted',
  'failed, moved away',
  'no longer in the input folder',
];

function when(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/**
 * A batch the journal records as running: running when a runner holds the out dir's lock, interrupted
 * when none does (the lock dies with its holder), either when the lock could not be read.
 */
function runningState(pid: number, live: boolean | null): string {
  if (live === true) return `running (pid ${pid})`;
  if (live === false) return `interrupted (its runner, pid ${pid}, is gone)`;
  return `running or interrupted (pid ${pid})`;
}

/** The lines `genpipe status` prints for `summary`. */
export function statusLines(outDir: string, journalPath: string, summary: StatusSummary): string[] {
  const lines = [`${outDir}: journal ${journalPath}`];
  const b = summary.lastBatch;
  if (b) {
    const state =
      b.options.detach === true
        ? 'enqueued for the workers (--detach; the queue below says how far they got)'
        : b.status === 'running'
          ? runningState(b.pid, summary.live)
          : b.status;
    const ended = b.finishedAt ? `, ended ${when(b.finishedAt)} UTC` : '';
    lines.push(
      // Counted in this out dir: a store shared by several out dirs numbers its batches across them all.
      `last batch: #${summary.batches} of ${summary.batches}, ${state}, started ${when(b.startedAt)} UTC${ended}`,
    );
    lines.push(`  from ${b.inputDir}`);
  } else lines.push('no batch has run here yet');
  lines.push(`inputs in the journal: ${summary.inputs}`);
  for (const kind of KIND_ORDER) {
    const n = summary.byKind[kind];
    if (n) lines.push(`  ${String(n).padStart(6)} ${kind}`);
  }
  if (summary.failures.length > 0) {
    lines.push(`failed (${summary.failures.length}):`);
    for (const f of summary.failures.slice(0, STATUS_FAILURES_LISTED))
      lines.push(`  ${f.input}: ${f.reason}`);
    const more = summary.failures.length - STATUS_FAILURES_LISTED;
    if (more > 0) lines.push(`  … and ${more} more (report.json lists them all)`);
  }
  if (summary.inputs > 0) {
    lines.push('a re-run of the same command:');
    for (const kind of KIND_ORDER) {
      const n = summary.byKind[kind];
      if (n) lines.push(`  ${kind} (${n}): ${RERUN_TEXTS[kind]}`);
    }
  }
  return lines;
}

/**
 * Whether an input is still in the input folder of `batch` (the one a re-run of its command reads);
 * nothing when that folder is not on this machine (a distributed run's, say): then no input is taken
 * as gone.
 */
function inputPresence(batch: BatchRow | undefined): Pick<StatusContext, 'present'> {
  if (!batch || !existsSync(batch.inputDir)) return {};
  return { present: (item) => existsSync(inputPathIn(batch.inputDir, item)) };
}

/**
 * What `genpipe status` prints for the journal file at `path` (status-command.ts has checked it exists).
 *
 * @throws UsageError when it is not a journal genpipe can read
 */
export async function printJournalStatus(outDir: string, path: string, json: boolean): Promise<void> {
  let journal: Journal;
  try {
    journal = openJournal({ outDir, path, readOnly: true });
  } catch (err) {
    if (err instanceof JournalFileError || err instanceof NetworkFilesystemError)
      throw new UsageError(err.message);
    throw err;
  }
  if (journal.readNote) process.stderr.write(`genpipe: ${printable(journal.readNote)}\n`);
  try {
    const batches = await journal.batches();
    const summary = statusSummary(journal.rows(), batches, {
      live: runnerLockHeld(outDir),
      ...inputPresence(batches.at(-1)),
    });
    printStatus(outDir, path, summary, json);
  } finally {
    await journal.close();
  }
}

function printStatus(
  outDir: string,
  journal: string,
  summary: StatusSummary,
  json: boolean,
  shared?: SharedStatus,
): void {
  const held = statusHeldBack(outDir);
  if (json) {
    process.stdout.write(
      `${JSON.stringify(statusJson(outDir, journal, summary, held?.files ?? [], shared))}\n`,
    );
  } else {
    const lines = [
      ...statusLines(outDir, journal, summary),
      ...(held ? heldBackLines(held) : []),
      ...(shared ? sharedLines(shared) : []),
    ];
    process.stdout.write(`${lines.map(printable).join('\n')}\n`);
  }
}

/** Gone workers listed one by one; the rest are counted. */
export const STATUS_GONE_WORKERS_LISTED = 10;

/** What a store shared by several processes adds: its workers, and each API key's quota in use. */
export interface SharedStatus {
  workers: WorkerRow[];
  /** The out dir's jobs in the store's queue (null: none was ever enqueued on this store). */
  queue: QueueCounts | null;
  quota: KeyQuotaUse[];
}

function ago(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

/**
 * `2 alive, 1 gone` of the processes that work on files, and the `run --no-work` alive beside them,
 * which follow their batch and add no capacity (`; and 1 run --no-work, working on no file`).
 */
export function workersHeadline(
  alive: readonly Pick<WorkerRow, 'role'>[],
  gone: number,
  goneNote = '',
): string {
  const following = alive.filter((w) => !works(w.role)).length;
  return (
    `${alive.length - following} alive${gone ? `, ${gone} gone${goneNote}` : ''}` +
    (following ? `; and ${following} run --no-work, working on no file` : '')
  );
}

/** The lines of the store's workers (alive, gone) and of each key's quota in use. */
export function sharedLines(shared: SharedStatus): string[] {
  const alive = shared.workers.filter((w) => w.alive);
  const gone = shared.workers.filter((w) => !w.alive);
  const lines = [
    `workers on this store: ${workersHeadline(alive, gone.length, ' (no heartbeat for 3 beats)')}`,
  ];
  for (const w of alive) {
    lines.push(
      `  ${w.role} ${w.host} pid ${w.pid}, ${w.inHand} in hand, seen ${ago(w.seenAgoMs)}, started ${when(w.startedAt)} UTC`,
    );
  }
  for (const w of gone.slice(0, STATUS_GONE_WORKERS_LISTED))
    lines.push(`  gone: ${w.role} ${w.host} pid ${w.pid}, last seen ${ago(w.seenAgoMs)}`);
  if (gone.length > STATUS_GONE_WORKERS_LISTED)
    lines.push(`  … and ${gone.length - STATUS_GONE_WORKERS_LISTED} more gone`);
  if (shared.queue) {
    const c = shared.queue;
    lines.push(
      `queue of this out dir: ${c.queued} queued, ${c.active} in workers' hands, ${c.finished} finished${c.failed ? `, ${c.failed} given up (no worker could process them)` : ''}`,
    );
  }
  for (const q of shared.quota) {
    const limit = q.requestLimit === null ? 'limit not learned yet' : `limit ${q.requestLimit}`;
    const ceiling = q.ceiling === null ? 'ceiling not learned' : `learned ceiling ${q.ceiling}`;
    const pending = q.pending ? ` (+${plural(q.pending, 'create')} on their way)` : '';
    lines.push(
      `quota of key ${q.key}… at ${q.service}: ${plural(q.requests, 'request')} in the last ${Number((q.windowMs / 1000).toFixed(1))} s (${limit}), ${plural(q.jobs, 'job')} held${pending} (${ceiling})`,
    );
  }
  return lines;
}

/**
 * Status from the PostgreSQL store at `url`: the same summary, its rows and batches read from the
 * database (nothing written). Whether a runner holds the out dir is told by trying its lock, dropped at
 * once (as the journal file's lock is probed).
 */
export async function printStoreStatus(outDir: string, url: string, json: boolean): Promise<void> {
  const store = await openRunStore({ url, outDir, lock: false });
  try {
    // A worker's session of the out dir records a batch of its own: the batches are the runs' and watches'.
    const batches = (await store.batches()).filter((b) => b.options.worker !== true);
    if (batches.length === 0) {
      throw new UsageError(
        `the store at ${store.location} holds nothing of ${outDir}: nothing ran with it as its --out and this --store`,
      );
    }
    const shared = {
      workers: await sharedDatabaseOf(store).workers(),
      queue: await queueCounts(url, outDir),
      quota: await sharedDatabaseOf(store).quotaUse(),
    };
    // A distributed run holds no lock of the out dir: its heartbeat among the workers says it runs.
    const last = batches.at(-1);
    const live =
      last?.options.distribute === true && last.options.command === 'run'
        ? shared.workers.some((w) => w.alive && w.pid === last.pid)
        : await runnerHolds(store);
    const summary = statusSummary(await store.rows(), batches, { live, ...inputPresence(last) });
    printStatus(outDir, store.location, summary, json, shared);
  } finally {
    await store.close();
  }
}

/** Whether a runner holds the store's out dir now: its lock is refused (true) or taken and given back (false). */
async function runnerHolds(store: PostgresStore): Promise<boolean | null> {
  try {
    await store.acquireLock();
    await store.releaseLock();
    return false;
  } catch (err) {
    return err instanceof JournalLockedError ? true : null;
  }
}
