/**
 * `genpipe worker --store <url>`: one worker of distributed mode, on any number of machines. Takes item
 * jobs from the store's queue (enqueued by `genpipe run --store …` or `genpipe watch --store …`), runs the same stages
 * as `genpipe run` for each, records every step in the store, and goes on until SIGINT / SIGTERM.
 */
import { type Command, Option } from 'commander';
import {
  checkMetricsHost,
  METRICS_DEFAULT_HOST,
  portArg,
  positiveSeconds,
  WORKER_DEFAULT_CONCURRENCY,
} from '../batch-options.ts';
import { AGAINST_SERVE, addExamples } from '../command-examples.ts';
import { addServiceOptions, intArg, MAX_POLL_INTERVAL_S } from '../command-flags.ts';
import { DASHBOARD_DEFAULT_HOST, dashboardArg } from '../dashboard-arg.ts';
import type { WorkerOnlyFlags as DistributedFlags } from '../distributed.ts';
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
    .option(
      '--concurrency <n>',
      `files worked on at once (default ${WORKER_DEFAULT_CONCURRENCY}; the service's own ceiling also applies)`,
      intArg(1),
    )
    .option(
      '--max-jobs <n>',
      'jobs in flight at the service at most, from submit until the job ends (default: --concurrency)',
      intArg(1),
    )
    .option('-v, --verbose', 'a line for every stage each file reaches')
    .option(
      '--poll-interval <seconds>',
      'longest time between two status reads of a job (default 2; at least 1, as the service accepts; at most 3600)',
      positiveSeconds(MAX_POLL_INTERVAL_S),
    )
    .option(
      '--retries <n>',
      'resubmissions of a generation that failed with a retryable failure_code',
      intArg(0),
    )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics (GET /metrics) and a health check (GET /healthz) on this port while the worker runs; 0 picks a free port; the address is printed on stderr',
      portArg,
    )
    .option(
      '--metrics-host <host>',
      `the address the metrics server listens on (default ${METRICS_DEFAULT_HOST}; 0.0.0.0 exposes it to the network)`,
    )
    .option(
      '--dashboard <[host:]port>',
      `serve a live page of the worker's files in a browser on this port while it runs (host default ${DASHBOARD_DEFAULT_HOST}; 0 picks a free port); the address and the token its stop needs are printed on stderr`,
      dashboardArg,
    )
    .addOption(new Option('--heartbeat <seconds>').argParser(positiveSeconds(3600)).hideHelp())
    .addOption(new Option('--lock-duration <seconds>').argParser(positiveSeconds(3600)).hideHelp())
    .addOption(new Option('--stall-interval <seconds>').argParser(positiveSeconds(3600)).hideHelp());
  addServiceOptions(cmd);
  addExamples(cmd, {
    setup: {
      comment: `${AGAINST_SERVE.comment}, and the PostgreSQL store runs enqueue files in`,
      line: `${AGAINST_SERVE.line} GENPIPE_STORE=postgres://<user>:<password>@<host>:5432/<db>`,
    },
    examples: [
      {
        comment: 'work on the files `genpipe run --store` enqueues, 8 at a time, until Ctrl-C',
        line: 'genpipe worker --concurrency 8',
      },
      {
        comment: 'and serve Prometheus metrics and a health check on port 9464',
        line: 'genpipe worker --metrics-port 9464',
      },
      {
        comment: 'a line for every stage, at most 4 jobs at the service',
        line: 'genpipe worker --verbose --max-jobs 4',
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
      process.exitCode = await executeWorker(url, flags, say);
    } catch (err) {
      process.exitCode = printError(err, { json: flags.json, secrets: [flags.apiKey, flags.store] });
    }
  });
}
