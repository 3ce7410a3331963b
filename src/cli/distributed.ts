/**
 * Distributed mode in the CLI: how a worker's session of one out dir is opened (the store, the recipe
 * and the client wired in as for `genpipe run`), `genpipe worker`'s body, and `genpipe run --store`'s
 * distributed body (discover, enqueue, work on its share unless --no-work, wait, write the reports).
 *
 * The worker's client is made in one place (workerClient), with the API key's quota shared by every
 * process on the store.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import {
  DistributedWorker,
  enqueueFolder,
  type OpenedSession,
  openItemQueue,
  type QueueConnection,
  type SessionKey,
  waitForJobs,
} from '../pipeline/distributed/index.ts';
import { createRedactor, type Item, isRecipeError, loadRecipe, writeReports } from '../pipeline/index.ts';
import { type PostgresStore, redactUrl } from '../pipeline/store-postgres/index.ts';
import { type BatchService, connectService, journalRunOptions } from './batch-setup.ts';
import { EXIT } from './exit-codes.ts';
import type { ServiceFlags } from './service-config.ts';
import { clientOptionsForStore, openRunStore } from './store-option.ts';
import { UsageError } from './usage-error.ts';

/** Flags a worker's client and sessions take. */
export interface WorkerFlags extends ServiceFlags {
  /** Files worked on at once. */
  concurrency?: number;
  /** Jobs in flight at the service at most (default: concurrency). */
  maxJobs?: number;
  /** A line for every stage each file reaches. */
  verbose?: boolean;
  pollInterval?: number;
  rateWindow?: number;
  retries?: number;
  /** Seconds a worker's hold on a job lasts without renewal (hidden; tests shorten it). */
  lockDuration?: number;
  /** Seconds between two looks for jobs whose lock lapsed (hidden; tests shorten it). */
  stallInterval?: number;
}

/** The queue's connection from the store URL and the lock flags. */
export function queueConnection(url: string, flags: WorkerFlags): QueueConnection {
  return {
    url,
    ...(flags.lockDuration !== undefined ? { lockDurationMs: Math.round(flags.lockDuration * 1000) } : {}),
    ...(flags.stallInterval !== undefined
      ? { stalledIntervalMs: Math.round(flags.stallInterval * 1000) }
      : {}),
  };
}

/**
 * The service a worker talks to (its own flags or GENPIPE_* variables: a key never travels in the
 * queue), sharing the key's quota through the store with every worker and run on it.
 */
export async function workerClient(
  url: string,
  flags: WorkerFlags,
  note: (text: string) => void,
): Promise<BatchService & { closeQuota: () => Promise<void> }> {
  // A store of its own for the key's quota, shared by every process on the store (one request window,
  // one job-slot count, one learned ceiling). Its out dir is none of the jobs': each create's intent is
  // recorded by the job's own session store (under the item's claim) before the create is sent.
  const quotaStore = await openRunStore({ url, outDir: resolve('/'), lock: false });
  try {
    const service = await connectService({ ...flags, emulator: false }, note, {}, (connection) =>
      clientOptionsForStore(quotaStore, connection),
    );
    return { ...service, closeQuota: () => quotaStore.close() };
  } catch (err) {
    await quotaStore.close();
    throw err;
  }
}

