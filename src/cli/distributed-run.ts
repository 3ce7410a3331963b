/**
 * `genpipe run <dir> --out <dir> --store <url>`: distributed mode's run. It enqueues the folder's files
 * for the store's workers, works on its share here like a worker (unless --no-work), follows the batch
 * to its end and writes report.json and report.html — through the same body as every run
 * (batch-command.ts: progress display, --json, --log-file, --metrics-port, signals, the closing
 * summary, exit codes) and the same runner, whose items are handed to the workers (distribution.ts)
 * instead of processed here. `--detach` enqueues and returns (executeDetach). The demo's distributed
 * run (`genpipe demo --workers`) is the same runner with plain progress lines (executeDistributedRun).
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import {
  type Enqueued,
  enqueueFolder,
  openItemQueue,
  sharedDatabaseOf,
  WORKER_HEARTBEAT_MS,
  WorkerHeartbeat,
} from '../pipeline/distributed/index.ts';
import {
  type BatchResult,
  createProgress,
  createRedactor,
  isRecipeError,
  loadRecipe,
  REPORT_HTML_FILE,
  type Recipe,
  serviceIdentity,
  startBatch,
} from '../pipeline/index.ts';
import { type PostgresStore, redactUrl } from '../pipeline/store/postgres/index.ts';
import { isoTime } from '../spec/iso-time.ts';
import { plural } from '../spec/plural.ts';
import type { BatchCommand } from './batch-command.ts';
import type { BatchFlags } from './batch-options.ts';
import { recordedFlags, resolveBatchOptions } from './batch-options.ts';
import { connectService } from './batch-setup.ts';
import { queueConnection, type WorkerFlags } from './distributed.ts';
import { type DistributeFlags, type Distribution, jobFlags, startDistribution } from './distribution.ts';
import { EXIT } from './exit-codes.ts';
import { runOptionsOf } from './run-options.ts';
import { resolveServiceConfig } from './service-config.ts';
import { signalStopReason } from './signal-words.ts';
import { openRunStore } from './store-option.ts';
import { UsageError } from './usage-error.ts';

export type { DistributeFlags } from './distribution.ts';

/** The line that says what was enqueued. */
function enqueuedText(e: Enqueued, url: string): string {
  const known = e.files - e.added - e.retried;
  return (
    `enqueued ${plural(e.files, 'file')} in the store's queue: ${e.added} new` +
    (e.retried > 0 ? `, ${e.retried} not finished before and put back` : '') +
    `, ${known} already queued or done (store ${redactUrl(url)})`
  );
}

/** Why a distributed run's dashboard cannot pause or retry. */
const DISTRIBUTED_UNAVAILABLE = {
  retry: "the store's workers take this run's files: run it again with --retry-failed to retry its failures",
  pause: "the store's workers take this run's files: stop a worker to take fewer at once",
};

/**
 * The BatchCommand of a distributed run: `run`'s own (its progress, its exit codes) but for where its
 * items go (the workers, distribution.ts), what a signal says, and the closing lines.
 *
 * @param run - `genpipe run`'s command (run.ts)
 */
