/**
 * The options `genpipe run` and `genpipe watch` share — the emulator, the dry run, then the flag groups
 * (flag-groups/: selection, polling and pacing, journal and store, output, metrics, connection) — and
 * resolveBatchOptions, which checks them in one place before anything is sent or written. It defaults
 * nothing: what no flag says, the runner's options module, the client or the worker does.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { InputSelection, OVERLAP_WORDS, Recipe } from '../pipeline/index.ts';
import { recordedOptions } from '../pipeline/store/recorded-options.ts';
import type { JournalFlags } from './batch-setup.ts';
import type { DashboardAddress } from './dashboard-arg.ts';
import {
  addFlagGroups,
  CONNECTION,
  checkMetricsHost,
  DASHBOARD,
  JOURNAL,
  METRICS,
  outputGroup,
  POLLING,
  type PollingFlags,
  type RunSettings,
  SELECTION,
} from './flag-groups/index.ts';
import type { ServiceFlags } from './service-config.ts';
import { UsageError } from './usage-error.ts';

export { checkMetricsHost, METRICS_DEFAULT_HOST } from './flag-groups/index.ts';
export { portArg, positiveSeconds } from './flag-groups/parsers.ts';
export { MAX_RATE_WINDOW_S } from './flag-groups/polling.ts';

/** Flags of a batch command (`run`, `watch`). */
export interface BatchFlags extends ServiceFlags, JournalFlags, PollingFlags {
  /** `--store <url>`: a PostgreSQL store instead of the journal file (holds a password: never shown). */
  store?: string;
  out?: string;
  recipe?: string;
  json?: boolean;
  quiet?: boolean;
  /** Plain lines for every state a file reaches, not only its outcome. */
  verbose?: boolean;
  /** `--include <glob>`, repeatable: only files one of them matches are taken. */
  include?: string[];
  /** `--exclude <glob>`, repeatable: files one of them matches are left out. */
  exclude?: string[];
  /** `--max-files <n>` (run only): the first n files in discovery order are taken. */
  maxFiles?: number;
  /** `--dry-run`: what would be sent for each file, and its cost; nothing is sent or written. */
  dryRun?: boolean;
  /** `--price-list <file>` (with --dry-run or --dashboard): the credits of each generation type, YAML or JSON. */
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
  /** How its runs are paced, poll and retry (the polling group's settings). */
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
  if (flags.priceList !== undefined && !flags.dryRun && flags.dashboard === undefined) {
    throw new UsageError(
      '--price-list prices a dry run or the credits of a dashboard: add --dry-run or --dashboard',
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

/**
 * The flags of a run or watch as the journal and the log file record them: without a credential (no
 * key, no token, no URL's password: recordedOptions).
 */
export function recordedFlags(command: string, flags: BatchFlags): Record<string, unknown> {
  return recordedOptions({ command, ...flags });
}

/**
 * Adds the flags every batch command has after its own: --emulator, --dry-run and --price-list, then
 * the groups (batch selection, polling and pacing, journal and store, output and progress, metrics,
 * connection).
 *
 * @param selection - the batch selection flags the command takes (watch: no --max-files)
 */
export function addSharedBatchOptions(cmd: Command, selection = SELECTION): Command {
  cmd
    .option('--emulator', 'run against the embedded emulator instead of the service (said loudly)')
    .option(
      '--dry-run',
      'say what would be sent for each file (request, upload mode, or why it would fail) and the generations and their estimated cost; nothing is uploaded, submitted or written',
    )
    .option(
      '--price-list <file>',
      "with --dry-run or --dashboard: the credits of one generation of each type, a YAML or JSON map such as { image: 1, video: 10 } (default: the emulator's configured costs)",
    );
  return addFlagGroups(cmd, [
    selection,
    POLLING,
    JOURNAL,
    outputGroup({
      json: 'one JSON object per event on stdout (errors as one JSON line on stderr)',
      quiet: 'no progress and no notes (the closing summary is still printed, and so are --json events)',
      verbose:
        'when stdout is not a terminal, a line for every stage each file reaches (default: one line per file outcome)',
    }),
    METRICS,
    DASHBOARD,
    CONNECTION,
  ]);
}
