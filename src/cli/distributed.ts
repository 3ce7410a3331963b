import type { ClientHooks } from '../client/index.ts';
import type { DashboardModel } from '../pipeline/dashboard/index.ts';
import {
  DistributedWorker,
  type OpenedSession,
  openSharedDatabase,
  type QueueConnection,
  queueOf,
  type SessionKey,
  type SharedDatabase,
  WorkerHeartbeat,
} from '../pipeline/distributed/index.ts';
import {
  createRedactor,
  type GenpipeMetrics,
  isRecipeError,
  keyFingerprint,
  loadRecipe,
  type PipelineEvent,
  type Recipe,
  serviceIdentity,
} from '../pipeline/index.ts';
import { redactUrl } from '../pipeline/store/postgres/index.ts';
import { plural } from '../spec/plural.ts';
import { shown } from './batch-command.ts';
import { type BatchDashboard, bothHooks, startBatchDashboard } from './batch-dashboard.ts';
import { startBatchMetrics } from './batch-metrics.ts';
import { type BatchService, connectService, journalRunOptions } from './batch-setup.ts';
import type { DashboardAddress } from './dashboard-arg.ts';
import { batchPrices } from './dry-run-command.ts';
import { EXIT } from './exit-codes.ts';
import { type PollingFlags, pollingSettings } from './flag-groups/polling.ts';
import { type RunSettings, runOptionsOf } from './run-options.ts';
import { resolveServiceConfig, type ServiceFlags } from './service-config.ts';
import { openRunStore, quotaKeyOf } from './store-option.ts';

/** Flags a worker's client and sessions take. */
export interface WorkerFlags extends ServiceFlags, PollingFlags {
  /** A line for every stage each file reaches. */
  verbose?: boolean;
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
  /** `--dashboard [host:]port`: the worker's files on a live page. */
  dashboard?: DashboardAddress;
}

/**
 * The queue's connection from the store URL, the service and API key the jobs are for (their queue: a
 * worker takes only those of its own key), and the lock flags.
 *
 * @throws UsageError when no service is configured
 */
