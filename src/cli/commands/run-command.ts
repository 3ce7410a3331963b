/**
 * `genpipe run <input-dir> --out <out-dir>`: the command's definition and the checks of its flags.
 * Light on purpose: the batch (run.ts) loads only when the command runs, not for its --help.
 */
import { type Command, Option } from 'commander';
import { addSharedBatchOptions, positiveSeconds } from '../batch-options.ts';
import { addExamples } from '../command-examples.ts';
import type { WorkerFlags } from '../distributed.ts';
import type { DistributeFlags } from '../distribution.ts';
import { checkFilesAtOnce } from '../flag-groups/index.ts';
import { requiredByCommand } from '../option-help.ts';
import { printError } from '../print-error.ts';
import { ENV } from '../service-config.ts';
import { storeUrlOf } from '../store-url.ts';
import { UsageError } from '../usage-error.ts';
import type { RunFlags } from './run.ts';

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
    .option('--recipe <file>', 'the recipe (default: genpipe.yaml in the input dir)');
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
  addExamples(cmd, {
    examples: [
      {
        comment: 'the bundled samples through the embedded emulator; then open out/samples/report.html',
        line: 'genpipe run samples --out out/samples --emulator',
      },
      {
        comment: 'what would be sent for each file, and its cost; nothing is sent or written',
        line: 'genpipe run samples --out out/samples --emulator --dry-run',
      },
      {
        comment: 'only the photos, 4 jobs at a time',
        line: "genpipe run samples --out out/photos --emulator --include 'photos/**' --concurrency 4",
      },
      {
        comment: 'again after a failure: retry the failed files, with a record of the run in a log file',
        line: 'genpipe run samples --out out/samples --emulator --retry-failed --log-file out/samples.log',
      },
    ],
  });
  cmd.action(async (inputDir: string, flags: RunFlags & DistributeFlags & WorkerFlags) => {
    let url: string | null;
    try {
      url = distributedStore(flags);
      checkFilesAtOnce(flags, url !== null && flags.work !== false && flags.detach !== true, 'run');
    } catch (err) {
      process.exitCode = printError(err, { json: flags.json, secrets: [flags.apiKey, flags.store] });
      return;
    }
    const { runFolder } = await import('./run.ts');
    process.exitCode = await runFolder(inputDir, url, flags);
  });
}

/** Where distributedStore's refusals point. */
const RUN_HELP = { helpOf: 'genpipe run' };

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
        `${flags.detach ? '--detach' : '--no-work'} enqueues the files in a store for workers: give --store <url> or ${ENV.store}`,
        RUN_HELP,
      );
    }
    return null;
  }
  if (flags.detach && (flags.logFile !== undefined || flags.metricsPort !== undefined)) {
    throw new UsageError(
      `--detach returns once the files are enqueued: ${flags.logFile !== undefined ? '--log-file' : '--metrics-port'} is for a run that follows its batch (leave out --detach, or give --no-work)`,
      RUN_HELP,
    );
  }
  if (flags.detach && flags.work === false) {
    throw new UsageError(
      '--detach works on none of the files here already: give --detach or --no-work, not both',
      RUN_HELP,
    );
  }
  const alone = flags.distribute === false ? '--no-distribute' : flags.emulator ? '--emulator' : null;
  if (alone && enqueueOnly) {
    throw new UsageError(
      `${flags.detach ? '--detach' : '--no-work'} leaves the files to workers, but ${alone} runs them here alone${alone === '--emulator' ? " (the embedded emulator is this run's own: no worker can reach it)" : ''}: give one or the other`,
      RUN_HELP,
    );
  }
  if (alone || flags.dryRun) return null;
  return url;
}
