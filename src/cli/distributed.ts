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
import type { ClientHooks } from '../client/index.ts';
import {
  DistributedWorker,
  enqueueFolder,
  type OpenedSession,
  openItemQueue,
  type QueueConnection,
  type SessionKey,
  WorkerHeartbeat,
  waitForJobs,
} from '../pipeline/distributed/index.ts';
import {
  createRedactor,
  type GenpipeMetrics,
  type Item,
  isRecipeError,
  loadRecipe,
  type PipelineEvent,
  writeReports,
} from '../pipeline/index.ts';
import {
  type PostgresStore,
  redactUrl,
  StoreReachability,
  WORKER_HEARTBEAT_MS,
} from '../pipeline/store-postgres/index.ts';
import { startBatchMetrics } from './batch-metrics.ts';
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

/** Flags of `genpipe worker` alone. */
export interface WorkerOnlyFlags extends WorkerFlags {
  /** Serve /metrics and /healthz there (0: a free port). */
  metricsPort?: number;
  metricsHost?: string;
  /** Seconds between two heartbeats of the worker's row in the store (hidden; tests shorten it). */
  heartbeat?: number;
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
  hooks: Omit<ClientHooks, 'log'> = {},
): Promise<BatchService & { quotaStore: PostgresStore; closeQuota: () => Promise<void> }> {
  // A store of its own for the key's quota, shared by every process on the store (one request window,
  // one job-slot count, one learned ceiling). Its out dir is none of the jobs': each create's intent is
  // recorded by the job's own session store (under the item's claim) before the create is sent.
  const quotaStore = await openRunStore({ url, outDir: resolve('/'), lock: false });
  try {
    const service = await connectService({ ...flags, emulator: false }, note, hooks, (connection) =>
      clientOptionsForStore(quotaStore, connection),
    );
    return { ...service, quotaStore, closeQuota: () => quotaStore.close() };
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
  metrics: GenpipeMetrics | null = null,
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
      const {
        vanished: _,
        jobDurations,
        ...journaling
      } = await journalRunOptions(store, recipe, key.flags, {
        inputDir: key.inputDir,
        service: service.identity,
        formerServices: service.formerIdentities,
        options: {
          worker: true,
          ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
        },
      });
      const redact = createRedactor(service.secrets);
      const sinks = [
        // A session's own batch events are not the worker's state (a worker runs on past them).
        metrics
          ? (e: PipelineEvent) => {
              if (!e.type.startsWith('batch_')) metrics.sink(e);
            }
          : null,
        flags.verbose
          ? (e: PipelineEvent) => {
              if (e.type === 'item_state') say(`worker: ${e.input} ${e.state}`);
            }
          : null,
      ].filter((f) => f !== null);
      return {
        options: {
          inputDir: key.inputDir,
          outDir: key.outDir,
          recipe,
          client: service.client,
          redact,
          ...(jobs !== undefined ? { concurrency: jobs } : {}),
          ...(sinks.length > 0
            ? {
                onEvent: (e) => {
                  for (const f of sinks) f(e);
                },
              }
            : {}),
          ...(service.pollIntervalMs !== undefined ? { pollIntervalMs: service.pollIntervalMs } : {}),
          ...(flags.retries !== undefined ? { maxResubmits: flags.retries } : {}),
          ...journaling,
          ...(jobDurations ? { jobDurations: metrics?.observeDurations(jobDurations) ?? jobDurations } : {}),
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
  flags: WorkerOnlyFlags,
  say: (line: string) => void,
): Promise<number> {
  const served = await startBatchMetrics(flags, 'worker', say);
  const metrics = served?.metrics ?? null;
  let service: Awaited<ReturnType<typeof workerClient>>;
  try {
    service = await workerClient(url, flags, say, metrics?.clientHooks);
  } catch (err) {
    await served?.server.close();
    throw err;
  }
  metrics?.watchClient(service.client);
  const worker = new DistributedWorker({
    connection: queueConnection(url, flags),
    concurrency: flags.concurrency ?? WORKER_DEFAULT_CONCURRENCY,
    openSession: sessionOpener(url, service, flags, say, metrics),
    log: say,
  });
  const heartbeat = new WorkerHeartbeat({
    store: service.quotaStore,
    intervalMs: Math.round((flags.heartbeat ?? WORKER_HEARTBEAT_MS / 1000) * 1000),
    inHand: () => worker.inHand,
    onBeat: (problem) => metrics?.health.problem(problem === null ? null : `the store: ${problem}`),
  });
  let signalled: 'SIGINT' | 'SIGTERM' | null = null;
  const stopped = new Promise<void>((res) => {
    const on = (signal: 'SIGINT' | 'SIGTERM') => {
      signalled ??= signal;
      metrics?.health.stopping(signal);
      say(`worker: ${signal}: the items in hand stop and go back to the queue`);
      res();
    };
    process.once('SIGINT', () => on('SIGINT'));
    process.once('SIGTERM', () => on('SIGTERM'));
  });
  try {
    await worker.ready();
    await heartbeat.start();
    metrics?.health.running();
    say(
      `worker ready: store ${redactUrl(url)}, ${flags.concurrency ?? WORKER_DEFAULT_CONCURRENCY} items at once, pid ${process.pid}`,
    );
    await stopped;
  } finally {
    await worker.close(true);
    await heartbeat.stop();
    await service.client.close?.();
    await service.closeQuota();
    await served?.server.close();
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
  const reach = new StoreReachability(url, say, 'run');
  queue.on('error', (err) => void reach.failed(err));
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
      reach,
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
    reach.close();
    await worker?.close(true);
    await queue.close();
    await store.close();
    await service?.client.close?.();
    await service?.closeQuota();
  }
}
