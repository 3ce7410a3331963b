/**
 * `genpipe run <input-dir> --out <out-dir>`: a folder in, finished media out. Loads the recipe, picks
 * the service (flags, then GENPIPE_* variables; or, with --emulator, the embedded emulator — said
 * loudly, never chosen silently), runs the batch with a progress display, and ends with the exit code
 * of the batch: 0 nothing failed, 1 some file failed, 2 usage or recipe error, 3 stopped early
 * (authentication, suspended client, insufficient balance, service unreachable, journal unwritable),
 * 130 / 143 interrupted by SIGINT / SIGTERM. The journal is always on (see executeRun).
 */
import { type Command, Option } from 'commander';
import { type BatchResult, createProgress } from '../../pipeline/index.ts';
import { type BatchCommand, type BatchRequest, executeBatch } from '../batch-command.ts';
import { addSharedBatchOptions, type BatchFlags, positiveSeconds } from '../batch-options.ts';
import { SIGNAL_CHOICES } from '../batch-setup.ts';
import type { WorkerFlags } from '../distributed.ts';
import { type DistributeFlags, distributedRunCommand, executeDetach } from '../distributed-run.ts';
import { EXIT } from '../exit-codes.ts';
import { requireDir } from '../local-path.ts';
import { intArg } from '../make-client.ts';
import { requiredByCommand } from '../option-help.ts';
import { printError } from '../print-error.ts';
import { ENV } from '../service-config.ts';
import { signalStopReason } from '../signal-words.ts';
import { storeUrlOf } from '../store-option.ts';
import { UsageError } from '../usage-error.ts';

/** Flags of `genpipe run`. */
export type RunFlags = BatchFlags;

/** What executeRun needs beyond the flags. */
export type ExecuteRunOptions = BatchRequest;

/** The exit code of a finished batch. */
export function exitCodeOfBatch(result: BatchResult): number {
  if (result.stop?.cause === 'interrupted' || result.stop?.cause === 'aborted') return EXIT.interrupted;
  if (result.stop) return EXIT.stoppedEarly;
  // A file left unprocessed without a stop: another process on the store took it up (see the fence).
  const t = result.report.totals;
  return t.failed > 0 || t.unprocessed > 0 ? EXIT.failed : EXIT.ok;
}

