/**
 * `genpipe run <input-dir> --out <out-dir>`: a folder in, finished media out. Loads the recipe, picks
 * the service (flags, then GENPIPE_* variables; or, with --emulator, the embedded emulator — said
 * loudly, never chosen silently), runs the batch with a progress display, and ends with the exit code
 * of the batch: 0 nothing failed, 1 some file failed, 2 usage or recipe error, 3 stopped early
 * (authentication, suspended client, insufficient balance, service unreachable, journal unwritable),
 * 130 / 143 interrupted by SIGINT / SIGTERM. The journal is always on (see executeRun).
 */
import { stat } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import {
  type BatchResult,
  createProgress,
  createRedactor,
  JOURNAL_CHOICES,
  type Journal,
  journalCountsText,
  journalDidAnything,
  POLL_DEFAULTS,
  REPORT_HTML_FILE,
  RUN_DEFAULTS,
  startBatch,
} from '../../pipeline/index.ts';
import {
  type BatchService,
  checkBatchInputs,
  connectService,
  type JournalFlags,
  journalRunOptions,
  openRunJournal,
  SIGNAL_CHOICES,
  watchSignals,
} from '../batch-setup.ts';
import { EXIT, SIGNAL_EXIT } from '../exit-codes.ts';
import { addServiceOptions, intArg } from '../make-client.ts';
import { printError } from '../print-error.ts';
import type { ServiceFlags } from '../service-config.ts';
import { UsageError } from '../usage-error.ts';

/** Flags of `genpipe run`. */
export interface RunFlags extends ServiceFlags, JournalFlags {
  out?: string;
  recipe?: string;
  concurrency?: number;
  json?: boolean;
  quiet?: boolean;
  emulator?: boolean;
  /** Seconds between two reads of one job. */
  pollInterval?: number;
  /** Resubmissions of a retryably failed generation. */
  retries?: number;
}

/** What executeRun needs beyond the flags. */
export interface ExecuteRunOptions {
  inputDir: string;
  flags: RunFlags;
  /** Printed last, after the report's path (demo's hint). */
  epilogue?: (result: BatchResult, outDir: string) => string[];
}

function positiveSeconds(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) {
    throw new InvalidArgumentError('expected a number of seconds greater than 0');
  }
  return n;
}

/** The exit code of a finished batch. */
export function exitCodeOfBatch(result: BatchResult): number {
  if (result.stop?.cause === 'interrupted' || result.stop?.cause === 'aborted') return EXIT.interrupted;
  if (result.stop) return EXIT.stoppedEarly;
  return result.report.totals.failed > 0 ? EXIT.failed : EXIT.ok;
}

async function requireDir(path: string, what: string): Promise<void> {
  const st = await stat(path).catch(() => null);
  if (!st) throw new UsageError(`${what} '${path}' does not exist`);
  if (!st.isDirectory()) throw new UsageError(`${what} '${path}' is not a folder`);
}

/** A display path: relative to the working directory when inside it. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
}

/**
 * Runs a batch as `genpipe run` does and returns its exit code (errors are printed, never thrown).
 *
 * The journal (`<out>/.genpipe/journal.db`, or `--journal`) is always on: a re-run continues where an
 * earlier run stopped and redoes nothing finished. SIGINT / SIGTERM once: no new work; what is already
 * at the service gets SIGNAL_CHOICES.graceMs to finish, then the rest is left to the journal and the
 * run exits; twice: everything is cancelled at once.
 *
 * @example process.exitCode = await executeRun({ inputDir: 'photos', flags: { out: 'out', emulator: true } });
 */
