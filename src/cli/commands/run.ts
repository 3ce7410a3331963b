/**
 * `genpipe run <input-dir> --out <out-dir>`: a folder in, finished media out. Loads the recipe, picks
 * the service (flags, then GENPIPE_* variables; or, with --emulator, the embedded emulator — said
 * loudly, never chosen silently), runs the batch with a progress display, and ends with the exit code
 * of the batch: 0 nothing failed, 1 some file failed, 2 usage or recipe error, 3 stopped early
 * (authentication, suspended client, insufficient balance, service unreachable, journal unwritable),
 * 130 / 143 interrupted by SIGINT / SIGTERM. The journal is always on (see executeRun).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type BatchResult, createProgress, IntakeGate, newItem } from '../../pipeline/index.ts';
import { type BatchCommand, type BatchRequest, executeBatch } from '../batch-command.ts';
import type { BatchFlags } from '../batch-options.ts';
import { SIGNAL_CHOICES } from '../batch-setup.ts';
import type { WorkerFlags } from '../distributed.ts';
import { type DistributeFlags, distributedRunCommand, executeDetach } from '../distributed-run.ts';
import { EXIT } from '../exit-codes.ts';
import { requireDir } from '../local-path.ts';
import { printError } from '../print-error.ts';
import { signalStopReason } from '../signal-words.ts';

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

/**
 * `run`'s part of the batch body: the input folder's files, once, and an exit code for the batch.
 * The dashboard's pause holds the files found before they start; its retry takes a failed file in
 * again while the run goes on (the journal deciding, as --retry-failed would for that file).
 */
// long-function: one command's hooks, read best together
function runCommand(): BatchCommand {
  const gate = new IntakeGate();
  const retryAsFlag = new Set<string>();
  let inputDir = '';
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
    runOptions: (setup, journaling) => {
      inputDir = setup.inputDir;
      return { ...journaling, intakeGate: gate };
    },
    async retake(input, batch) {
      const file = join(inputDir, ...input.split('/'));
      const found = await stat(file).catch(() => null);
      if (!found?.isFile()) throw new Error(`${input} is no longer in the input dir: nothing to retry`);
      retryAsFlag.add(input);
      if (!batch.again(newItem(input, file, found.size, found.mtimeMs))) {
        retryAsFlag.delete(input);
        throw new Error(
          'the run takes nothing in any more (it is stopping, or its last file ended): run it again with --retry-failed',
        );
      }
      return `${input} taken again: the journal decides whether it is sent`;
    },
    retryFailedOnce: (input) => retryAsFlag.delete(input),
    async pauseIntake() {
      if (gate.paused) return 'the intake is paused already';
      gate.pause();
      return 'intake paused: the files found wait, none is started until resumed (those started go on)';
    },
    async resumeIntake() {
      if (!gate.paused) return 'the intake is not paused';
      gate.resume();
      return 'intake resumed';
    },
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

/**
 * Runs the folder as `genpipe run` does once its flags are checked (run-command.ts): alone when `url`
 * is null, else distributed through the store at `url` (or, with --detach, only enqueued). Returns
 * the exit code (errors are printed, never thrown).
 */
export async function runFolder(
  inputDir: string,
  url: string | null,
  flags: RunFlags & DistributeFlags & WorkerFlags,
): Promise<number> {
  if (url === null) return executeRun({ inputDir, flags });
  if (!flags.detach) {
    return executeBatch(distributedRunCommand(runCommand(), url, flags), { inputDir, flags });
  }
  try {
    const say = flags.quiet ? () => undefined : (line: string) => process.stderr.write(`genpipe: ${line}\n`);
    return await executeDetach(inputDir, url, flags, say, (dir) => requireDir(dir, 'input dir'));
  } catch (err) {
    return printError(err, { json: flags.json, secrets: [flags.apiKey, flags.store] });
  }
}