/** `run`'s part of the batch body: the input folder's files, once, and an exit code for the batch. */
function runCommand(): BatchCommand {
  return {
    name: 'run',
    print: (line) => process.stderr.write(`${line}\n`),
    endDisplay: () => undefined,
    interruption: (signal, started) => ({
      reason: signalStopReason(signal),
      note: started
        ? `${signalStopReason(signal)}: no new work is started; work already at the service gets ` +
          `${SIGNAL_CHOICES.graceMs / 1000} s to finish, then the journal keeps the rest for the next run ` +
          '(signal again to stop at once)'
        : null,
    }),
    checkInputDir: (inputDir) => requireDir(inputDir, 'input dir'),
    createProgress: (json, redact, verbose) =>
      createProgress({ json, isTTY: !json && process.stdout.isTTY === true, redact, verbose }),
    runOptions: (_setup, journaling) => journaling,
    finishState: (result) => (result.stop ? 'stopped' : 'finished'),
    closingLines: (result) => {
      const lines: string[] = [];
      if (result.stop) lines.push(`the batch stopped early: ${result.stop.reason}`);
      if (result.stop?.cause === 'interrupted' || result.stop?.cause === 'aborted') {
        lines.push('run the same command again to continue where this run stopped');
      }
      return lines;
    },
    exitCode: (result) => exitCodeOfBatch(result),
  };
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
export function executeRun(options: ExecuteRunOptions): Promise<number> {
  return executeBatch(runCommand(), options);
}

/** Registers `genpipe run`. */
export function registerRun(program: Command): void {
  const cmd = program
    .command('run')
    .description(
      'Process every file of a folder with the generation service: a folder in, finished media out',
    )
    .argument('<input-dir>', 'the folder to process (never modified)')
    .addOption(
      requiredByCommand(
        new Option(
          '-o, --out <out-dir>',
          'where outputs, result.json files and report.json/report.html go (outside the input dir)',
        ),
      ),
    )
    .option('--recipe <file>', 'the recipe (default: genpipe.yaml in the input dir)')
    .option(
      '--max-files <n>',
      'take the first n files in discovery order (by name, folder by folder); the rest are listed as ignored',
      intArg(1),
    );
  cmd
    .option(
      '--no-distribute',
      'with --store: run the folder here alone, the store only as its journal (default with a store: enqueue the files for `genpipe worker`s, work on a share of them here, wait for all, write the reports)',
    )
    .option('--no-work', 'with --store: enqueue the files and wait for the workers, working on none here')
    .option('--detach', 'with --store: enqueue the files and return at once (the workers do the rest)')
    // What a store already does by default (accepted for scripts written when it had to be said).
    .addOption(new Option('--distribute').hideHelp())
    // The own worker's job locks (hidden, as on `genpipe worker`: tests shorten them).
    .addOption(new Option('--lock-duration <seconds>').argParser(positiveSeconds(3600)).hideHelp())
    .addOption(new Option('--stall-interval <seconds>').argParser(positiveSeconds(3600)).hideHelp());
  addSharedBatchOptions(cmd);
  cmd.action(async (inputDir: string, flags: RunFlags & DistributeFlags & WorkerFlags) => {
    let url: string | null;
    try {
      url = distributedStore(flags);
    } catch (err) {
      process.exitCode = printError(err, { json: flags.json, secrets: [flags.apiKey, flags.store] });
      return;
    }
    if (url === null) {
      process.exitCode = await executeRun({ inputDir, flags });
      return;
    }
    if (!flags.detach) {
      process.exitCode = await executeBatch(distributedRunCommand(runCommand(), url, flags), {
        inputDir,
        flags,
      });
      return;
    }
    try {
      const say = flags.quiet
        ? () => undefined
        : (line: string) => process.stderr.write(`genpipe: ${line}\n`);
      process.exitCode = await executeDetach(inputDir, url, flags, say, (dir) =>
        requireDir(dir, 'input dir'),
      );
    } catch (err) {
      process.exitCode = printError(err, { json: flags.json, secrets: [flags.apiKey, flags.store] });
    }
  });
}

/**
 * The store a run distributes its folder through, or null when it runs the folder alone: with a store
 * (--store or GENPIPE_STORE) a run is distributed unless --no-distribute, --emulator (the embedded
 * emulator is the run's own: no worker reaches it) or --dry-run.
 *
 * @throws UsageError for --no-work / --detach without a store, or with what runs alone
 */
function distributedStore(flags: RunFlags & DistributeFlags): string | null {
  const url = storeUrlOf(flags);
  const enqueueOnly = flags.work === false || flags.detach === true;
  if (url === null) {
    if (enqueueOnly) {
      throw new UsageError(
        `--no-work and --detach enqueue the files in a store for workers: give --store <url> or ${ENV.store}`,
      );
    }
    return null;
  }
  if (flags.detach && (flags.logFile !== undefined || flags.metricsPort !== undefined)) {
    throw new UsageError(
      `--detach returns once the files are enqueued: ${flags.logFile !== undefined ? '--log-file' : '--metrics-port'} is for a run that follows its batch (leave out --detach, or give --no-work)`,
    );
  }
  if (flags.detach && flags.work === false) {
    throw new UsageError(
      '--detach works on none of the files here already: give --detach or --no-work, not both',
    );
  }
  const alone = flags.distribute === false ? '--no-distribute' : flags.emulator ? '--emulator' : null;
  if (alone && enqueueOnly) {
    throw new UsageError(
      `${flags.detach ? '--detach' : '--no-work'} leaves the files to workers, but ${alone} runs them here alone${alone === '--emulator' ? " (the embedded emulator is this run's own: no worker can reach it)" : ''}: give one or the other`,
    );
  }
  if (alone || flags.dryRun) return null;
  return url;
}
