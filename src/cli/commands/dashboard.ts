/**
 * `genpipe dashboard <out-dir>`'s body: the out dir's rows served as the dashboard (read-only: no
 * actions) until SIGINT / SIGTERM, from one of two sources:
 *
 * - the journal file, opened read-only anew for each read (a finished journal is read as a copy in
 *   memory, read-only.ts), read again when its files change (fs.watch on its folder, debounced);
 * - a PostgreSQL store (--store): its rows of the out dir and the workers on it (their heartbeat rows),
 *   read again every STORE_REREAD_MS (the server reads; the page is sent only what changed).
 */
import { watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import {
  DashboardModel,
  DashboardServerError,
  isLoopback,
  startDashboardServer,
} from '../../pipeline/dashboard/index.ts';
import { applyJournalRows } from '../../pipeline/dashboard/journal-rows.ts';
import { sharedDatabaseOf } from '../../pipeline/distributed/index.ts';
import { JournalFileError, NetworkFilesystemError, openJournal } from '../../pipeline/index.ts';
import { printable } from '../../pipeline/progress/index.ts';
import type { JournalRow } from '../../pipeline/store/journal-row.ts';
import type { BatchRow } from '../../pipeline/store/store.ts';
import { shown } from '../batch-command.ts';
import type { DashboardAddress } from '../dashboard-arg.ts';
import { priceListPrices } from '../dry-run-command.ts';
import { EXIT } from '../exit-codes.ts';
import { openRunStore } from '../store-option.ts';
import { UsageError } from '../usage-error.ts';
import { statusHeldBack } from './status-held.ts';

/** The journal is read again this long after its files last changed. */
export const JOURNAL_REREAD_MS = 150;
/** A store is read again this often. */
export const STORE_REREAD_MS = 1_000;

/** Where the rows come from (see the module comment). */
interface RowSource {
  /** The batches and active rows now, and the workers when the source knows them. */
  read(): Promise<{
    batches: BatchRow[];
    rows: readonly JournalRow[];
    workers?: DashboardModel['batch']['workers'];
  }>;
  /** Calls `changed` when the rows may have changed; stopped by the returned function. */
  follow(changed: () => void): () => void;
  close(): Promise<void>;
}

/** The journal file as a source (a UsageError when it is not one genpipe can read). */
function journalSource(outDir: string, path: string): RowSource {
  const open = () => {
    try {
      return openJournal({ outDir, path, readOnly: true });
    } catch (err) {
      if (err instanceof JournalFileError || err instanceof NetworkFilesystemError)
        throw new UsageError(err.message);
      throw err;
    }
  };
  let first = true;
  return {
    async read() {
      const journal = open();
      try {
        if (first && journal.readNote) process.stderr.write(`genpipe: ${printable(journal.readNote)}\n`);
        first = false;
        return { batches: await journal.batches(), rows: journal.rows() };
      } finally {
        await journal.close();
      }
    },
    follow(changed) {
      const name = basename(path);
      let timer: NodeJS.Timeout | undefined;
      const watcher = watch(dirname(path), (_event, file) => {
        if (file !== null && !String(file).startsWith(name)) return;
        clearTimeout(timer);
        timer = setTimeout(changed, JOURNAL_REREAD_MS);
      });
      return () => {
        clearTimeout(timer);
        watcher.close();
      };
    },
    close: async () => undefined,
  };
}

/** A PostgreSQL store as a source: the out dir's rows, and the workers on the store. */
async function storeSource(outDir: string, url: string): Promise<RowSource> {
  const store = await openRunStore({ url, outDir, lock: false });
  return {
    async read() {
      const workers = (await sharedDatabaseOf(store).workers()).map((w) => ({
        host: w.host,
        pid: w.pid,
        alive: w.alive,
        inHand: w.inHand,
        seenAgoMs: w.seenAgoMs,
      }));
      const batches = (await store.batches()).filter((b) => b.options.worker !== true);
      return { batches, rows: await store.rows(), workers };
    },
    follow(changed) {
      const timer = setInterval(changed, STORE_REREAD_MS);
      return () => clearInterval(timer);
    },
    close: () => store.close(),
  };
}

/**
 * Serves the dashboard of `outDir` from its journal file, or from the store at `storeUrl`, until a
 * signal; returns the exit code.
 *
 * @throws UsageError when the journal cannot be read or the address cannot be listened on
 */
export async function serveOutDirDashboard(
  outDir: string,
  from: { journal: string } | { storeUrl: string },
  address: DashboardAddress,
  priceList?: string,
): Promise<number> {
  const prices = priceList === undefined ? null : await priceListPrices(priceList);
  const source =
    'journal' in from ? journalSource(outDir, from.journal) : await storeSource(outDir, from.storeUrl);
  const model = new DashboardModel('dashboard', true);
  if (prices) model.setPrices(prices.prices, prices.source);
  const seen = new Map<string, number>();
  const read = async (): Promise<BatchRow | undefined> => {
    const { batches, rows, workers } = await source.read();
    const last = batches.at(-1);
    model.batch.startedAt = last?.startedAt ?? null;
    model.batch.finishedAt = last?.finishedAt ?? null;
    model.batch.heldBack = (statusHeldBack(outDir)?.files ?? []).map((h) => ({
      input: h.input,
      reason: h.reason,
    }));
    if (workers) model.batch.workers = workers;
    applyJournalRows(model, rows, seen);
    return last;
  };
  let server: Awaited<ReturnType<typeof startDashboardServer>>;
  try {
    const last = await read();
    server = await startDashboardServer({
      ...address,
      model,
      inputDir: last?.inputDir ?? null,
      outDir,
      actions: {},
      title: shown(outDir),
    });
  } catch (err) {
    await source.close();
    if (err instanceof DashboardServerError) {
      throw new UsageError([`--listen ${err.message}`, "Run 'genpipe dashboard --help' for usage."]);
    }
    throw err;
  }
  const token = isLoopback(address.host) ? '' : ` (open it as /?token=${server.token})`;
  process.stderr.write(
    `genpipe: dashboard of ${printable(shown(outDir))} on ${server.url}${token}; read-only, nothing runs (Ctrl-C to stop)\n`,
  );
  // A read that fails (the journal being replaced, the store away a moment) waits for the next change.
  const unfollow = source.follow(() => void read().catch(() => undefined));
  await new Promise<void>((done) => {
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
  unfollow();
  await server.close();
  await source.close();
  return EXIT.ok;
}