export function distributedRunCommand(
  run: BatchCommand,
  url: string,
  flags: BatchFlags & DistributeFlags & WorkerFlags,
): BatchCommand {
  let distribution: Distribution | null = null;
  let enqueued: Enqueued | null = null;
  let heartbeat: WorkerHeartbeat | null = null;
  let stopped = false;
  // The files are the store's workers': the run's own pause and retry do not reach them.
  const {
    retake: _retake,
    retryFailedOnce: _once,
    pauseIntake: _pause,
    resumeIntake: _resume,
    ...alone
  } = run;
  return {
    ...alone,
    unavailable: DISTRIBUTED_UNAVAILABLE,
    storeLock: false,
    interruption: (signal) => ({
      reason: signalStopReason(signal),
      note:
        flags.work === false
          ? `${signalStopReason(signal)}: this run stops waiting; the workers go on with the batch (signal again to stop at once)`
          : `${signalStopReason(signal)}: this run stops waiting and its own worker gives the files in its hands ` +
            'back to the queue; the workers go on with the batch (signal again to stop at once)',
    }),
    async runOptions(setup, journaling, metrics) {
      distribution = await startDistribution({
        url,
        setup,
        flags,
        command: 'run',
        journaling,
        metrics,
        folder: {
          onEnqueued: (e) => {
            enqueued = e;
            setup.note(enqueuedText(e, url));
            if (flags.work === false && e.files > 0) {
              setup.note("waiting for the store's workers (--no-work: none of the files is worked on here)");
            }
          },
        },
      });
      const own = distribution;
      // Among the store's workers while it runs (status tells a live run from one that died by it).
      heartbeat = new WorkerHeartbeat({
        store: sharedDatabaseOf(setup.store as PostgresStore),
        intervalMs: WORKER_HEARTBEAT_MS,
        inHand: () => own.inHand,
        role: flags.work === false ? 'run --no-work' : 'run',
      });
      await heartbeat.start();
      return own.runOptions;
    },
    observe: (event) => {
      // However the batch stops (a signal, the demo's stop), nothing more of the folder is enqueued.
      if (event.type !== 'batch_stopping') return;
      stopped = true;
      distribution?.stopEnqueuing();
    },
    stopIntake: async () => {
      distribution?.stopEnqueuing();
    },
    settle: async () => {
      // Stopped: the own worker's files go back to the queue (the store keeps how far each got).
      await distribution?.close(stopped);
      distribution = null;
      await heartbeat?.stop();
      heartbeat = null;
    },
    closingLines: (result: BatchResult) => {
      const lines: string[] = [];
      if (result.stop) {
        lines.push(`the batch stopped early: ${result.stop.reason}`);
        const left = result.report.totals.unprocessed;
        if (left > 0) {
          lines.push(
            `${plural(left, 'file')} not finished here stay with the workers: run the same command again to wait for them (nothing is enqueued twice), or see genpipe status`,
          );
        }
      } else if (enqueued && enqueued.files === 0) {
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
        `${JSON.stringify({ type: 'enqueued', at: isoTime(Date.now()), batch, files: e.files, added: e.added, put_back: e.retried, out_dir: options.outDir })}\n`,
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

/**
 * The demo's distributed run (`genpipe demo --workers`): the runner hands `inputDir`'s files to the
 * workers the demo started (distribution.ts, --no-work: none here), follows them with plain progress
 * lines and writes the reports. `signal` stops the wait. Returns the exit code. (`genpipe run --store`
 * goes through the batch body: distributed-run.ts.)
 */
export async function executeDistributedRun(
  inputDir: string,
  url: string,
  flags: { out: string; baseUrl: string; apiKey: string },
  say: (line: string) => void,
  signal?: AbortSignal,
): Promise<number> {
  const inDir = resolve(inputDir);
  const outDir = resolve(flags.out);
  let recipe: Recipe;
  try {
    recipe = await loadRecipe({ inputDir: inDir });
  } catch (err) {
    if (isRecipeError(err)) throw new UsageError(err.lines);
    throw err;
  }
  const store: PostgresStore = await openRunStore({ url, outDir, lock: false });
  // The runner's client: none of the files is worked on here, so it sends nothing.
  const service = await connectService({ ...flags, emulator: false }, {}, say);
  const progress = createProgress({ json: false, isTTY: false });
  const setup = {
    inputDir: inDir,
    outDir,
    recipe,
    select: {},
    settings: {},
    service,
    store,
    note: say,
  };
  let distribution: Distribution | null = null;
  try {
    distribution = await startDistribution({
      url,
      setup,
      flags: { ...flags, work: false },
      command: 'run',
      journaling: {},
      metrics: null,
      folder: { onEnqueued: () => undefined },
    });
    const batch = startBatch(
      runOptionsOf(
        { ...setup, redact: createRedactor([]), onEvent: progress.sink, ...(signal ? { signal } : {}) },
        distribution.runOptions,
      ),
    );
    if (signal?.aborted) batch.stop('the demo was stopped');
    else signal?.addEventListener('abort', () => batch.stop('the demo was stopped'), { once: true });
    const result = await batch.done;
    progress.close();
    const t = result.report.totals;
    say(
      `${plural(t.inputs, 'file')}: ${t.succeeded} succeeded, ${t.failed} failed, ${t.skipped} skipped` +
        (t.unprocessed > 0 ? `, ${t.unprocessed} not processed` : '') +
        `; report: ${resolve(outDir, REPORT_HTML_FILE)}`,
    );
    signal?.throwIfAborted();
    return t.failed > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    await distribution?.close(true);
    await service.client.close();
    await store.close();
  }
}
