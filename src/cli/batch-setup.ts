/**
 * What `genpipe run` and `genpipe watch` set up alike before a batch: the service (flags, then
 * GENPIPE_* variables, or the embedded emulator — said loudly, never chosen silently), the journal
 * (`<out>/.genpipe/journal.db` or `--journal PATH`, refused on a network filesystem or while another
 * runner holds the out dir: exit 2), the runner options that wire the journal in, and the two-step
 * answer to SIGINT / SIGTERM.
 */
import { resolve } from 'node:path';
import type { ClientHooks, ClientOptions, GenpipeClient } from '../client/index.ts';
import {
  EMBEDDED_IDENTITY,
  formerServiceIdentities,
  isRecipeError,
  JOURNAL_TEXTS,
  type JobDurations,
  type Journal,
  JournalFileError,
  JournalLockedError,
  journalRunHooks,
  loadRecipe,
  NetworkFilesystemError,
  OVERLAP_WORDS,
  onDoneTargets,
  openJournal,
  overlapRefusal,
  type PlanOptions,
  RecentJobDurations,
  type Recipe,
  type RunOptions,
  redoneOnEmbedded,
  type Store,
  serviceIdentity,
} from '../pipeline/index.ts';
import {
  EMBEDDED_CLIENT_SETTINGS,
  type EmbeddedEmulator,
  startEmbeddedEmulator,
} from './embedded-emulator.ts';
import { SIGNAL_EXIT } from './exit-codes.ts';
import { type PollingFlags, pollingSettings, type RunSettings } from './flag-groups/polling.ts';
import { makeClient } from './make-client.ts';
import { checkOutDir } from './out-dir-check.ts';
import { resolveServiceConfig, type ServiceFlags } from './service-config.ts';
import { UsageError } from './usage-error.ts';

/** Flags about the journal, shared by run and watch. */
export interface JournalFlags {
  /** `--journal PATH`: the journal file (default `<out>/.genpipe/journal.db`). */
  journal?: string;
  /** `--force`: redo every file. */
  force?: boolean;
  /** `--resubmit-unknown`: the crash policy's other choice. */
  resubmitUnknown?: boolean;
  /** `--retry-failed`: retry every failed file, also those whose failure is the file's own. */
  retryFailed?: boolean;
  /** `--redo-same-content`: send a file although another with the same content and recipe is done. */
  redoSameContent?: boolean;
}

/** What the store's admission reads of the journal flags: run, watch, a dry run and a worker's jobs alike. */
export function planOptionsOf(flags: JournalFlags): PlanOptions {
  return {
    force: flags.force === true,
    resubmitUnknown: flags.resubmitUnknown === true,
    retryFailed: flags.retryFailed === true,
    redoSameContent: flags.redoSameContent === true,
  };
}

/** How run and watch answer signals, in one place. */
export const SIGNAL_CHOICES = {
  /**
   * After the first SIGINT / SIGTERM, work already at the service (a create on the wire, a job being
   * polled, a download) gets this long to finish; then it is cancelled and the journal keeps how far
   * each file got, for the next run.
   */
  graceMs: 6_000,
  /** After the first signal the process is gone within this long whatever happens (the 10 s). */
  exitDeadlineMs: 9_500,
  /** After the second signal, the wind-down (journal writes, reports) gets this long before a hard exit. */
  secondSignalDeadlineMs: 1_500,
  /**
   * A deadline that finds every file final and only the final reports (and the summary) left to write
   * waits this much longer, once: the reports of a stopped batch are written, within a bound.
   */
  finalReportsMs: 5_000,
} as const;

/** The service a batch talks to. */
export interface BatchService {
  client: GenpipeClient;
  /** The embedded emulator, when `--emulator`. */
  emulator: EmbeddedEmulator | null;
  /** Never printed. */
  secrets: string[];
  /** Who produces the results, for the journal: the base URL without credentials, or `embedded-emulator`. */
  identity: string;
  /** Former identities of the same service (the URL with its credentials), never stored. */
  formerIdentities: string[];
  /** The embedded emulator's own poll interval (loopback: fast); --poll-interval wins over it. */
  pollIntervalMs: number | undefined;
  filePollIntervalMs: number | undefined;
}

/**
 * The client of a batch: the embedded emulator with `emulator` (the command prints its banner once
 * nothing can be refused any more), else the service from the flags or GENPIPE_* variables.
 *
 * @param note - where the client's notes go (retries, 429 waits): stderr, the log file
 * @param hooks - more observers of the client's work (the metrics')
 * @throws UsageError when no service is configured, explaining every way to give one
 */
