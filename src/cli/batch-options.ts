/**
 * The options `genpipe run` and `genpipe watch` share — how a batch runs (concurrency, emulator,
 * polling, retries), the journal, the service — and resolveBatchOptions, which applies their defaults
 * and checks in one place before anything is sent or written.
 */
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { InputSelection, OVERLAP_WORDS, Recipe } from '../pipeline/index.ts';
import { POLL_DEFAULTS } from '../pipeline/poller.ts';
import { RUN_FLAGS } from '../pipeline/run-flags.ts';
import { RUN_DEFAULTS } from '../pipeline/runner/run-defaults.ts';
import { recordedOptions } from '../pipeline/store/recorded-options.ts';
import { JOURNAL_FILE } from '../pipeline/store/sqlite/journal-file.ts';
import type { JournalFlags } from './batch-setup.ts';
import { addServiceOptions, intArg, MAX_POLL_INTERVAL_S } from './command-flags.ts';
import { DASHBOARD_DEFAULT_HOST, type DashboardAddress, dashboardArg } from './dashboard-arg.ts';
import type { RunSettings } from './run-options.ts';
import type { ServiceFlags } from './service-config.ts';
import { STORE_HELP } from './store-url.ts';
import { UsageError } from './usage-error.ts';

/** --metrics-host without --metrics-port: a usage error of the command `helpOf` names (run, watch, worker). */
export function checkMetricsHost(
  flags: { metricsHost?: string; metricsPort?: number },
  helpOf: { helpOf: string },
): void {
  if (flags.metricsHost !== undefined && flags.metricsPort === undefined) {
    throw new UsageError('--metrics-host needs --metrics-port (the port to serve the metrics on)', helpOf);
  }
}

/** Flags of a batch command (`run`, `watch`). */
export interface BatchFlags extends ServiceFlags, JournalFlags {
  /** `--store <url>`: a PostgreSQL store instead of the journal file (holds a password: never shown). */
  store?: string;
  out?: string;
  recipe?: string;
  concurrency?: number;
  json?: boolean;
  quiet?: boolean;
  /** Plain lines for every state a file reaches, not only its outcome. */
  verbose?: boolean;
  emulator?: boolean;
  /** Seconds between two reads of one job at most (fixed schedule: always). */
  pollInterval?: number;
  /** How the poll loop times its reads (hidden: the bench's baseline is `fixed`). */
  pollSchedule?: 'adaptive' | 'fixed';
  /** Resubmissions of a retryably failed generation. */
  retries?: number;
  /** The service's request window in seconds, when known (default: learned from its answers). */
  rateWindow?: number;
  /** Status reads per second at most, across all jobs. */
  maxReads?: number;
  /** `--include <glob>`, repeatable: only files one of them matches are taken. */
  include?: string[];
  /** `--exclude <glob>`, repeatable: files one of them matches are left out. */
  exclude?: string[];
  /** `--max-files <n>` (run only): the first n files in discovery order are taken. */
  maxFiles?: number;
  /** `--dry-run`: what would be sent for each file, and its cost; nothing is sent or written. */
  dryRun?: boolean;
  /** `--price-list <file>` (with --dry-run): the credits of each generation type, YAML or JSON. */
  priceList?: string;
  /** `--log-file <path>`: every stage, note and the summary appended there with ISO times. */
  logFile?: string;
  /** `--metrics-port <port>`: serve /metrics and /healthz there while the batch runs (0: a free port). */
  metricsPort?: number;
  /** `--metrics-host <host>`: the address the metrics server listens on (default 127.0.0.1). */
  metricsHost?: string;
  /** `--dashboard [host:]port`: serve the live dashboard there while the batch runs. */
  dashboard?: DashboardAddress;
}

/** A batch's options once defaulted and checked. */
export interface BatchOptions {
  /** Absolute. */
  inputDir: string;
  /** Absolute. */
  outDir: string;
  /** The loaded, validated recipe. */
  recipe: Recipe;
  concurrency: number;
  /** How its runs poll and retry (runSettings). */
  settings: RunSettings;
  /** The files to take (--include, --exclude, --max-files), globs checked, `./` dropped. */
  select: InputSelection;
}

/**
 * The options of a batch from its flags: --out given, the input dir as the command wants it, an out dir
 * and a journal apart from the input tree, a poll interval the interface accepts, a recipe that loads
 * (checkBatchInputs); every problem a usage error (exit 2).
 *
 * @param command - whose words the refusals use
 * @param checkInputDir - the command's check of the (absolute) input dir
 * @throws UsageError
 */
