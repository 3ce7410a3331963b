/**
 * Where the journal file is and how it is opened: the SQLite adapter's fixed values. The folder is
 * also where the out dir's runner lock lives, wherever the journal is.
 */
import { join } from 'node:path';

/** The journal file's names, schema version and write timeout. */
export const JOURNAL_FILE = {
  /** Folder of genpipe's own state inside the out dir. */
  dirName: '.genpipe',
  /** Default journal file inside that folder: `<out>/.genpipe/journal.db`. */
  fileName: 'journal.db',
  /** The out dir's runner lock inside that folder, wherever the journal is: `<out>/.genpipe/runner.lock`. */
  lockFileName: 'runner.lock',
  /** Schema version kept in `PRAGMA user_version` (see sqlite-plans.ts's MIGRATIONS). */
  schemaVersion: 4,
  /** How long a write waits for another process's write on the same journal file. */
  busyTimeoutMs: 10_000,
  /**
   * The connection's page cache, KiB: SQLite's own default. better-sqlite3 builds SQLite with 16 MiB,
   * which a journal fills as it grows (about 2.6 KB per file), so a batch's memory grew with its size
   * up to 16 MiB (over 4,500 files of a run with real outputs, the process's malloc heap grew 22 MB with
   * it and 5 MB with this cache).
   * A batch touches a journal by key (one file's rows) and appends: the B-trees' upper pages fit.
   */
  cacheKiB: 2_000,
} as const;

/** The default journal file of an out dir: `<out>/.genpipe/journal.db`. */
export function defaultJournalPath(outDir: string): string {
  return join(outDir, JOURNAL_FILE.dirName, JOURNAL_FILE.fileName);
}
