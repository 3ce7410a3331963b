/**
 * `genpipe worker --store <url>`: one worker of distributed mode, on any number of machines. Takes item
 * jobs from the store's queue (enqueued by `genpipe run --store …` or `genpipe watch --store …`), runs the same stages
 * as `genpipe run` for each, records every step in the store, and goes on until SIGINT / SIGTERM.
 */
import { type Command, Option } from 'commander';
import { AGAINST_SERVE, addExamples } from '../command-examples.ts';
import type { WorkerOnlyFlags as DistributedFlags } from '../distributed.ts';
import {
  addFlagGroups,
  CONNECTION,
  checkMetricsHost,
  DASHBOARD,
  intArg,
  METRICS,
  outputGroup,
  POLLING,
  positiveSeconds,
} from '../flag-groups/index.ts';
import { printError } from '../print-error.ts';
import { ENV } from '../service-config.ts';
import { storeUrlOf } from '../store-url.ts';
import { UsageError } from '../usage-error.ts';

/** Registers `genpipe worker`. */
export function registerWorker(program: Command): void {
  const cmd = program
    .command('worker')
    .description(
      'Work on the files enqueued in a PostgreSQL store (distributed mode): run as many as you like, on any machines that see the inputs and out dirs at the same paths',
    )
    .option(
      '--store <url>',
      `the PostgreSQL store whose queue to work on, postgres://user:password@host:port/db (default: $${ENV.store}); the password is never shown`,
    )
    // What --concurrency (jobs at the service) was called on workers before it meant the same everywhere.
    .addOption(new Option('--max-jobs <n>').argParser(intArg(1)).hideHelp())
    .addOption(new Option('--heartbeat <seconds>').argParser(positiveSeconds(3600)).hideHelp())
    .addOption(new Option('--lock-duration <seconds>').argParser(positiveSeconds(3600)).hideHelp())
    .addOption(new Option('--stall-interval <seconds>').argParser(positiveSeconds(3600)).hideHelp());
  addFlagGroups(cmd, [
    POLLING,
    outputGroup().only('--json', '--quiet', '--verbose'),
    METRICS,
    DASHBOARD,
    CONNECTION,
  ]);
  addExamples(cmd, {
    setup: {
      comment: `${AGAINST_SERVE.comment}, and the PostgreSQL store runs enqueue files in`,
      line: `${AGAINST_SERVE.line} GENPIPE_STORE=postgres://<user>:<password>@<host>:5432/<db>`,
    },
    examples: [
      {
        comment: 'work on the files `genpipe run --store` enqueues, 8 at a time, until Ctrl-C',
        line: 'genpipe worker --files-at-once 8',
      },
      {
        comment: 'and serve Prometheus metrics and a health check on port 9464',
        line: 'genpipe worker --metrics-port 9464',
      },
      {
        comment: 'a line for every stage, at most 4 jobs at the service',
        line: 'genpipe worker --verbose --concurrency 4',
      },
    ],
  });
  cmd.action(async (flags: DistributedFlags & { store?: string; json?: boolean; quiet?: boolean }) => {
    try {
      const url = storeUrlOf(flags);
      const helpOf = { helpOf: 'genpipe worker' };
      if (url === null) {
        throw new UsageError(`genpipe worker needs a store: --store <url> or ${ENV.store}`, helpOf);
      }
      checkMetricsHost(flags, helpOf);
      const say = flags.quiet ? () => undefined : (line: string) => process.stderr.write(`${line}\n`);
      // Loaded only now: the queue, the store and the pipeline are no part of the command's --help.
      const { executeWorker } = await import('../distributed.ts');
      process.exitCode = await executeWorker(url, withoutMaxJobs(flags, say), say);
    } catch (err) {
      process.exitCode = printError(err, { json: flags.json, secrets: [flags.apiKey, flags.store] });
    }
  });
}

/**
 * --max-jobs, the name --concurrency (jobs at the service at most) had on workers, taken as
 * --concurrency with a note; --files-at-once is now the files a worker holds.
 */
function withoutMaxJobs(
  flags: DistributedFlags & { maxJobs?: number },
  say: (line: string) => void,
): DistributedFlags {
  const { maxJobs, ...rest } = flags;
  if (maxJobs === undefined) return rest;
  say(
    'genpipe: --max-jobs is now --concurrency (jobs at the service at most, as on run and watch); --files-at-once sets the files a worker holds',
  );
  return { ...rest, concurrency: rest.concurrency ?? maxJobs };
}
