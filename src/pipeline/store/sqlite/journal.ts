/**
 * The journal: the crash-safe record that makes genpipe never pay twice and never lose a result, and
 * the first implementation of the Store interface (../store/store.ts, its contract in
 * ../store/README.md). A SQLite file (better-sqlite3) in WAL mode, on a local disk, by default
 * `<out>/.genpipe/journal.db`. Reads and plan are done when the promise is made; the writes asked for
 * within 10 ms of the first queued one (save, the hash cache, quota state, job durations, references)
 * are committed together (write-group.ts), and each one's promise resolves once committed and synced
 * to disk — synced off the event loop (wal-sync.ts), as durable as `synchronous = FULL`.
 *
 * Its decisions are the store engine's (../store/engine.ts), written once for every store; this class
 * is only what the SQLite file adds: opening it (a local disk, the schema brought up to date, read-only
 * when told), its backend (../store/sqlite/sqlite-backend.ts: the write group, the runner lock), its
 * dialect's statements (sqlite-plans.ts), and synchronous readers and plan for tests and inspection.
 *
 * How a run uses it:
 *
 * ```ts
 * const journal = openJournal({ outDir });                  // refuses a network fs or a second runner
 * await journal.startBatch({ inputDir, service: baseUrl, options });
 * // per file, once planned (state `planned`):
 * const d = await journal.admit(item, recipe, { force, resubmitUnknown, retryFailed });
 * //   d.item.place is the file's out folder (item-place.ts): its own, never another version's
 * //   d.action 'fresh'  → run the stages from d.item.state (check, upload, …)
 * //   d.action 'resume' → run the stages from d.item.state (`uploaded`, `submitted` or `downloaded`)
 * //   d.action 'done'   → d.item is final; report it
 * //   d.action 'fail'   → d.item failed at submit by the crash policy (outcome unknown); report it
 * await journal.save(item);                                 // after every transition: durable on resolve
 * // after discovery: generations in flight whose input is gone are still collected
 * for (const d of await journal.vanishedInFlight()) …
 * // a file skipped or failed before it was planned: where its result.json goes
 * await journal.placeFor(item.input);
 * await journal.finishBatch('finished'); await journal.close();
 * ```
 *
 * Intent before action: every write that matters is committed (fsynced) before the action it precedes.
 * submit journals the item with its new X-Request-Id (save or recordIntent) before the create is sent, and the runner
 * saves the generation id as soon as the 201 arrives; an upload's file_id is saved before the create
 * that uses it; outputs are recorded with their sizes when the item reaches `downloaded`. A row found
 * with a request id and no generation id after a crash goes through the crash policy (crash-policy.ts).
 */
import { accessSync, constants, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Item } from '../../item.ts';
import { StoreEngine } from '../engine.ts';
import type { JournalKey, JournalPhase, JournalRow } from '../journal-row.ts';
import { assertLocalDisk, realLocation } from '../local-disk.ts';
import type { JournalDecision } from '../resume-decision.ts';
import type { BatchInfo, BatchRow, PlanOptions, RecipeFiles } from '../store.ts';
import { JOURNAL_TEXTS } from '../texts.ts';
import { defaultJournalPath } from './journal-file.ts';
import { openReadOnly } from './read-only.ts';
import { applyPragmas, JournalFileError, migrate, type SynchronousMode } from './schema.ts';
import { SqliteBackend } from './sqlite-backend.ts';
import { WalSync } from './wal-sync.ts';

export type { BatchInfo, BatchRow, PlanOptions, RecipeFiles };

/** Options of openJournal. */
export interface OpenJournalOptions {
  /** The batch's out dir (the journal's rows are per out dir; its lock is `<outDir>/.genpipe/runner.lock`). */
  outDir: string;
  /** The journal file (`--journal PATH`); default `<outDir>/.genpipe/journal.db`. */
  path?: string;
  /**
   * Take the out dir's runner lock at once (default true). Without it the journal can be read (a
   * status command; runner.lock is then not touched) but plan and save must not be used while a runner
   * holds the out dir; acquireLock takes it later.
   */
  lock?: boolean;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
  /** The mountinfo text the local-disk check reads (tests); null skips the check. Default: this process's. */
  mountInfo?: string | null;
  /** FULL (default, and what genpipe uses); NORMAL exists only for the bench's baseline. */
  synchronous?: SynchronousMode;
  /**
   * Read it only (status, a dry run; implies lock: false): the file must exist, and neither it nor its
   * folder is written, nor an older schema upgraded (read-only.ts). Its writes go to a copy or fail.
   */
  readOnly?: boolean;
}

// Kept with the names it joins: a command tells whether a journal exists before loading this adapter.
export { defaultJournalPath } from './journal-file.ts';

/**
 * Opens (creating when missing) the journal of `outDir` and takes the out dir's runner lock
 * (runner-lock.ts), held until close() or the process's end.
 *
 * @throws NetworkFilesystemError when the journal would be on a network filesystem
 * @throws JournalLockedError when another runner holds the out dir
 * @throws JournalFileError when the file is not a journal, or a newer genpipe's, or the runner lock
 *   cannot be made (out dir not writable) or is not a lock file
 * @example const journal = openJournal({ outDir: 'out' }); // out/.genpipe/journal.db
 */
export function openJournal(opts: OpenJournalOptions): Journal {
  return new Journal(opts);
}