export async function connectService(
  flags: ServiceFlags & { emulator?: boolean },
  /** The polling group's settings: the client's request window. */
  settings: Pick<RunSettings, 'rateWindowMs'>,
  note: (text: string) => void,
  hooks: Omit<ClientHooks, 'log'> = {},
  /** Further client options for the service's connection (not the embedded emulator's): a store's shared quota. */
  forService?: (connection: { apiKey: string; baseUrl: string }) => Partial<ClientOptions>,
): Promise<BatchService> {
  const clientOptions: Partial<ClientOptions> = {
    hooks: { ...hooks, log: (m) => note(m) },
    ...(settings.rateWindowMs !== undefined ? { rateWindowMs: settings.rateWindowMs } : {}),
  };
  if (flags.emulator) {
    const emulator = await startEmbeddedEmulator();
    const made = makeClient(
      { apiKey: emulator.apiKey, baseUrl: emulator.url },
      {
        ...clientOptions,
        polling: { ...EMBEDDED_CLIENT_SETTINGS.polling },
      },
      {},
    );
    return {
      client: made.client,
      emulator,
      secrets: made.secrets,
      identity: EMBEDDED_IDENTITY,
      formerIdentities: [],
      pollIntervalMs: EMBEDDED_CLIENT_SETTINGS.pollIntervalMs,
      filePollIntervalMs: EMBEDDED_CLIENT_SETTINGS.polling.intervalMs,
    };
  }
  let made: ReturnType<typeof makeClient>;
  try {
    made = makeClient(flags, {
      ...clientOptions,
      ...(forService ? forService(resolveServiceConfig(flags)) : {}),
    });
  } catch (err) {
    if (err instanceof UsageError && /no service configured/.test(err.message)) {
      throw new UsageError(`${err.message}; or pass --emulator to run against the embedded emulator`);
    }
    throw err;
  }
  return {
    client: made.client,
    emulator: null,
    secrets: made.secrets,
    identity: serviceIdentity(made.config.baseUrl),
    formerIdentities: formerServiceIdentities(made.config.baseUrl),
    pollIntervalMs: undefined,
    filePollIntervalMs: undefined,
  };
}

/**
 * Opens the journal of `outDir` for a runner. Its refusals are usage errors (exit 2) with the journal's
 * own message: a network filesystem, another runner holding the out dir's lock, a file that is not a
 * journal, a runner lock that cannot be taken (out dir not writable).
 *
 * @param mountInfo - the mountinfo text to judge the filesystem by (tests); default this process's
 * @throws UsageError
 * @example const journal = openRunJournal({ outDir: 'out', path: flags.journal });
 */
export function openRunJournal(opts: {
  outDir: string;
  path?: string;
  mountInfo?: string | null;
  /** true: read it only, without the out dir's runner lock, writing nothing (a dry run). */
  readOnly?: boolean;
}): Journal {
  try {
    return openJournal({
      outDir: opts.outDir,
      ...(opts.path ? { path: resolve(opts.path) } : {}),
      ...(opts.readOnly ? { readOnly: true } : {}),
      ...(opts.mountInfo !== undefined ? { mountInfo: opts.mountInfo } : {}),
    });
  } catch (err) {
    if (
      err instanceof NetworkFilesystemError ||
      err instanceof JournalLockedError ||
      err instanceof JournalFileError
    ) {
      throw new UsageError(err.message);
    }
    throw err;
  }
}

/** The runner options that wire a store into a batch (journalRunOptions). */
export type JournalRunOptions = Pick<
  RunOptions,
  'persist' | 'admit' | 'vanished' | 'placeFor' | 'referenceMemory' | 'journal' | 'jobDurations'
>;

/**
 * The runner options that wire a store (the journal) into a batch (persist, admit, vanished, the shared references'
 * memory, the report's journal note), after recording the batch in it.
 *
 * @param options - the run's flags as recorded in the journal (never secrets)
 */
export async function journalRunOptions(
  store: Store,
  recipe: Recipe,
  flags: JournalFlags,
  batch: {
    inputDir: string;
    service: string;
    formerServices?: readonly string[];
    options: Record<string, unknown>;
    embedded?: boolean;
  },
  /** An input whose next admission retries its failure as --retry-failed would (journalRunHooks). */
  retryFailedOnce?: (input: string) => boolean,
): Promise<JournalRunOptions> {
  const { embedded = false, ...info } = batch;
  await store.startBatch(info);
  const hooks = journalRunHooks(store, recipe, planOptionsOf(flags), retryFailedOnce);
  return {
    persist: hooks.persist,
    // The embedded emulator dies with its process: a finished result on disk is still good, but an
    // upload or a generation of an earlier run cannot be resumed against the next one.
    admit: embedded
      ? async (item, signal, waitedOn) => redoneOnEmbedded(item, await hooks.admit(item, signal, waitedOn))
      : hooks.admit,
    vanished: embedded ? async () => [] : hooks.vanished,
    placeFor: hooks.placeFor,
    jobDurations: await storedJobDurations(store, info.service),
    // --force redoes everything, the shared references' uploads included.
    ...(flags.force || embedded
      ? {}
      : { referenceMemory: { fileId: hooks.referenceFileId, uploaded: hooks.referenceUploaded } }),
    journal: {
      file: store.location,
      policy: flags.resubmitUnknown ? 'resubmit' : 'fail',
      note: flags.resubmitUnknown ? JOURNAL_TEXTS.policyResubmit : JOURNAL_TEXTS.policyFail,
    },
  };
}

