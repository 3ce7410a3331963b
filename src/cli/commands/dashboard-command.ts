/**
 * `genpipe dashboard <out-dir>`: the command's definition. Light on purpose: the journal and the
 * server (dashboard.ts) load only when it runs.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { defaultJournalPath } from '../../pipeline/store/sqlite/journal-file.ts';
import { addExamples } from '../command-examples.ts';
import { DASHBOARD_DEFAULT_HOST, type DashboardAddress, dashboardArg } from '../dashboard-arg.ts';
import { STORE_HELP, storeUrlOf } from '../store-url.ts';
import { UsageError } from '../usage-error.ts';

/** Registers `genpipe dashboard`. */
export function registerDashboard(program: Command): void {
  const cmd = program
    .command('dashboard')
    .description(
      "Serve the live dashboard of an out dir from its journal, running nothing: every file's state, failures and why, updated as the journal changes, until stopped (SIGINT / SIGTERM)",
    )
    .argument('<out-dir>', 'the out dir of a run or watch (running now or earlier)')
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
    ],
  });
  cmd.action(
    async (
      outArg: string,
      opts: { listen?: DashboardAddress; journal?: string; store?: string; priceList?: string },
    ) => {
      const outDir = resolve(outArg);
      const address = opts.listen ?? { host: DASHBOARD_DEFAULT_HOST, port: 0 };
      const storeUrl = storeUrlOf(opts);
      if (storeUrl !== null) {
        const { serveOutDirDashboard } = await import('./dashboard.ts');
        process.exitCode = await serveOutDirDashboard(outDir, { storeUrl }, address, opts.priceList);
        return;
      }
      const path = opts.journal ? resolve(opts.journal) : defaultJournalPath(outDir);
      if (!existsSync(path)) {
        throw new UsageError(
          opts.journal
            ? `the journal file ${path} does not exist`
            : `no journal at ${path}: nothing ran with ${outArg} as its --out (or the runs used --journal <path>: pass it here too)`,
        );
      }
      const { serveOutDirDashboard } = await import('./dashboard.ts');
      process.exitCode = await serveOutDirDashboard(outDir, { journal: path }, address, opts.priceList);
    },
  );
}