/** Opens the session of one out dir's jobs for a worker: its store (no out-dir lock), recipe, client. */
export function sessionOpener(
  url: string,
  service: BatchService,
  flags: WorkerFlags,
  say: (line: string) => void = () => undefined,
): (key: SessionKey) => Promise<OpenedSession> {
  const jobs = flags.maxJobs ?? flags.concurrency;
  return async (key) => {
    const store = await openRunStore({ url, outDir: key.outDir, lock: false });
    try {
      let recipe: Awaited<ReturnType<typeof loadRecipe>>;
      try {
        recipe = await loadRecipe({
          inputDir: key.inputDir,
          ...(key.recipe ? { recipePath: key.recipe } : {}),
        });
      } catch (err) {
        if (isRecipeError(err)) throw new Error(err.lines.join('; '));
        throw err;
      }
      const { vanished: _, ...journaling } = await journalRunOptions(store, recipe, key.flags, {
        inputDir: key.inputDir,
        service: service.identity,
        formerServices: service.formerIdentities,
        options: {
          worker: true,
          ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
        },
      });
      const redact = createRedactor(service.secrets);
      return {
        options: {
          inputDir: key.inputDir,
          outDir: key.outDir,
          recipe,
          client: service.client,
          redact,
          ...(jobs !== undefined ? { concurrency: jobs } : {}),
          ...(flags.verbose
            ? {
                onEvent: (e) => {
                  if (e.type === 'item_state') say(`worker: ${e.input} ${e.state}`);
                },
              }
            : {}),
          ...(service.pollIntervalMs !== undefined ? { pollIntervalMs: service.pollIntervalMs } : {}),
          ...(flags.retries !== undefined ? { maxResubmits: flags.retries } : {}),
          ...journaling,
        },
        close: async () => {
          await store.finishBatch().catch(() => undefined);
          await store.close();
        },
      };
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  };
}

/** How many items a worker works on at once unless told. */
export const WORKER_DEFAULT_CONCURRENCY = 8;

/**
 * `genpipe worker --store <url>`: takes jobs until SIGINT / SIGTERM (then the items in hand stop, the
 * store keeping how far each got, and go back to the queue). Returns the exit code.
 */
export async function executeWorker(
  url: string,
  flags: WorkerFlags,
  say: (line: string) => void,
): Promise<number> {
  const service = await workerClient(url, flags, say);
  const worker = new DistributedWorker({
    connection: queueConnection(url, flags),
    concurrency: flags.concurrency ?? WORKER_DEFAULT_CONCURRENCY,
    openSession: sessionOpener(url, service, flags, say),
    log: say,
  });
  let signalled: 'SIGINT' | 'SIGTERM' | null = null;
  const stopped = new Promise<void>((res) => {
    const on = (signal: 'SIGINT' | 'SIGTERM') => {
      signalled ??= signal;
      say(`worker: ${signal}: the items in hand stop and go back to the queue`);
      res();
    };
    process.once('SIGINT', () => on('SIGINT'));
    process.once('SIGTERM', () => on('SIGTERM'));
  });
  try {
    await worker.ready();
    say(
      `worker ready: store ${redactUrl(url)}, ${flags.concurrency ?? WORKER_DEFAULT_CONCURRENCY} items at once, pid ${process.pid}`,
    );
    await stopped;
  } finally {
    await worker.close(true);
    await service.client.close?.();
    await service.closeQuota();
  }
  return signalled === 'SIGTERM' ? EXIT.terminated : EXIT.interrupted;
}

/** Flags of `genpipe run --store` in distributed mode. */
export interface DistributedRunFlags extends WorkerFlags {
  out: string;
  recipe?: string;
  /** false with --no-work: only enqueue and wait. */
  work?: boolean;
  /** --detach: enqueue and return. */
  detach?: boolean;
  force?: boolean;
  resubmitUnknown?: boolean;
  retryFailed?: boolean;
}

/**
 * `genpipe run <dir> --out <dir> --store <url>` in distributed mode: discovers and enqueues the folder;
 * with --detach returns; else (unless --no-work) works on its share like a worker, waits for every job
 * of the batch, and writes report.json and report.html from the store. Returns the exit code.
 */
export async function executeDistributedRun(
  inputDir: string,
  url: string,
  flags: DistributedRunFlags,
  say: (line: string) => void,
  /** Stops the wait for the batch's jobs (it then throws the abort's reason). */
  signal?: AbortSignal,
): Promise<number> {
  const startedAt = Date.now();
  const inDir = resolve(inputDir);
  const outDir = resolve(flags.out);
  let recipe: Awaited<ReturnType<typeof loadRecipe>>;
  try {
    recipe = await loadRecipe({ inputDir: inDir, ...(flags.recipe ? { recipePath: flags.recipe } : {}) });
  } catch (err) {
    if (isRecipeError(err)) throw new UsageError(err.lines);
    throw err;
  }
  const store: PostgresStore = await openRunStore({ url, outDir, lock: false });
  const queue = openItemQueue(queueConnection(url, flags));
  let worker: DistributedWorker | null = null;
  let service: Awaited<ReturnType<typeof workerClient>> | null = null;
  try {
    await queue.waitUntilReady();
    const batch = randomUUID();
    const jobFlags = {
      ...(flags.force ? { force: true } : {}),
      ...(flags.resubmitUnknown ? { resubmitUnknown: true } : {}),
      ...(flags.retryFailed ? { retryFailed: true } : {}),
    };
    const enq = await enqueueFolder({
      queue,
      hashes: store.hashCache(),
      inputDir: inDir,
      outDir,
      recipe,
      recipePath: flags.recipe ? resolve(flags.recipe) : null,
      flags: jobFlags,
      batch,
    });
    say(
      `enqueued batch ${batch}: ${enq.jobs.length} files, ${enq.added} new, ${enq.jobs.length - enq.added} already queued or done${enq.retried ? `, ${enq.retried} failed before and tried again` : ''} (store ${redactUrl(url)})`,
    );
    if (flags.detach) return EXIT.ok;
    if (flags.work !== false) {
      service = await workerClient(url, flags, say);
      worker = new DistributedWorker({
        connection: queueConnection(url, flags),
        concurrency: flags.concurrency ?? WORKER_DEFAULT_CONCURRENCY,
        openSession: sessionOpener(url, service, flags, say),
        log: say,
      });
      await worker.ready();
    }
    const end = await waitForJobs(queue, enq.jobs, {
      ...(signal ? { signal } : {}),
      onProgress: (done, total) => say(`batch ${batch}: ${done}/${total} done`),
    });
    await worker?.close();
    worker = null;
    const inputs = new Set(enq.jobs.map((j) => j.input));
    const items: Item[] = (await store.rows()).filter((r) => inputs.has(r.input)).map((r) => r.item);
    const report = await writeReports(outDir, items, {
      startedAt,
      finishedAt: Date.now(),
      redact: createRedactor(service?.secrets ?? []),
      inputDir: inDir,
    });
    for (const f of end.failed) say(`${f.input}: no worker could process it: ${f.reason}`);
    const t = report.totals;
    say(
      `done: ${t.succeeded} succeeded, ${t.failed} failed, ${t.skipped} skipped of ${t.inputs}; report ${resolve(outDir, 'report.json')}`,
    );
    return t.failed > 0 || end.failed.length > 0 ? EXIT.failed : EXIT.ok;
  } finally {
    await worker?.close(true);
    await queue.close();
    await store.close();
    await service?.client.close?.();
    await service?.closeQuota();
  }
}
