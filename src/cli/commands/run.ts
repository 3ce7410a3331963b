/**
 * `genpipe run <input-dir> --out <out-dir>`: a folder in, finished media out. Loads the recipe, picks
 * the service (flags, then GENPIPE_* variables; or, with --emulator, the embedded emulator — said
 * loudly, never chosen silently), runs the batch with a progress display, and ends with the exit code
 * of the batch: 0 nothing failed, 1 some file failed, 2 usage or recipe error, 3 stopped early
 * (authentication, suspended client, insufficient balance, service unreachable), 130 interrupted.
 */
import { stat } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import type { ClientOptions, GenpipeClient } from '../../client/index.ts';
import {
  type BatchResult,
  createProgress,
  createRedactor,
  isRecipeError,
  loadRecipe,
  POLL_DEFAULTS,
  REPORT_HTML_FILE,
  type Recipe,
  RUN_DEFAULTS,
  startBatch,
} from '../../pipeline/index.ts';
import {
  EMBEDDED_CLIENT_SETTINGS,
  type EmbeddedEmulator,
  emulatorBanner,
  startEmbeddedEmulator,
} from '../embedded-emulator.ts';
import { addServiceOptions, intArg, makeClient } from '../make-client.ts';
import { printError } from '../print-error.ts';
import type { ServiceFlags } from '../service-config.ts';
import { UsageError } from '../usage-error.ts';

/** Exit codes of `genpipe run` and `genpipe demo`. */
export const RUN_EXIT = { ok: 0, failed: 1, usage: 2, stoppedEarly: 3, interrupted: 130 } as const;

/** Flags of `genpipe run`. */
export interface RunFlags extends ServiceFlags {
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
  if (result.stop?.cause === 'interrupted' || result.stop?.cause === 'aborted') return RUN_EXIT.interrupted;
  if (result.stop) return RUN_EXIT.stoppedEarly;
  return result.report.totals.failed > 0 ? RUN_EXIT.failed : RUN_EXIT.ok;
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
  let emulator: EmbeddedEmulator | null = null;
  let client: GenpipeClient | null = null;
  const controller = new AbortController();
  let interrupts = 0;
  let stopBatch: ((reason: string) => void) | null = null;
  const onInterrupt = () => {
    interrupts++;
    if (interrupts === 1 && stopBatch) {
      note(
        'interrupted: no new work is started; jobs already submitted are finished (Ctrl-C again to cancel them)',
      );
      stopBatch('interrupted (SIGINT)');
    } else {
      controller.abort(new DOMException('interrupted', 'AbortError'));
    }
  };
  process.on('SIGINT', onInterrupt);
  try {
    if (!flags.out) throw new UsageError('--out <out-dir> is required: where the outputs and reports go');
    const inputDir = resolve(options.inputDir);
    const outDir = resolve(flags.out);
    await requireDir(inputDir, 'input dir');
    if (outDir === inputDir) {
      throw new UsageError('the out dir cannot be the input dir (the input dir is never modified)');
    }
    if (flags.pollInterval !== undefined && flags.pollInterval < 1 && !flags.emulator) {
      throw new UsageError(
        '--poll-interval must be at least 1 second against the service (the interface accepts 1 to 5 s)',
      );
    }
    let recipe: Recipe;
    try {
      recipe = await loadRecipe({ inputDir, ...(flags.recipe ? { recipePath: flags.recipe } : {}) });
    } catch (err) {
      if (isRecipeError(err)) throw new UsageError(err.message);
      throw err;
    }

    const clientOptions: Partial<ClientOptions> = {
      hooks: { log: json ? () => undefined : (m) => note(m) },
    };
    let pollIntervalMs = flags.pollInterval !== undefined ? Math.round(flags.pollInterval * 1000) : undefined;
    let filePollIntervalMs: number | undefined;
    if (flags.emulator) {
      emulator = await startEmbeddedEmulator();
      process.stderr.write(`${emulatorBanner(emulator.url)}\n`);
      const made = makeClient(
        { apiKey: emulator.apiKey, baseUrl: emulator.url },
        {
          ...clientOptions,
          rateWindowMs: EMBEDDED_CLIENT_SETTINGS.rateWindowMs,
          polling: { ...EMBEDDED_CLIENT_SETTINGS.polling },
        },
        {},
      );
      client = made.client;
      secrets = made.secrets;
      pollIntervalMs ??= EMBEDDED_CLIENT_SETTINGS.pollIntervalMs;
      filePollIntervalMs = EMBEDDED_CLIENT_SETTINGS.polling.intervalMs;
    } else {
      let made: ReturnType<typeof makeClient>;
      try {
        made = makeClient(flags, clientOptions);
      } catch (err) {
        if (err instanceof UsageError && /no service configured/.test(err.message)) {
          throw new UsageError(`${err.message}; or pass --emulator to run against the embedded emulator`);
        }
        throw err;
      }
      client = made.client;
      secrets = made.secrets;
    }

    const redact = createRedactor(secrets);
    const progress = createProgress({ json, isTTY: !json && process.stdout.isTTY === true, redact });
    const batch = startBatch({
      inputDir,
      outDir,
      recipe,
      client,
      concurrency: flags.concurrency ?? RUN_DEFAULTS.concurrency,
      pollIntervalMs: pollIntervalMs ?? POLL_DEFAULTS.intervalMs,
      ...(filePollIntervalMs !== undefined ? { filePollIntervalMs } : {}),
      ...(flags.retries !== undefined ? { maxResubmits: flags.retries } : {}),
      signal: controller.signal,
      onEvent: quiet && !json ? undefined : progress.sink,
      redact,
      emulator: emulator !== null,
    });
    stopBatch = batch.stop;
    let result: BatchResult;
    try {
      result = await batch.done;
    } finally {
      progress.close();
    }
    const t = result.report.totals;
    const summary = [
      `${t.inputs} files: ${t.succeeded} succeeded, ${t.failed} failed, ${t.skipped} skipped` +
        (t.unprocessed > 0 ? `, ${t.unprocessed} not processed` : ''),
    ];
    if (result.stop) summary.push(`the batch stopped early: ${result.stop.reason}`);
    summary.push(`report: ${shown(resolve(outDir, REPORT_HTML_FILE))}`);
    if (emulator) summary.push('(these outputs came from the embedded EMULATOR, not the real service)');
    // The summary is printed even with --quiet: it is the command's answer.
    for (const line of [...summary, ...(options.epilogue?.(result, outDir) ?? [])]) {
      process.stderr.write(`genpipe: ${redact(line)}\n`);
    }
    return exitCodeOfBatch(result);
  } catch (err) {
    return printError(err, { json, secrets });
  } finally {
    process.removeListener('SIGINT', onInterrupt);
    await client?.close();
    await emulator?.close();
  }
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
    .option('--recipe <file>', 'the recipe (default: genpipe.yaml in the input dir)')
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
  addServiceOptions(cmd);
  cmd.action(async (inputDir: string, flags: RunFlags) => {
    process.exitCode = await executeRun({ inputDir, flags });
  });
}
