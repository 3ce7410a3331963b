/**
 * `genpipe run <dir> --out <dir> --store <url>`: distributed mode's run. It enqueues the folder's files
 * for the store's workers, works on its share here like a worker (unless --no-work), follows the batch
 * to its end and writes report.json and report.html — through the same body as every run
 * (batch-command.ts: progress display, --json, --log-file, --metrics-port, signals, the closing
 * summary, exit codes), its batch started by startDistributedBatch instead of the runner. `--detach`
 * enqueues and returns (executeDetach).
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import {
  DistributedWorker,
  type Enqueued,
  enqueueFolder,
  type ItemQueue,
  type OwnShare,
  openItemQueue,
  sharedDatabaseOf,
  startDistributedBatch,
  WORKER_HEARTBEAT_MS,
  WorkerHeartbeat,
} from '../pipeline/distributed/index.ts';
import {
  type BatchResult,
  type GenpipeMetrics,
  journalCountsText,
  journalDidAnything,
  serviceIdentity,
} from '../pipeline/index.ts';
import { PostgresStore, redactUrl, StoreReachability } from '../pipeline/store-postgres/index.ts';
import { plural } from '../spec/plural.ts';
import type { BatchCommand, BatchSetup } from './batch-command.ts';
import type { BatchFlags } from './batch-options.ts';
import { recordedFlags, resolveBatchOptions } from './batch-options.ts';
import {
  queueConnection,
  sessionOpener,
  WORKER_DEFAULT_CONCURRENCY,
  type WorkerFlags,
} from './distributed.ts';
import { EXIT } from './exit-codes.ts';
import { resolveServiceConfig } from './service-config.ts';
import { signalStopReason } from './signal-words.ts';
import { openRunStore } from './store-option.ts';

/** The flags of distributed mode on `genpipe run`. */
export interface DistributeFlags {
  /** false with --no-distribute: the folder is run here alone, the store as its journal. */
  distribute?: boolean;
  /** false with --no-work: only enqueue and wait. */
  work?: boolean;
  /** --detach: enqueue and return. */
  detach?: boolean;
}

/** The flags a job carries from the run that enqueued it. */
export function jobFlags(flags: BatchFlags) {
  return {
    ...(flags.force ? { force: true } : {}),
    ...(flags.resubmitUnknown ? { resubmitUnknown: true } : {}),
    ...(flags.retryFailed ? { retryFailed: true } : {}),
  };
}

/** The line that says what was enqueued. */
function enqueuedText(e: Enqueued, url: string): string {
  const known = e.jobs.length - e.added - e.retried;
  return (
    `enqueued ${plural(e.jobs.length, 'file')} in the store's queue: ${e.added} new` +
    (e.retried > 0 ? `, ${e.retried} not finished before and put back` : '') +
    `, ${known} already queued or done (store ${redactUrl(url)})`
  );
}

/**
 * The share of a distributed run or watch: a worker of its own in this process, with the command's
 * client (the key's quota shared through the store); its per-file lines only with -v (the command's
 * display shows every file's states).
 */
export function ownShare(
  url: string,
  setup: BatchSetup,
  flags: BatchFlags & WorkerFlags,
  /** The command's metrics: the share's creates are counted there. */
  metrics: GenpipeMetrics | null = null,
): OwnShare {
  let worker: DistributedWorker | null = null;
  return {
    get inHand() {
      return worker?.inHand ?? 0;
    },
    start: async () => {
      worker = new DistributedWorker({
        connection: queueConnection(url, flags),
        concurrency: flags.concurrency ?? WORKER_DEFAULT_CONCURRENCY,
        openSession: sessionOpener(
          url,
          setup.service,
          { ...flags, verbose: false },
          undefined,
          metrics,
          'creates',
        ),
        log: (line) => setup.note(line),
        ...(flags.verbose ? {} : { trace: () => undefined }),
      });
      await worker.ready();
    },
    close: async (giveBack) => {
      await worker?.close(giveBack);
    },
  };
}

/**
 * The BatchCommand of a distributed run: `run`'s own (its progress, its exit codes) but for how the
 * batch starts, what a signal says, and the closing lines.
 *
 * @param run - `genpipe run`'s command (run.ts)
 */