export async function resolveBatchOptions(
  inputDirArg: string,
  flags: BatchFlags,
  command: keyof typeof OVERLAP_WORDS,
  checkInputDir: (inputDir: string) => Promise<void>,
): Promise<BatchOptions> {
  const helpOf = { helpOf: `genpipe ${command}` };
  if (!flags.out)
    throw new UsageError('--out <out-dir> is required: where the outputs and reports go', helpOf);
  if (flags.priceList !== undefined && !flags.dryRun) {
    throw new UsageError(
      '--price-list is only for a dry run: add --dry-run (a dry run prices what a run would send)',
      helpOf,
    );
  }
  if (flags.metricsPort !== undefined && flags.dryRun) {
    throw new UsageError('--metrics-port serves a running batch: a dry run has no metrics', helpOf);
  }
  checkMetricsHost(flags, helpOf);
  if (flags.dashboard !== undefined && flags.dryRun) {
    throw new UsageError('--dashboard shows a running batch: a dry run has none', helpOf);
  }
  const inputDir = resolve(inputDirArg);
  const outDir = resolve(flags.out);
  await checkInputDir(inputDir);
  // Loaded only now: the recipe and the client are no part of the options' definitions (--help).
  const [{ checkBatchInputs }, { relativeGlobProblem }] = await Promise.all([
    import('./batch-setup.ts'),
    import('../pipeline/recipe.ts'),
  ]);
  const { recipe, settings } = await checkBatchInputs(inputDir, flags, command);
  const globs = (flag: string, given: string[] | undefined) =>
    checkedGlobs(flag, given, helpOf, relativeGlobProblem);
  return {
    inputDir,
    outDir,
    recipe,
    concurrency: flags.concurrency ?? RUN_DEFAULTS.concurrency,
    settings,
    select: {
      include: globs('--include', flags.include),
      exclude: globs('--exclude', flags.exclude),
      ...(flags.maxFiles !== undefined ? { maxFiles: flags.maxFiles } : {}),
    },
  };
}

/**
 * The globs of `--include` / `--exclude` as matched: a leading `./` dropped, as in the recipe.
 *
 * @throws UsageError naming the flag and the glob when one is empty or not relative to the input dir
 */
function checkedGlobs(
  flag: string,
  globs: string[] | undefined,
  helpOf: { helpOf: string },
  relativeGlobProblem: (glob: string) => string | null,
): string[] {
  return (globs ?? []).map((raw) => {
    if (raw.trim() === '')
      throw new UsageError(`${flag} needs a glob such as '**/*.jpg', not an empty string`, helpOf);
    const glob = raw.startsWith('./') ? raw.slice(2) : raw;
    const problem = relativeGlobProblem(glob);
    if (problem !== null) throw new UsageError(`${flag} '${raw}': ${problem}`, helpOf);
    return glob;
  });
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * The flags of a run or watch as the journal and the log file record them: without a credential (no
 * key, no token, no URL's password: recordedOptions).
 */
export function recordedFlags(command: string, flags: BatchFlags): Record<string, unknown> {
  return recordedOptions({ command, ...flags });
}

/** How many items a `genpipe worker` works on at once unless told (--concurrency). */
export const WORKER_DEFAULT_CONCURRENCY = 8;

/** Where the metrics server listens unless --metrics-host says otherwise. */
export const METRICS_DEFAULT_HOST = '127.0.0.1';

/** A port number (0: a free port), as --metrics-port takes it. */
export function portArg(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n > 65_535) {
    throw new InvalidArgumentError('expected a port number from 0 to 65535 (0: a free port)');
  }
  return n;
}

/** The longest --rate-window taken, seconds (24 h, the longest window the client paces by). */
export const MAX_RATE_WINDOW_S = 86_400;

/** Parses a number of seconds greater than 0 and at most `max` for commander. */
export function positiveSeconds(max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || n > max) {
      throw new InvalidArgumentError(`expected a number of seconds greater than 0 and at most ${max}`);
    }
    return n;
  };
}

/**
 * Adds the options every batch command has after its own: how the batch runs (concurrency, emulator,
 * polling, retries), the journal (--journal, --force, --retry-failed, --resubmit-unknown), the service
 * and the output (--json, --quiet).
 */
