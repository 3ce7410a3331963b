/**
 * Where the commands that read an out dir's journal (status, dashboard) read it from: a PostgreSQL
 * store (--store or its variable), else the journal file (--journal, or the out dir's own), which must
 * exist. Light on purpose: nothing is opened here.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { defaultJournalPath } from '../pipeline/store/sqlite/journal-file.ts';
import { storeUrlOf } from './store-url.ts';
import { UsageError } from './usage-error.ts';

/** A store's URL, or a journal file's path. */
export type JournalSource = { storeUrl: string } | { journal: string };

/**
 * The journal of the out dir `outArg` (as given) under the flags `--store` and `--journal`.
 *
 * @throws UsageError when the journal file does not exist, naming it and what to pass
 */
export function journalSourceOf(outArg: string, opts: { journal?: string; store?: string }): JournalSource {
  const storeUrl = storeUrlOf(opts);
  if (storeUrl !== null) return { storeUrl };
  const path = opts.journal ? resolve(opts.journal) : defaultJournalPath(resolve(outArg));
  if (!existsSync(path)) {
    throw new UsageError(
      opts.journal
        ? `the journal file ${path} does not exist`
        : `no journal at ${path}: nothing ran with ${outArg} as its --out (or the runs used --journal <path>: pass it here too)`,
    );
  }
  return { journal: path };
}