export function distributedRunCommand(
  run: BatchCommand,
  url: string,
  flags: BatchFlags & DistributeFlags & WorkerFlags,
): BatchCommand {
  let queue: ItemQueue | null = null;
  let reach: StoreReachability | null = null;
  let enqueued: Enqueued | null = null;
  let heartbeat: WorkerHeartbeat | null = null;
  const share = (setup: BatchSetup, metrics: GenpipeMetrics | null) => ownShare(url, setup, flags, metrics);
  return {
    ...run,
    storeLock: false,
    interruption: (signal) => ({
      reason: signalStopReason(signal),
      note:
        flags.work === false
          ? `${signalStopReason(signal)}: this run stops waiting; the workers go on with the batch (signal again to stop at once)`
          : `${signalStopReason(signal)}: this run stops waiting and its own worker gives the files in its hands ` +
            'back to the queue; the workers go on with the batch (signal again to stop at once)',
    }),
    async start(setup, common) {
      if (!(setup.journal instanceof PostgresStore))
        throw new Error('a distributed run needs a PostgreSQL store');
      reach = new StoreReachability(url, setup.note, 'run');
      const q = openItemQueue(queueConnection(url, flags));
      queue = q;
      q.on('error', (err) => void reach?.failed(err));
      await q.waitUntilReady();
      const own = flags.work === false ? null : share(setup, common.metrics);
      // Among the store's workers while it runs (status tells a live run from one that died by it).
      heartbeat = new WorkerHeartbeat({
        store: sharedDatabaseOf(setup.journal),
        intervalMs: WORKER_HEARTBEAT_MS,
        inHand: () => own?.inHand ?? 0,
      });
      await heartbeat.start();
      return startDistributedBatch({
        enqueue: {
          queue: q,
          hashes: setup.journal.hashCache(),
          inputDir: setup.inputDir,
          outDir: setup.outDir,
          recipe: setup.recipe,
          recipePath: flags.recipe ? resolve(flags.recipe) : null,
          flags: jobFlags(flags),
          batch: randomUUID(),
          select: setup.select,
        },
        store: setup.journal,
        share: own,
        onEvent: common.onEvent,
        redact: common.redact,
        journal: common.journal ?? null,
        signal: common.signal,
        reach,
        onEnqueued: (e) => {
          enqueued = e;
          setup.note(enqueuedText(e, url));
          if (flags.work === false && e.jobs.length > 0) {
            setup.note("waiting for the store's workers (--no-work: none of the files is worked on here)");
          }
        },
      });
    },
    settle: async () => {
      reach?.close();
      await heartbeat?.stop();
      await queue?.close();
    },
    closingLines: (result: BatchResult) => {
      const lines: string[] = [];
      const j = result.report.journal;
      if (j && journalDidAnything(j)) lines.push(`journal: ${journalCountsText(j)} (${j.file})`);
      if (result.stop) {
        lines.push(`the batch stopped early: ${result.stop.reason}`);
        const left = result.report.totals.unprocessed;
        if (left > 0) {
          lines.push(
            `${plural(left, 'file')} not finished here stay with the workers: run the same command again to wait for them (nothing is enqueued twice), or see genpipe status`,
          );
        }
      } else if (enqueued && enqueued.jobs.length === 0) {
        lines.push('nothing to enqueue: no input file found');
      }
      return lines;
    },
  };
}

/**
 * `genpipe run … --store … --detach`: enqueues the folder and returns (exit 0); the workers do the rest
 * and `genpipe status <out-dir> --store …` follows them. Errors are thrown (the caller prints them).
 */
export async function executeDetach(
  inputDir: string,
  url: string,
  flags: BatchFlags & WorkerFlags,
  say: (line: string) => void,
  checkInputDir: (inputDir: string) => Promise<void>,
): Promise<number> {
  const options = await resolveBatchOptions(inputDir, flags, 'run', checkInputDir);
  const store = await openRunStore({ url, outDir: options.outDir, lock: false });
  const queue = openItemQueue(queueConnection(url, flags));
  try {
    await queue.waitUntilReady();
    const batch = randomUUID();
    const e = await enqueueFolder({
      queue,
      hashes: store.hashCache(),
      inputDir: options.inputDir,
      outDir: options.outDir,
      recipe: options.recipe,
      recipePath: flags.recipe ? resolve(flags.recipe) : null,
      flags: jobFlags(flags),
      batch,
      select: options.select,
    });
    // Recorded, so that status knows the out dir (a batch of the workers' from now on).
    await store.startBatch({
      inputDir: options.inputDir,
      service: serviceIdentity(resolveServiceConfig(flags).baseUrl),
      options: recordedFlags('run', flags),
    });
    await store.finishBatch('finished');
    if (flags.json) {
      process.stdout.write(
        `${JSON.stringify({ type: 'enqueued', batch, files: e.jobs.length, added: e.added, put_back: e.retried, out_dir: options.outDir })}\n`,
      );
    }
    say(enqueuedText(e, url));
    say(`the workers do the rest: genpipe status ${options.outDir} --store … shows how far they got`);
    return EXIT.ok;
  } finally {
    await queue.close();
    await store.close();
  }
}
