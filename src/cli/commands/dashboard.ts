/**
 * `genpipe dashboard [out-dir]`'s body: the out dir's rows served as the dashboard (read-only: no
 * actions) until SIGINT / SIGTERM, from one of two sources:
 *
 * - the journal file, opened read-only anew for each read (a finished journal is read as a copy in
 *   memory, read-only.ts), read again when its files change (fs.watch on its folder, debounced);
 * - a PostgreSQL store (--store): its rows of the out dir, or of every out dir on it when none is
 *   given, each with the process that last wrote it, and the workers on it (their heartbeat rows, and
 *   the unfinished files each last wrote), read again every STORE_REREAD_MS (the server reads; the
 *   page is sent only what changed).
 */
import { existsSync, realpathSync, watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import {
  DashboardModel,
  DashboardServerError,
  type DashboardWorker,
  isLoopback,
  startDashboardServer,
  WORKER_FILES_SHOWN,
} from '../../pipeline/dashboard/index.ts';
import { applyJournalRows, type RowNaming } from '../../pipeline/dashboard/journal-rows.ts';
import { openSharedDatabase, type WorkerRole } from '../../pipeline/distributed/index.ts';
import {
  FINAL_ITEM_STATES,
  JournalFileError,
  NetworkFilesystemError,
  openJournal,
} from '../../pipeline/index.ts';
import { printable } from '../../pipeline/progress/index.ts';
import type { JournalRow } from '../../pipeline/store/journal-row.ts';
import { shown } from '../batch-command.ts';
import type { DashboardAddress } from '../dashboard-arg.ts';
import { priceListPrices } from '../dry-run-command.ts';
import { EXIT } from '../exit-codes.ts';
import { UsageError } from '../usage-error.ts';
import { workersHeadline } from './status.ts';
import { statusHeldBack } from './status-held.ts';

/** The journal is read again this long after its files last changed. */
export const JOURNAL_REREAD_MS = 150;
/** A store is read again this often. */
export const STORE_REREAD_MS = 1_000;

/** What a source read: the batches in brief, the rows, and the store's workers and out dirs. */
interface SourceRead {
  /** The first start and the last end of the batches shown (null: none), and their input dir. */
  span: { startedAt: number | null; finishedAt: number | null; inputDir: string | null };
  rows: readonly JournalRow[];
  naming?: RowNaming;
  workers?: DashboardWorker[];
  /** A page of many out dirs (the store's), as shown. */
  outDirs?: string[];
}

/** Where the rows come from (see the module comment). */
interface RowSource {
  read(): Promise<SourceRead>;
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
        const last = (await journal.batches()).at(-1);
        return {
          span: {
            startedAt: last?.startedAt ?? null,
            finishedAt: last?.finishedAt ?? null,
            inputDir: last?.inputDir ?? null,
          },
          rows: journal.rows(),
        };
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

/** `host pid N`: a process as the page names it. */
function processName(by: { host: string; pid: number }): string {
  return `${by.host} pid ${by.pid}`;
}

/**
 * A PostgreSQL store as a source: the rows of `outDir` (null: of every out dir on it, each file named
 * with its out dir), each with the process that last wrote it, and the workers on the store with the
 * files in their hands.
 */
/** A file's name on a page of every out dir: its own name first, then its out dir's (unique, as the key). */
function storeRowName(input: string, outDir: string): string {
  return `${input} · ${shown(outDir)}`;
}

async function storeSource(outDir: string | null, url: string): Promise<RowSource> {
  const db = await openSharedDatabase(url);
  // The rows name the out dir as the process that wrote them saw it: its real path.
  const only = outDir === null ? null : existsSync(outDir) ? realpathSync(outDir) : outDir;
  return {
    async read() {
      const [overview, workers] = await Promise.all([db.overview(), db.workers()]);
      const dirs = overview.outDirs.filter((d) => only === null || d.outDir === only);
      const entries = overview.rows.filter((r) => only === null || r.row.outDir === only);
      const by = new Map(entries.map((e) => [e.row, e.by]));
      const ended = dirs.every((d) => d.finishedAt !== null);
      return {
        span: {
          startedAt: dirs.length === 0 ? null : Math.min(...dirs.map((d) => d.startedAt)),
          finishedAt: dirs.length > 0 && ended ? Math.max(...dirs.map((d) => d.finishedAt ?? 0)) : null,
          inputDir: only === null ? null : (dirs.at(-1)?.inputDir ?? null),
        },
        rows: entries.map((e) => e.row),
        naming: (row) => {
          const dir = shown(row.outDir);
          const who = by.get(row);
          return {
            input: only === null ? storeRowName(row.input, row.outDir) : row.input,
            outDir: dir,
            by: who ? processName(who) : null,
          };
        },
        workers: workers.map((w) => {
          const name = processName(w);
          const files = entries
            .filter((e) => e.by !== null && processName(e.by) === name)
            .filter((e) => !FINAL_ITEM_STATES.includes(e.row.item.state))
            .map((e) => (only === null ? storeRowName(e.row.input, e.row.outDir) : e.row.input));
          return {
            host: w.host,
            pid: w.pid,
            role: w.role,
            alive: w.alive,
            // A gone worker's last heartbeat is stale: it holds what the store still says it works on.
            inHand: w.alive ? w.inHand : files.length,
            seenAgoMs: w.seenAgoMs,
            files: files.slice(0, WORKER_FILES_SHOWN),
          };
        }),
        ...(only === null ? { outDirs: dirs.map((d) => shown(d.outDir)) } : {}),
      };
    },
    follow(changed) {
      const timer = setInterval(changed, STORE_REREAD_MS);
      return () => clearInterval(timer);
    },
    close: () => db.close(),
  };
}

/**
 * Serves the dashboard of `outDir` from its journal file, or from the store at `storeUrl`, until a
 * signal; returns the exit code.
 *
 * @throws UsageError when the journal cannot be read or the address cannot be listened on
 */
export async function serveOutDirDashboard(
  outDir: string | null,
  from: { journal: string } | { storeUrl: string },
  address: DashboardAddress,
  priceList?: string,
): Promise<number> {
  const prices = priceList === undefined ? null : await priceListPrices(priceList);
  const source =
    'journal' in from ? journalSource(outDir ?? '', from.journal) : await storeSource(outDir, from.storeUrl);
  const model = new DashboardModel('dashboard', true);
  if (prices) model.setPrices(prices.prices, prices.source);
  const seen = new Map<string, number>();
  /** Where each input was last (its journaled item's path: --on-done move files it away). */
  const paths = new Map<string, string>();
  const read = async (): Promise<SourceRead['span']> => {
    const { span, rows, naming, workers, outDirs } = await source.read();
    model.batch.startedAt = span.startedAt;
    model.batch.finishedAt = span.finishedAt;
    model.batch.heldBack =
      outDir === null
        ? []
        : (statusHeldBack(outDir)?.files ?? []).map((h) => ({
            input: h.input,
            reason: h.reason,
            since: Date.parse(h.since),
          }));
    if (workers) {
      model.batch.workers = workers;
      const alive = workers.filter((w) => w.alive) as { role: WorkerRole }[];
      model.batch.workersSaid = workersHeadline(alive, workers.length - alive.length);
    }
    if (outDirs) model.batch.outDirs = outDirs;
    applyJournalRows(model, rows, seen, naming);
    if (!naming) for (const r of rows) paths.set(r.input, r.item.absPath);
    return span;
  };
  let server: Awaited<ReturnType<typeof startDashboardServer>>;
  try {
    const span = await read();
    server = await startDashboardServer({
      ...address,
      model,
      inputDir: span.inputDir,
      inputPath: (input) => paths.get(input) ?? null,
      outDir: outDir ?? '',
      actions: {},
      // No part of the store's URL: its user is a credential too.
      title: outDir === null ? 'every out dir of the store' : shown(outDir),
    });
  } catch (err) {
    await source.close();
    if (err instanceof DashboardServerError) {
      throw new UsageError([`--listen ${err.message}`, "Run 'genpipe dashboard --help' for usage."]);
    }
    throw err;
  }
  const token = isLoopback(address.host)
    ? ''
    : ` (the page needs the token ${server.token}: give it on the page, or open it as ${server.url}#token=…)`;
  process.stderr.write(
    `genpipe: dashboard of ${printable(outDir === null ? 'every out dir of the store' : shown(outDir))} on ${server.url}${token}; read-only, nothing runs (Ctrl-C to stop)\n`,
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
