/**
 * `genpipe dashboard <out-dir>`: the command's definition. Light on purpose: the journal and the
 * server (dashboard.ts) load only when it runs.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { addExamples } from '../command-examples.ts';
import { DASHBOARD_DEFAULT_HOST, type DashboardAddress, dashboardArg } from '../dashboard-arg.ts';
import { journalSourceOf } from '../journal-source.ts';
import { STORE_HELP, storeUrlOf } from '../store-url.ts';
import { UsageError } from '../usage-error.ts';

/** Registers `genpipe dashboard`. */
export function registerDashboard(program: Command): void {
  const cmd = program
    .command('dashboard')
    .description(
      "Serve the live dashboard of an out dir from its journal, running nothing: every file's state, failures and why, updated as the journal changes, until stopped (SIGINT / SIGTERM)",
    )
    .argument(
      '[out-dir]',
      'the out dir of a run or watch (running now or earlier); with --store and none: every out dir of the store',
    )
    .option(
      '--listen <[host:]port>',
      `where to serve the page (host default ${DASHBOARD_DEFAULT_HOST}; default port 0: a free one); the address is printed on stderr`,
      dashboardArg,
    )
    .option(
      '--journal <path>',
      'the journal file, when the runs used --journal (default <out-dir>/.genpipe/journal.db)',
    )
    .option(
      '--price-list <file>',
      'the credits of one generation of each type (YAML or JSON, as for --dry-run): the page counts the credits spent and estimated',
    )
    .option(
      '--store <url>',
      `${STORE_HELP.replace('to keep the journal in instead of the journal file', 'the runs kept their journal in')}; the workers on it are shown too`,
    );
  addExamples(cmd, {
    examples: [
      {
        comment: 'the dashboard of out/samples on a free port of this machine, until Ctrl-C',
        line: 'genpipe dashboard out/samples',
      },
      {
        comment: 'every out dir of a store and every worker on it',
        line: 'genpipe dashboard --store postgres://genpipe@db.example/genpipe',
      },
    ],
  });
  cmd.action(
    async (
      outArg: string | undefined,
      opts: { listen?: DashboardAddress; journal?: string; store?: string; priceList?: string },
    ) => {
      const address = opts.listen ?? { host: DASHBOARD_DEFAULT_HOST, port: 0 };
      if (outArg === undefined && storeUrlOf(opts) === null) {
        throw new UsageError([
          'give the out dir to show, or --store <url> to show every out dir of a store and its workers',
          "Run 'genpipe dashboard --help' for usage.",
        ]);
      }
      const from = outArg === undefined ? { storeUrl: storeUrlOf(opts)! } : journalSourceOf(outArg, opts);
      const { serveOutDirDashboard } = await import('./dashboard.ts');
      const outDir = outArg === undefined ? null : resolve(outArg);
      process.exitCode = await serveOutDirDashboard(outDir, from, address, opts.priceList);
    },
  );
}
