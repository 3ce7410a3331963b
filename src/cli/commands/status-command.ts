/**
 * `genpipe status <out-dir>`: the command's definition, and what is checked before a journal is
 * opened. Light on purpose: the journal and the store adapters (status.ts) load only when there is a
 * journal to read, so `status --help` and an out dir nothing ran in answer at once.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { addExamples } from '../command-examples.ts';
import { journalSourceOf } from '../journal-source.ts';
import { STORE_HELP } from '../store-url.ts';

/** Registers `genpipe status`. */
export function registerStatus(program: Command): void {
  const cmd = program
    .command('status')
    .description(
      "What an out dir's journal says: its last batch, inputs by state, failures and why, and what a re-run would do; runs nothing",
    )
    .argument('<out-dir>', 'the out dir of earlier runs')
    .option(
      '--journal <path>',
      'the journal file, when the runs used --journal (default <out-dir>/.genpipe/journal.db)',
    )
    .option(
      '--store <url>',
      STORE_HELP.replace(
        'to keep the journal in instead of the journal file',
        'the runs kept their journal in',
      ),
    )
    .option('--json', 'the summary as one JSON object on stdout');
  addExamples(cmd, {
    examples: [
      {
        comment: 'what the journal of `genpipe run samples --out out/samples --emulator` says',
        line: 'genpipe status out/samples',
      },
      { comment: 'the same as one JSON object, for a script', line: 'genpipe status out/samples --json' },
    ],
  });
  cmd.action(async (outArg: string, opts: { journal?: string; store?: string; json?: boolean }) => {
    const outDir = resolve(outArg);
    const from = journalSourceOf(outArg, opts);
    if ('storeUrl' in from) {
      const { printStoreStatus } = await import('./status.ts');
      await printStoreStatus(outDir, from.storeUrl, opts.json === true);
      return;
    }
    const { printJournalStatus } = await import('./status.ts');
    await printJournalStatus(outDir, from.journal, opts.json === true);
  });
}