export function addSharedBatchOptions(cmd: Command): Command {
  cmd
    .option(
      '--concurrency <n>',
      `jobs in flight at most (default ${RUN_DEFAULTS.concurrency}; the service's own ceiling also applies)`,
      intArg(1),
    )
    .option('--emulator', 'run against the embedded emulator instead of the service (said loudly)')
    .option(
      '--poll-interval <seconds>',
      `longest time between two status reads of a job (default ${POLL_DEFAULTS.intervalMs / 1000}; at least 1 against the service, any positive value with --emulator; at most ${MAX_POLL_INTERVAL_S}); the first read comes when jobs of its kind were seen ended`,
      positiveSeconds(MAX_POLL_INTERVAL_S),
    )
    .addOption(
      new Option(
        '--poll-schedule <schedule>',
        'adaptive (default), or fixed: every --poll-interval from submission (bench baseline)',
      )
        .choices(['adaptive', 'fixed'])
        .hideHelp(),
    )
    .option(
      '--max-reads <n>',
      `status reads per second at most, across all jobs (default ${POLL_DEFAULTS.maxGetsPerSecond}); raise it only when your service's abuse ceiling allows: one read frees a job's slot, so it bounds jobs finished per second`,
      intArg(1),
    )
    .option(
      '--rate-window <seconds>',
      `the service's request window, when you know it (at most ${MAX_RATE_WINDOW_S}: 24 h; default: learned from its X-RateLimit-Reset)`,
      positiveSeconds(MAX_RATE_WINDOW_S),
    )
    .option(
      '--include <glob>',
      "take only the files this glob matches on their path relative to the input dir, in the recipe's glob dialect (repeatable: any of them)",
      collect,
    )
    .option(
      '--exclude <glob>',
      'leave out the files this glob matches (repeatable; wins over --include); they are listed as ignored',
      collect,
    )
    .option(
      '--retries <n>',
      `resubmissions of a generation that failed with a retryable failure_code, in each run (default ${RUN_DEFAULTS.maxResubmits})`,
      intArg(0),
    )
    .option(
      `${RUN_FLAGS.journalFlag} <path>`,
      `the journal file, on a local disk (default <out-dir>/${JOURNAL_FILE.dirName}/${JOURNAL_FILE.fileName})`,
    )
    .option('--store <url>', STORE_HELP)
    .option(
      RUN_FLAGS.forceFlag,
      'redo every file, even those an earlier run finished (shared references are uploaded again too)',
    )
    .option(
      RUN_FLAGS.retryFailedFlag,
      "retry every file that failed at the service in an earlier run, also those whose failure is the file's own (default: only failures that may pass now)",
    )
    .option(
      RUN_FLAGS.redoSameContentFlag,
      'send a file even when another file of the folder with the same bytes and recipe is done or being processed (default: reuse its outputs and send nothing; use it for another take)',
    )
    .option(
      RUN_FLAGS.resubmitUnknownFlag,
      'submit again the files whose create may have reached the service before an interruption (default: fail them, never pay twice)',
    )
    .option(
      '--dry-run',
      'say what would be sent for each file (request, upload mode, or why it would fail) and the generations and their estimated cost; nothing is uploaded, submitted or written',
    )
    .option(
      '--price-list <file>',
      "with --dry-run: the credits of one generation of each type, a YAML or JSON map such as { image: 1, video: 10 } (default: the emulator's configured costs)",
    )
    .option(
      '-v, --verbose',
      'when stdout is not a terminal, a line for every stage each file reaches (default: one line per file outcome)',
    )
    .option(
      '--log-file <path>',
      'append a record of the run there: every stage of every file with ISO times (as -v, whatever stdout shows), the options, notes such as retries, and the closing summary; secrets masked',
    )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics (GET /metrics) and a health check (GET /healthz) on this port while the batch runs; 0 picks a free port; the address is printed on stderr',
      portArg,
    )
    .option(
      '--metrics-host <host>',
      `the address the metrics server listens on (default ${METRICS_DEFAULT_HOST}; 0.0.0.0 exposes it to the network)`,
    )
    .option(
      '--dashboard <[host:]port>',
      `serve a live dashboard of the batch in a browser on this port while it runs (host default ${DASHBOARD_DEFAULT_HOST}; 0 picks a free port); the address and the token its actions need are printed on stderr`,
      dashboardArg,
    );
  return addServiceOptions(cmd, {
    json: 'one JSON object per event on stdout (errors as one JSON line on stderr)',
    quiet: 'no progress and no notes (the closing summary is still printed, and so are --json events)',
  });
}
