/**
 * `genpipe dashboard <out-dir>`'s body: the out dir's journal opened read-only, its rows served as the
 * dashboard (read-only: no actions), read again when the journal's files change (fs.watch on its
 * folder, debounced), until SIGINT / SIGTERM.
 */
import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import {
  DashboardModel,
  DashboardServerError,
  isLoopback,
  startDashboardServer,
} from '../../pipeline/dashboard/index.ts';
import { applyJournalRows } from '../../pipeline/dashboard/journal-rows.ts';
import { type Journal, JournalFileError, NetworkFilesystemError, openJournal } from '../../pipeline/index.ts';
import { printable } from '../../pipeline/progress/index.ts';
import type { BatchRow } from '../../pipeline/store/store.ts';
import { shown } from '../batch-command.ts';
import type { DashboardAddress } from '../dashboard-arg.ts';
import { EXIT } from '../exit-codes.ts';
import { UsageError } from '../usage-error.ts';
import { statusHeldBack } from './status-held.ts';

/** The journal is read again this long after its files last changed. */
export const JOURNAL_REREAD_MS = 150;

/** The journal, opened read-only (a UsageError when it is not one genpipe can read). */
function openReadOnly(outDir: string, path: string): Journal {
  try {
    return openJournal({ outDir, path, readOnly: true });
  } catch (err) {
    if (err instanceof JournalFileError || err instanceof NetworkFilesystemError)
      throw new UsageError(err.message);
    throw err;
  }
}

/**
 * Serves the dashboard of `outDir` until a signal; returns the exit code.
 *
 * @throws UsageError when the journal cannot be read or the address cannot be listened on
 */
export async function serveJournalDashboard(
  outDir: string,
  path: string,
  address: DashboardAddress,
): Promise<number> {
  const model = new DashboardModel('dashboard', true);
  const seen = new Map<string, number>();
  // Opened anew for each read: a journal read whole is a copy in memory (read-only.ts), not the file.
  const read = async (first: boolean): Promise<BatchRow | undefined> => {
    const journal = openReadOnly(outDir, path);
    try {
      if (first && journal.readNote) process.stderr.write(`genpipe: ${printable(journal.readNote)}\n`);
      const last = (await journal.batches()).at(-1);
      model.batch.startedAt = last?.startedAt ?? null;
      model.batch.finishedAt = last?.finishedAt ?? null;
      model.batch.heldBack = (statusHeldBack(outDir)?.files ?? []).map((h) => ({
        input: h.input,
        reason: h.reason,
      }));
      applyJournalRows(model, journal.rows(), seen);
      return last;
    } finally {
      await journal.close();
    }
  };
  const last = await read(true);
  let server: Awaited<ReturnType<typeof startDashboardServer>>;
  try {
    server = await startDashboardServer({
      ...address,
      model,
      inputDir: last?.inputDir ?? null,
      outDir,
      actions: {},
      title: shown(outDir),
    });
  } catch (err) {
    if (err instanceof DashboardServerError) {
      throw new UsageError([`--listen ${err.message}`, "Run 'genpipe dashboard --help' for usage."]);
    }
    throw err;
  }
  const token = isLoopback(address.host) ? '' : ` (open it as /?token=${server.token})`;
  process.stderr.write(
    `genpipe: dashboard of ${printable(shown(outDir))} on ${server.url}${token}; read-only, nothing runs (Ctrl-C to stop)\n`,
  );
  // A read that fails (the journal being replaced, say) waits for the next change.
  const watcher = followJournal(path, () => read(false).catch(() => undefined));
  await new Promise<void>((done) => {
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  watcher.close();
  await server.close();
  return EXIT.ok;
}

/** Calls `changed` (debounced) whenever the journal or its WAL changes. */
function followJournal(path: string, changed: () => void): FSWatcher {
  const name = basename(path);
  let timer: NodeJS.Timeout | undefined;
  return watch(dirname(path), (_event, file) => {
    if (file !== null && !String(file).startsWith(name)) return;
    clearTimeout(timer);
    timer = setTimeout(changed, JOURNAL_REREAD_MS);
  });
}