export function queueConnection(url: string, flags: WorkerFlags): QueueConnection {
  const service = resolveServiceConfig(flags);
  return {
    url,
    queue: queueOf(serviceIdentity(service.baseUrl), keyFingerprint(service.apiKey)),
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
  settings: RunSettings,
  note: (text: string) => void,
  hooks: Omit<ClientHooks, 'log'> = {},
): Promise<BatchService & { shared: SharedDatabase; closeQuota: () => Promise<void> }> {
  // The key's quota, shared by every process on the store's database (one request window, one
  // job-slot count, one learned ceiling), and the registry of workers: no out dir's. Each create's
  // intent is recorded by the job's own session store (under the item's claim) before it is sent.
  const shared = await openSharedDatabase(url);
  try {
    const service = await connectService(
      { ...flags, emulator: false },
      settings,
      note,
      hooks,
      (connection) => ({
        sharedQuota: shared.sharedQuota(quotaKeyOf(connection)),
      }),
    );
    return { ...service, shared, closeQuota: () => shared.close() };
  } catch (err) {
    await shared.close();
    throw err;
  }
}

/** Opens the session of one out dir's jobs for a worker: its store (no out-dir lock), recipe, client. */
export function sessionOpener(
  url: string,
  service: BatchService,
  flags: WorkerFlags,
  /** The worker's settings (pollingSettings of its flags, checked as it started). */
  settings: RunSettings,
  say: (line: string) => void = () => undefined,
  metrics: GenpipeMetrics | null = null,
  /**
   * `all`: every item event feeds the metrics (a worker's); `creates`: only its creates (a run's own
   * share, whose files the run's metrics already hear of from the batch it follows).
   */
  fed: 'all' | 'creates' = 'all',
  /** `--dashboard`'s model (a worker's): each session's files, named with their out dir. */
  dashboard: DashboardModel | null = null,
): (key: SessionKey) => Promise<OpenedSession> {
  const shared = sessionSink(say, flags.verbose === true, metrics, fed);
  return async (key) => {
    const onEvent = withDashboard(shared, dashboard, key.outDir);
    const store = await openRunStore({ url, outDir: key.outDir, lock: false });
    try {
      const recipe = await sessionRecipe(key);
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
          ...(settings.concurrency !== undefined ? { concurrency: settings.concurrency } : {}),
          ...(settings.filesAtOnce !== undefined ? { filesAtOnce: settings.filesAtOnce } : {}),
        },
      });
      const base = {
        service,
        settings,
        inputDir: key.inputDir,
        outDir: key.outDir,
        recipe,
        redact: createRedactor(service.secrets),
        ...(onEvent ? { onEvent } : {}),
      };
      return {
        options: runOptionsOf(base, {
          ...journaling,
          ...(jobDurations ? { jobDurations: metrics?.observeDurations(jobDurations) ?? jobDurations } : {}),
        }),
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

/** The recipe a job names (its input dir's genpipe.yaml unless --recipe was given), its problems in one line. */
async function sessionRecipe(key: SessionKey): Promise<Recipe> {
  try {
    return await loadRecipe({ inputDir: key.inputDir, ...(key.recipe ? { recipePath: key.recipe } : {}) });
  } catch (err) {
    if (isRecipeError(err)) throw new Error(err.lines.join('; '));
    throw err;
  }
}

/**
 * A session's sink with the worker's dashboard fed too: its files' events, each file named with its
 * out dir (a worker serves many); a session's own batch events are not the worker's.
 */
function withDashboard(
  sink: ((e: PipelineEvent) => void) | undefined,
  model: DashboardModel | null,
  outDir: string,
): ((e: PipelineEvent) => void) | undefined {
  if (!model) return sink;
  return (e) => {
    sink?.(e);
    if (e.type === 'item_state' || e.type === 'item_discovered')
      model.apply({ ...e, input: `${shown(outDir)}/${e.input}` });
  };
}

/** Where a worker's session events go: its metrics, its -v lines; undefined when nowhere. */
function sessionSink(
  say: (line: string) => void,
  verbose: boolean,
  metrics: GenpipeMetrics | null,
  fed: 'all' | 'creates',
): ((e: PipelineEvent) => void) | undefined {
  const sinks = [
    // A session's own batch events are not the worker's state (a worker runs on past them).
    metrics
      ? (e: PipelineEvent) => {
          if (e.type.startsWith('batch_')) return;
          if (fed === 'all' || (e.type === 'item_state' && e.state === 'submitted' && e.stage === 'submit'))
            metrics.sink(e);
        }
      : null,
    verbose
      ? (e: PipelineEvent) => {
          if (e.type === 'item_state') say(`worker: ${e.input} ${e.state}`);
        }
      : null,
  ].filter((f) => f !== null);
  if (sinks.length === 0) return undefined;
  return (e) => {
    for (const f of sinks) f(e);
  };
}

/**
 * `genpipe worker --store <url>`: takes jobs until SIGINT / SIGTERM (then the items in hand stop, the
 * store keeping how far each got, and go back to the queue). Returns the exit code.
 */
export async function executeWorker(
  url: string,
  flags: WorkerOnlyFlags,
  say: (line: string) => void,
): Promise<number> {
  // Checked before anything starts, as run and watch check theirs.
  const settings = pollingSettings(flags, 'worker');
  const served = await startBatchMetrics(flags, 'worker', say);
  const metrics = served?.metrics ?? null;
  let stopNow: () => void = () => undefined;
  let stoppedFromPage = false;
  let dashboard: BatchDashboard | null = null;
  let service: Awaited<ReturnType<typeof workerClient>>;
  try {
    dashboard = await startBatchDashboard({
      address: flags.dashboard,
      command: 'worker',
      inputDir: null,
      outDir: null,
      title: 'worker',
      actions: {
        stop: async () => {
          stopNow();
          return 'stopping: the items in hand stop and go back to the queue';
        },
        unavailable: {
          retry:
            "a worker takes what the store hands it: retry a failure from the run's or the watch's dashboard, or with --retry-failed",
          pause: 'a worker cannot pause: stop it (its files go back to the queue) and start it again',
        },
      },
      print: say,
      record: () => undefined,
    });
    service = await workerClient(
      url,
      flags,
      settings,
      say,
      bothHooks(metrics?.clientHooks, dashboard?.quota.hooks),
    );
  } catch (err) {
    await served?.server.close();
    await dashboard?.server.close();
    throw err;
  }
  metrics?.watchClient(service.client);
  dashboard?.quota.watch(service.client);
  if (dashboard) {
    // The credits on the page, at the prices a dry run would use (the emulator's costs).
    const { prices, source } = await batchPrices(flags, new AbortController().signal);
    dashboard.model.setPrices(prices, source);
  }
  const worker = new DistributedWorker({
    connection: queueConnection(url, flags),
    ...(settings.filesAtOnce !== undefined ? { filesAtOnce: settings.filesAtOnce } : {}),
    openSession: sessionOpener(url, service, flags, settings, say, metrics, 'all', dashboard?.model ?? null),
    log: say,
  });
  const heartbeat = new WorkerHeartbeat({
    store: service.shared,
    ...(flags.heartbeat !== undefined ? { intervalMs: Math.round(flags.heartbeat * 1000) } : {}),
    inHand: () => worker.inHand,
    onBeat: (problem) => metrics?.health.problem(problem === null ? null : `the store: ${problem}`),
  });
  let signalled: 'SIGINT' | 'SIGTERM' | null = null;
  const stopped = new Promise<void>((res) => {
    const on = (signal: 'SIGINT' | 'SIGTERM') => {
      signalled ??= signal;
      metrics?.health.stopping(signal);
      if (dashboard) dashboard.model.batch.stopping = `stopping: ${signal}`;
      say(`worker: ${signal}: the items in hand stop and go back to the queue`);
      res();
    };
    process.once('SIGINT', () => on('SIGINT'));
    process.once('SIGTERM', () => on('SIGTERM'));
    stopNow = () => {
      stoppedFromPage = signalled === null;
      if (dashboard) dashboard.model.batch.stopping = 'stopping: from the dashboard';
      say('worker: stopped from the dashboard: the items in hand stop and go back to the queue');
      res();
    };
  });
  try {
    await worker.ready();
    await heartbeat.start();
    metrics?.health.running();
    // The page's batch line: running from now, as a run's or a watch's says once its batch started.
    if (dashboard) dashboard.model.batch.startedAt = Date.now();
    say(
      `worker ready: store ${redactUrl(url)}, ${plural(worker.filesAtOnce, 'file')} at once, pid ${process.pid}`,
    );
    await stopped;
  } finally {
    await worker.close(true);
    await heartbeat.stop();
    await service.client.close?.();
    await service.closeQuota();
    await served?.server.close();
    await dashboard?.server.close();
  }
  if (stoppedFromPage && signalled === null) return EXIT.ok;
  return signalled === 'SIGTERM' ? EXIT.terminated : EXIT.interrupted;
}