export async function executeRun(options: ExecuteRunOptions): Promise<number> {
  const { flags } = options;
  const json = flags.json === true;
  const quiet = flags.quiet === true;
  let secrets: string[] = [flags.apiKey ?? ''].filter(Boolean);
  const note = (text: string) => {
    if (!quiet) process.stderr.write(`genpipe: ${createRedactor(secrets)(text)}\n`);
  };
  let service: BatchService | null = null;
  let journal: Journal | null = null;
  let stopReason: string | null = null;
  const controller = new AbortController();
  let stopBatch: ((reason: string) => void) | null = null;
  const signals = watchSignals({
    first: (signal) => {
      stopReason = `interrupted (${signal})`;
      if (!stopBatch) return controller.abort(new DOMException('interrupted', 'AbortError'));
      note(
        `interrupted (${signal}): no new work is started; work already at the service gets ` +
          `${SIGNAL_CHOICES.graceMs / 1000} s to finish, then the journal keeps the rest for the next run ` +
          '(signal again to stop at once)',
      );
      stopBatch(stopReason);
    },
    second: () => {
      note('stopping at once; the journal keeps how far each file got');
      controller.abort(new DOMException('interrupted', 'AbortError'));
    },
    beforeHardExit: () => journal?.close(),
  });
  try {
    if (!flags.out) throw new UsageError('--out <out-dir> is required: where the outputs and reports go');
    const inputDir = resolve(options.inputDir);
    const outDir = resolve(flags.out);
    await requireDir(inputDir, 'input dir');
    const recipe = await checkBatchInputs(inputDir, flags);

    service = await connectService(flags, json, note);
    secrets = service.secrets;
    journal = openRunJournal({ outDir, ...(flags.journal ? { path: flags.journal } : {}) });
    const journaling = journalRunOptions(journal, recipe, flags, {
      inputDir,
      service: service.identity,
      options: recordedFlags('run', flags),
      embedded: service.emulator !== null,
    });

    const redact = createRedactor(secrets);
    const progress = createProgress({ json, isTTY: !json && process.stdout.isTTY === true, redact });
    const batch = startBatch({
      inputDir,
      outDir,
      recipe,
      client: service.client,
      concurrency: flags.concurrency ?? RUN_DEFAULTS.concurrency,
      pollIntervalMs: service.pollIntervalMs ?? POLL_DEFAULTS.intervalMs,
      ...(service.filePollIntervalMs !== undefined ? { filePollIntervalMs: service.filePollIntervalMs } : {}),
      ...(flags.retries !== undefined ? { maxResubmits: flags.retries } : {}),
      signal: controller.signal,
      onEvent: quiet && !json ? undefined : progress.sink,
      redact,
      emulator: service.emulator !== null,
      stopGraceMs: SIGNAL_CHOICES.graceMs,
      ...journaling,
    });
    stopBatch = batch.stop;
    if (stopReason !== null) batch.stop(stopReason);
    let result: BatchResult;
    try {
      result = await batch.done;
    } finally {
      progress.close();
    }
    journal.finishBatch(result.stop ? 'stopped' : 'finished');
    const t = result.report.totals;
    const summary = [
      `${t.inputs} files: ${t.succeeded} succeeded, ${t.failed} failed, ${t.skipped} skipped` +
        (t.unprocessed > 0 ? `, ${t.unprocessed} not processed` : ''),
    ];
    const j = result.report.journal;
    if (j && journalDidAnything(j)) summary.push(`journal: ${journalCountsText(j)} (${shown(j.file)})`);
    if (result.stop) summary.push(`the batch stopped early: ${result.stop.reason}`);
    if (result.stop?.cause === 'interrupted' || result.stop?.cause === 'aborted') {
      summary.push('run the same command again to continue where this run stopped');
    }
    summary.push(`report: ${shown(resolve(outDir, REPORT_HTML_FILE))}`);
    if (service.emulator)
      summary.push('(these outputs came from the embedded EMULATOR, not the real service)');
    // The summary is printed even with --quiet: it is the command's answer.
    for (const line of [...summary, ...(options.epilogue?.(result, outDir) ?? [])]) {
      process.stderr.write(`genpipe: ${redact(line)}\n`);
    }
    const code = exitCodeOfBatch(result);
    return code === EXIT.interrupted && signals.received ? SIGNAL_EXIT[signals.received] : code;
  } catch (err) {
    const code = printError(err, { json, secrets });
    return code === EXIT.interrupted && signals.received ? SIGNAL_EXIT[signals.received] : code;
  } finally {
    signals.dispose();
    journal?.close();
    await service?.client.close();
    await service?.emulator?.close();
  }
}

/** The flags of a run or watch as the journal records them (never the key or the token). */
export function recordedFlags(command: string, flags: RunFlags): Record<string, unknown> {
  const { apiKey: _key, legacyToken: _token, ...rest } = flags;
  return { command, ...rest };
}

/** The options `run` and `watch` share for how a batch runs: concurrency, emulator, polling, retries. */
export function addBatchOptions(cmd: Command): Command {
  return cmd
    .option(
      '--concurrency <n>',
      `jobs in flight at most (default ${RUN_DEFAULTS.concurrency}; the service's own ceiling also applies)`,
      intArg(1),
    )
    .option('--emulator', 'run against the embedded emulator instead of the service (said loudly)')
    .option(
      '--poll-interval <seconds>',
      `time between two status reads of a job (default ${POLL_DEFAULTS.intervalMs / 1000}; at least 1 against the service)`,
      positiveSeconds,
    )
    .option(
      '--retries <n>',
      `resubmissions of a generation that failed with a retryable failure_code (default ${RUN_DEFAULTS.maxResubmits})`,
      intArg(0),
    );
}

/** Adds --journal, --force, --retry-failed and --resubmit-unknown (run and watch). */
export function addJournalOptions(cmd: Command): Command {
  return cmd
    .option(
      `${JOURNAL_CHOICES.journalFlag} <path>`,
      `the journal file, on a local disk (default <out-dir>/${JOURNAL_CHOICES.dirName}/${JOURNAL_CHOICES.fileName})`,
    )
    .option(JOURNAL_CHOICES.forceFlag, 'redo every file, even those an earlier run finished')
    .option(
      JOURNAL_CHOICES.retryFailedFlag,
      "retry every file that failed in an earlier run, also those whose failure is the file's own (default: only failures that may pass now)",
    )
    .option(
      JOURNAL_CHOICES.resubmitUnknownFlag,
      'submit again the files whose create may have reached the service before an interruption (default: fail them, never pay twice)',
    );
}

/** Registers `genpipe run`. */
export function registerRun(program: Command): void {
  const cmd = program
    .command('run')
    .description(
      'Process every file of a folder with the generation service: a folder in, finished media out',
    )
    .argument('<input-dir>', 'the folder to process (never modified)')
    .option('-o, --out <out-dir>', 'where outputs, result.json files and report.json/report.html go')
    .option('--recipe <file>', 'the recipe (default: genpipe.yaml in the input dir)');
  addBatchOptions(cmd);
  addJournalOptions(cmd);
  addServiceOptions(cmd);
  cmd.action(async (inputDir: string, flags: RunFlags) => {
    process.exitCode = await executeRun({ inputDir, flags });
  });
}