/**
 * A duration model seeded with how long jobs of each kind took at `service` in earlier batches, and
 * recording each job of this one (a failed write only loses a sample: the batch goes on).
 */
async function storedJobDurations(store: Store, service: string): Promise<JobDurations> {
  return new RecentJobDurations({
    seed: await store.jobDurations(service),
    onRecord: (kind, sample) => void store.recordJobDuration(service, kind, sample).catch(() => undefined),
  });
}

/** What a signal handler of a batch does. */
/**
 * The checks `run` and `watch` make of their batch flags before anything is written or sent: an out
 * dir that is or can become a folder genpipe writes in (checkOutDir), an out dir and a journal apart
 * from the input tree (neither inside it nor equal to it, and the input dir
 * not inside the out dir, however spelled; with `--on-done move`, apart from processed/ and failed/
 * beside the inbox too), the settings of its runs (pollingSettings: a poll interval the interface accepts),
 * and a recipe that loads. Each problem is a usage error (exit 2).
 *
 * @param command - whose words the refusals use
 */
export async function checkBatchInputs(
  inputDir: string,
  flags: PollingFlags & {
    recipe?: string;
    out?: string;
    journal?: string;
    /** watch's `--on-done`: with `move`, the folders inputs are moved to must lie apart from the out dir too. */
    onDone?: string;
  },
  command: keyof typeof OVERLAP_WORDS = 'run',
): Promise<{ recipe: Recipe; settings: RunSettings }> {
  if (flags.out !== undefined) {
    await checkOutDir(flags.out);
    const refusal = await overlapRefusal({
      inputDir,
      outDir: flags.out,
      ...(flags.journal ? { journal: flags.journal } : {}),
      words: OVERLAP_WORDS[command],
      ...(flags.onDone === 'move' ? { moveTargets: await onDoneTargets(inputDir) } : {}),
    });
    if (refusal !== null) throw new UsageError(refusal);
  }
  const settings = pollingSettings(flags, command);
  try {
    return {
      recipe: await loadRecipe({ inputDir, ...(flags.recipe ? { recipePath: flags.recipe } : {}) }),
      settings,
    };
  } catch (err) {
    if (isRecipeError(err)) throw new UsageError(err.lines);
    throw err;
  }
}

export interface SignalHandlers {
  /** The first SIGINT / SIGTERM: stop taking new work. */
  first(signal: 'SIGINT' | 'SIGTERM'): void;
  /** The second: cancel everything at once. */
  second(signal: 'SIGINT' | 'SIGTERM'): void;
  /** Whether only the final reports and the summary are left (a deadline then waits, once, for them). */
  windingUp(): boolean;
  /** Last resort when the process is still there at the deadline: close what must be closed. */
  beforeHardExit(): void;
}

/** The installed handlers of a batch's signals. */
export interface SignalWatch {
  /** The first signal received, or null. */
  readonly received: 'SIGINT' | 'SIGTERM' | null;
  /** Removes the handlers (a deadline already armed stays, unref'd). */
  dispose(): void;
}

/**
 * Installs the two-step answer to SIGINT and SIGTERM: the first calls `first` and arms a deadline after
 * which the process exits whatever it is doing (SIGNAL_CHOICES.exitDeadlineMs); the second calls
 * `second` and shortens that deadline (SIGNAL_CHOICES.secondSignalDeadlineMs). A deadline that finds
 * the batch winding up (every file final, the final reports being written) waits once more
 * (SIGNAL_CHOICES.finalReportsMs). At a deadline `beforeHardExit` runs (close the journal: every
 * committed write is already durable) and the process exits with 128 + the first signal's number.
 */
export function watchSignals(handlers: SignalHandlers): SignalWatch {
  let received: 'SIGINT' | 'SIGTERM' | null = null;
  let count = 0;
  let deadline: NodeJS.Timeout | null = null;
  let waitedForReports = false;
  const arm = (ms: number) => {
    if (deadline) clearTimeout(deadline);
    deadline = setTimeout(() => {
      if (!waitedForReports && handlers.windingUp()) {
        waitedForReports = true;
        arm(SIGNAL_CHOICES.finalReportsMs);
        return;
      }
      try {
        handlers.beforeHardExit();
      } finally {
        process.exit(SIGNAL_EXIT[received ?? 'SIGINT']);
      }
    }, ms);
    deadline.unref();
  };
  const on = (signal: 'SIGINT' | 'SIGTERM') => {
    count++;
    received ??= signal;
    if (count === 1) {
      arm(SIGNAL_CHOICES.exitDeadlineMs);
      handlers.first(signal);
    } else {
      arm(SIGNAL_CHOICES.secondSignalDeadlineMs);
      handlers.second(signal);
    }
  };
  const onInt = () => on('SIGINT');
  const onTerm = () => on('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  return {
    get received() {
      return received;
    },
    dispose() {
      // An armed deadline stays (unref'd): it only fires if closing the client or the emulator hangs.
      process.removeListener('SIGINT', onInt);
      process.removeListener('SIGTERM', onTerm);
    },
  };
}