/**
 * Why this process may not read (or, with `write`, write) the existing journal `path`, or null when it
 * may (or the file is not there yet).
 */
function permissionProblem(path: string, write: boolean): string | null {
  const checks: Array<[string, number]> = [[path, write ? constants.R_OK | constants.W_OK : constants.R_OK]];
  if (write) checks.push([dirname(path), constants.W_OK | constants.X_OK]);
  for (const [p, mode] of checks) {
    try {
      accessSync(p, mode);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') continue;
      return code === 'EROFS' ? `read-only file system: ${p}` : `permission denied: ${p}`;
    }
  }
  return null;
}

/** Opens the SQLite file: pragmas set, schema brought up to date. */
function openDatabase(path: string): Database.Database {
  let db: Database.Database | null = null;
  try {
    db = new Database(path);
    applyPragmas(db, path);
    migrate(db, path);
    return db;
  } catch (err) {
    db?.close();
    if (err instanceof JournalFileError) throw err;
    const denied = permissionProblem(path, true);
    if (denied) throw new JournalFileError(JOURNAL_TEXTS.cannotWrite(path, denied));
    const message = err instanceof Error ? err.message : String(err);
    throw new JournalFileError(JOURNAL_TEXTS.notAJournal(path, message));
  }
}

/** Opens the SQLite file to be read only (read-only.ts). */
function openDatabaseToRead(path: string): { db: Database.Database; note: string | null } {
  try {
    return openReadOnly(path);
  } catch (err) {
    if (err instanceof JournalFileError) throw err;
    const denied = permissionProblem(path, false);
    if (denied) throw new JournalFileError(JOURNAL_TEXTS.cannotRead(path, denied));
    const message = err instanceof Error ? err.message : String(err);
    throw new JournalFileError(JOURNAL_TEXTS.notAJournal(path, message));
  }
}

/** See the module comment. Not safe to share between threads; one per process and out dir. */
export class Journal extends StoreEngine {
  /** The journal file. */
  readonly path: string;
  /** Opened read-only without the `-wal`'s commits: what to tell the user (read-only.ts); else null. */
  readonly readNote: string | null;
  private readonly db: Database.Database;
  private readonly sqlite: SqliteBackend;
  private readonly walSync: WalSync | null;

  constructor(opts: OpenJournalOptions) {
    const outDir = realLocation(opts.outDir);
    const path = opts.path ?? defaultJournalPath(outDir);
    const now = opts.now ?? Date.now;
    assertLocalDisk(path, opts.mountInfo);
    let db: Database.Database;
    let readNote: string | null = null;
    if (opts.readOnly) {
      ({ db, note: readNote } = openDatabaseToRead(path));
    } else {
      mkdirSync(dirname(path), { recursive: true });
      db = openDatabase(path);
    }
    const synced = !opts.readOnly && (opts.synchronous ?? 'FULL') === 'FULL';
    const walSync = synced ? new WalSync(`${path}-wal`) : null;
    const backend = new SqliteBackend(db, path, outDir, now, walSync);
    super(backend, outDir, now);
    this.path = path;
    this.readNote = readNote;
    this.db = db;
    this.sqlite = backend;
    this.walSync = walSync;
    if (opts.lock !== false && !opts.readOnly) {
      try {
        backend.takeLock();
      } catch (err) {
        db.close();
        throw err;
      }
    }
  }

  /**
   * TEST ONLY: the SQLite connection, for tests and the bench that read pragmas or poke rows. Nothing
   * of genpipe's own may use it: the journal's writes go through its parts.
   */
  testOnlyDatabase(): Database.Database {
    return this.db;
  }

  /** TEST ONLY: the fdatasyncs of the WAL made so far (wal-sync.ts), or null when commits are not synced. */
  testOnlyWalSyncs(): number | null {
    return this.walSync?.syncs ?? null;
  }

  /**
   * admit's decision for a planned file whose key is taken (keyOf), synchronously: the row is created,
   * replaced or brought up to date in one transaction, and the input bound to it for save().
   * SQLite journal only (tests and the benches; the Store's way in is admit).
   *
   * @example const d = journal.plan(item, await journal.keyOf(item, recipe.references), { force: false });
   */
  plan(item: Item, key: JournalKey, opts: PlanOptions = {}): JournalDecision {
    this.assertOpen();
    this.requireBatch();
    return this.bind(
      item.input,
      this.sqlite.transactionNow((sql) => this.admitRow(sql, item, key, opts)),
    );
  }

  // ---- reading (the SQLite journal's own, synchronous: tests and inspection) --------------------

  /** The active row of `input` in this out dir, or null. */
  get(input: string): JournalRow | null {
    return this.sqlite.readNow((sql) => this.items.active(sql, input));
  }

  /** Every row `input` has had in this out dir, oldest first (superseded ones included). */
  history(input: string): JournalRow[] {
    return this.sqlite.readNow((sql) => this.items.history(sql, input));
  }

  /** The active row of every input of this out dir, by input path (one per input). */
  rows(): JournalRow[] {
    return this.sqlite.readNow((sql) => this.items.allActive(sql));
  }

  /** Active rows of this out dir in `phase`. */
  rowsIn(phase: JournalPhase): JournalRow[] {
    return this.sqlite.readNow((sql) => this.items.inPhase(sql, phase));
  }

  /** Rows whose generation was submitted and whose outputs are not yet downloaded (to be polled). */
  inFlight(): JournalRow[] {
    return this.rowsIn('submitted');
  }
}
