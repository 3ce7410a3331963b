/**
 * `genpipe watch <input-dir> --out <out-dir>`: the command's definition and the checks of its flags.
 * Light on purpose: the watcher and the batch (watch.ts) load only when the command runs, not for its
 * --help.
 */
import { type Command, Option } from 'commander';
import { ON_DONE_MODES, WATCH_DEFAULTS } from '../../pipeline/watch/defaults.ts';
import { addSharedBatchOptions, positiveSeconds } from '../batch-options.ts';
import { addExamples } from '../command-examples.ts';
import { intArg } from '../command-flags.ts';
import type { WorkerFlags } from '../distributed.ts';
import { checkFilesAtOnce, SELECTION } from '../flag-groups/index.ts';
import { requiredByCommand } from '../option-help.ts';
import { printError } from '../print-error.ts';
import { ENV } from '../service-config.ts';
import { storeUrlOf } from '../store-url.ts';
import { UsageError } from '../usage-error.ts';
import type { WatchFlags } from './watch.ts';

/** Registers `genpipe watch`. */
export function registerWatch(program: Command): void {
  const cmd = program
    .command('watch')
    .description('Watch a folder and process each file once it is complete, until stopped (SIGINT / SIGTERM)')
    .argument('<input-dir>', 'the folder to watch (the inbox; only --on-done move changes it)')
    .addOption(
      requiredByCommand(
        new Option('-o, --out <out-dir>', 'where outputs and reports go (outside the watched folder)'),
      ),
    )
    .option('--recipe <file>', 'the recipe (default: genpipe.yaml in the input dir)')
    .option(
      '--poll',
      `poll for file changes every ${WATCH_DEFAULTS.pollIntervalMs / 1000} s instead of relying on file events (network shares)`,
    )
    .addOption(
      new Option(
        '--on-done <mode>',
        'keep: leave inputs where they are (the journal remembers them); move: to processed/ or failed/ beside the inbox',
      )
        .choices([...ON_DONE_MODES])
        .default('keep'),
    )
    .option(
      '--delete-empty-src-dirs',
      'with --on-done move: remove the folders of the inbox a move left empty (never the inbox itself, nor a folder holding anything)',
    )
    .option(
      '--quiet-ms <ms>',
      `a file is taken once its size and mtime stayed unchanged this long, in ms (default ${WATCH_DEFAULTS.quietMs})`,
      intArg(1),
    )
    .option(
      '--rescan-ms <ms>',
      `full rescans of the folder, the source of truth, this often, in ms (default ${WATCH_DEFAULTS.rescanMs})`,
      intArg(100),
    )
    .addOption(
      new Option(
        '--recheck-finished',
        'check files finished in an earlier session again (bench baseline)',
      ).hideHelp(),
    )
    .option(
      '--no-distribute',
      'with --store: process the files here alone, the store only as its journal (default with a store: hand each file to the `genpipe worker`s, work on a share of them here)',
    )
    .option('--no-work', 'with --store: hand the files to the workers, working on none here')
    // The own worker's job locks (hidden, as on `genpipe worker`: tests shorten them).
    .addOption(new Option('--lock-duration <seconds>').argParser(positiveSeconds(3600)).hideHelp())
    .addOption(new Option('--stall-interval <seconds>').argParser(positiveSeconds(3600)).hideHelp());
  addSharedBatchOptions(cmd, SELECTION.only('--include', '--exclude'));
  addExamples(cmd, {
    examples: [
      {
        comment:
          'process each file of the folder through the embedded emulator, and each new one, until Ctrl-C',
        line: 'genpipe watch samples --out out/watch --emulator',
      },
      {
        comment: 'on a network share: poll for changes, and take a file once unchanged for 2 s',
        line: 'genpipe watch samples --out out/watch --emulator --poll --quiet-ms 2000',
      },
      {
        comment: 'what the watch would send for each file, nothing sent or written, until Ctrl-C',
        line: 'genpipe watch samples --out out/watch --emulator --dry-run',
      },
    ],
  });
  cmd.action(async (inputDir: string, flags: WatchFlags & WorkerFlags) => {
    let url: string | null;
    try {
      if (flags.deleteEmptySrcDirs && flags.onDone !== 'move') {
        throw new UsageError(
          '--delete-empty-src-dirs removes the folders --on-done move empties: give --on-done move too',
        );
      }
      url = distributedWatchStore(flags);
      checkFilesAtOnce(flags, url !== null && flags.work !== false, 'watch');
    } catch (err) {
      process.exitCode = printError(err, { json: flags.json, secrets: [flags.apiKey, flags.store] });
      return;
    }
    const { executeWatch } = await import('./watch.ts');
    process.exitCode = await executeWatch(inputDir, flags, url);
  });
}

/**
 * The store a watch hands its files to the workers through, or null when it processes them here: with
 * a store (--store or GENPIPE_STORE) a watch is distributed unless --no-distribute, --emulator (the
 * embedded emulator is the watch's own: no worker reaches it) or --dry-run.
 *
 * @throws UsageError for --no-work without a store, or with what runs alone
 */
function distributedWatchStore(flags: WatchFlags): string | null {
  const url = storeUrlOf(flags);
  if (url === null) {
    if (flags.work === false) {
      throw new UsageError(
        `--no-work hands the files to workers through a store: give --store <url> or ${ENV.store}`,
      );
    }
    return null;
  }
  const alone = flags.distribute === false ? '--no-distribute' : flags.emulator ? '--emulator' : null;
  if (alone && flags.work === false) {
    throw new UsageError(
      `--no-work leaves the files to workers, but ${alone} processes them here alone: give one or the other`,
    );
  }
  return alone || flags.dryRun ? null : url;
}
