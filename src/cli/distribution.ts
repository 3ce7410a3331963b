/**
 * Distributed mode in a batch command, `genpipe run --store` and `genpipe watch --store`: the one
 * runner's items handed to the store's workers instead of processed here (RunOptions.delegate). It
 * opens the key's queue (its connection's faults told to StoreReachability), starts the command's own
 * worker on it (its share of the work, unless --no-work), and gives the runner options that hand each
 * item over and follow its job (delegateToWorkers); a run's folder is enqueued ahead of the runner as a
 * whole (enqueueAhead), a watch's files one by one as the watcher hands them over.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import {
  DistributedWorker,
  delegateToWorkers,
  type Enqueued,
  enqueueAhead,
  openItemQueue,
} from '../pipeline/distributed/index.ts';
import type { GenpipeMetrics, RunOptions } from '../pipeline/index.ts';
import { PostgresStore, StoreReachability } from '../pipeline/store/postgres/index.ts';
import type { BatchSetup, Journaling } from './batch-command.ts';
import type { BatchFlags } from './batch-options.ts';
import { queueConnection, sessionOpener, type WorkerFlags } from './distributed.ts';

/** Files followed at once by a distributed batch (its runner's slots): following costs no job slot. */
const DELEGATED_AT_ONCE = 1_000;

/** The flags of distributed mode on `run` and `watch`. */
export interface DistributeFlags {
  /** false with --no-distribute: the folder is run here alone, the store as its journal. */
  distribute?: boolean;
  /** false with --no-work: only enqueue and wait. */
  work?: boolean;
  /** --detach (run): enqueue and return. */
  detach?: boolean;
}

/** The flags a job carries from the run that enqueued it. */
export function jobFlags(flags: BatchFlags) {
  return {
    ...(flags.force ? { force: true } : {}),
    ...(flags.resubmitUnknown ? { resubmitUnknown: true } : {}),
    ...(flags.retryFailed ? { retryFailed: true } : {}),
    ...(flags.redoSameContent ? { redoSameContent: true } : {}),
  };
}

/** A batch command's items handed to the workers, while it runs. */
export interface Distribution {
  /** The runner options that hand every item to the workers (see the module comment). */
  runOptions: Partial<RunOptions>;
  /** Files in the own worker's hands now. */
  readonly inHand: number;
  /**
   * Enqueues nothing more of a run's folder (the batch stops: the source ends with the files enqueued
   * so far).
   */
  stopEnqueuing(): void;
  /**
   * Ends it: the own worker takes no more jobs (`giveBack`: the files in its hands stop and go back to
   * the queue, else they finish), the queue closes.
   */
  close(giveBack: boolean): Promise<void>;
}

/** What distribution takes of a batch command's setup (BatchSetup). */
export type DistributionSetup = Pick<
  BatchSetup,
  'inputDir' | 'outDir' | 'recipe' | 'select' | 'settings' | 'service' | 'store' | 'note'
>;

export interface DistributionOptions {
  url: string;
  setup: DistributionSetup;
  flags: BatchFlags & DistributeFlags & WorkerFlags;
  /** Whose words the store's reachability notes use. */
  command: 'run' | 'watch';
  /** The store's place for an item no worker planned, and the report's word on the store. */
  journaling: Partial<Pick<Journaling, 'placeFor' | 'journal'>>;
  /** The command's metrics: the own worker's creates are counted there. */
  metrics: GenpipeMetrics | null;
  /** run: the input folder enqueued ahead of the runner, told once it is. */
  folder?: { onEnqueued(enqueued: Enqueued): void };
}

/** Starts handing a batch command's items to the workers (see the module comment). */
export async function startDistribution(o: DistributionOptions): Promise<Distribution> {
  const { setup, flags } = o;
  const { store } = setup;
  if (!(store instanceof PostgresStore))
    throw new Error(`a distributed ${o.command} needs a PostgreSQL store`);
  const reach = new StoreReachability(o.url, setup.note, o.command);
  const queue = openItemQueue(queueConnection(o.url, flags));
  queue.on('error', (err) => void reach.failed(err));
  const share = flags.work === false ? null : ownWorker(o);
  try {
    await queue.waitUntilReady();
    await share?.ready();
  } catch (err) {
    await share?.close(true).catch(() => undefined);
    reach.close();
    await queue.close();
    throw err;
  }
  const target = {
    queue,
    inputDir: setup.inputDir,
    outDir: setup.outDir,
    recipe: setup.recipe,
    recipePath: flags.recipe ? resolve(flags.recipe) : null,
    flags: jobFlags(flags),
    batch: randomUUID(),
  };
  const ahead = o.folder
    ? enqueueAhead({
        ...target,
        hashes: store.hashCache(),
        select: setup.select,
        onEnqueued: o.folder.onEnqueued,
      })
    : null;
  return {
    runOptions: {
      concurrency: DELEGATED_AT_ONCE,
      delegate: delegateToWorkers({ ...target, store, reach, ...(ahead ? { ahead } : {}) }),
      ...(ahead ? { source: ahead.source, ignored: ahead.ignored } : {}),
      ...(o.journaling.placeFor ? { placeFor: o.journaling.placeFor } : {}),
      ...(o.journaling.journal ? { journal: o.journaling.journal } : {}),
    },
    get inHand() {
      return share?.inHand ?? 0;
    },
    stopEnqueuing: () => ahead?.stop(),
    close: async (giveBack) => {
      ahead?.stop();
      await share?.close(giveBack);
      reach.close();
      await queue.close();
    },
  };
}

/**
 * The command's own worker in this process, with the command's client (the key's quota shared through
 * the store) and its settings; its per-file lines only with -v (the command's display shows every
 * file's states), its creates counted in the command's metrics.
 */
function ownWorker(o: DistributionOptions): DistributedWorker {
  return new DistributedWorker({
    connection: queueConnection(o.url, o.flags),
    ...(o.setup.settings.filesAtOnce !== undefined ? { filesAtOnce: o.setup.settings.filesAtOnce } : {}),
    openSession: sessionOpener(
      o.url,
      o.setup.service,
      { ...o.flags, verbose: false },
      o.setup.settings,
      undefined,
      o.metrics,
      'creates',
    ),
    log: (line) => o.setup.note(line),
    ...(o.flags.verbose ? {} : { trace: () => undefined }),
  });
}
