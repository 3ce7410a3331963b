/**
 * The journal: the crash-safe record that makes genpipe never pay twice and never lose a result, and
 * the first implementation of the Store interface (../store/store.ts, its contract in
 * ../store/README.md). A SQLite file (better-sqlite3) in WAL mode with `synchronous = FULL`, on a local
 * disk, by default `<out>/.genpipe/journal.db`. Reads and plan are done when the promise is made; the
 * writes asked for within 10 ms of the first queued one (save, the hash cache, quota state, job
 * durations, references) are committed together (write-group.ts), and each one's promise resolves
 * once committed.
 *
 * This class coordinates; the tables are its parts (item-rows.ts, batch-rows.ts, reference-rows.ts,
 * hash-rows.ts, quota-rows.ts, duration-rows.ts, runner-lock.ts), all of their SQL text is in sqlite-plans.ts, and the
 * decisions are pure functions (resume-decision.ts, crash-policy.ts, item-place.ts).
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
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { currentStep, type Item } from '../item.ts';
import { placeInput } from '../raw-names.ts';
import { recordedOptions } from '../store/recorded-options.ts';
import type {
  BatchInfo,
  BatchRow,
  FileIdentity,
  FinishedFile,
  JobDurationSample,
  LockHolder,
  PlanOptions,
  QuotaState,
  QuotaStateInput,
  RecipeFiles,
  Store,
} from '../store/store.ts';
import {
  decideInputOf,
  holdsServiceWork,
  keyedBefore,
  NOTED_KEY,
  needsOutputs,
  refusedBeforeAdmission,
  rowInputOf,
  rowWrites,
  unadmittedWrites,
  VANISHED_TAKEN_PHASES,
  wantsEarlier,
} from './admission.ts';
import { BatchRows } from './batch-rows.ts';
import { type HashCache, hashWithCache } from './content-hash.ts';
import { DurationRows } from './duration-rows.ts';
import { finishedItemsOf } from './finished-items.ts';
import { HashRows } from './hash-rows.ts';
import { ItemRows } from './item-rows.ts';
import { type JournalKey, type JournalPhase, type JournalRow, phaseOf, UNHASHED } from './journal-row.ts';
import { assertLocalDisk, realLocation } from './local-disk.ts';
import { checkOutputs, type OutputCheck } from './outputs-check.ts';
import { QuotaRows } from './quota-rows.ts';
import { openReadOnly } from './read-only.ts';
import { recipeHash, referencesUsed } from './recipe-hash.ts';
import { ReferenceRows } from './reference-rows.ts';
import { decide, type JournalDecision, type RowDecision } from './resume-decision.ts';
import { acquireRunnerLock, lockHolder, type RunnerLock, releaseRunnerLock } from './runner-lock.ts';
import { applyPragmas, JournalFileError, migrate, type SynchronousMode } from './schema.ts';
import { serviceIdentity } from './service-identity.ts';
import { SCRUB_SERVICE_CREDENTIALS } from './sqlite-plans.ts';
import { JOURNAL_CHOICES, JOURNAL_TEXTS } from './texts.ts';
import { WriteGroup } from './write-group.ts';

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

/**
 * True when a save of `item` is its last in this session: it is finished (reported, skipped, failed)
 * and its row is not in a phase whose work is still collected (a failed download or result write is
 * resumed: see phaseOf). A stopped item keeps its binding.
 */
function unbindsOnSave(item: Item): boolean {
  if (item.state !== 'reported' && item.state !== 'skipped' && item.state !== 'failed') return false;
  const phase = phaseOf(item, item.state);
  return phase !== 'submitted' && phase !== 'downloaded';
}

/** The default journal file of an out dir: `<out>/.genpipe/journal.db`. */
export function defaultJournalPath(outDir: string): string {
  return join(outDir, JOURNAL_CHOICES.dirName, JOURNAL_CHOICES.fileName);
}

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
function openDatabase(path: string, synchronous: SynchronousMode): Database.Database {
  let db: Database.Database | null = null;
  try {
    db = new Database(path);
    applyPragmas(db, path, synchronous);
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
export class Journal implements Store {
  /** The journal file. */
  readonly path: string;
  /** The out dir's real path (the rows' `out_dir`). */
  readonly outDir: string;
  /** Opened read-only without the `-wal`'s commits: what to tell the user (read-only.ts); else null. */
  readonly readNote: string | null = null;
  private readonly db: Database.Database;
  private readonly now: () => number;
  private lock: RunnerLock | null = null;
  private batch: { id: number; service: string | undefined; formers: readonly string[] } | null = null;
  /**
   * input → id of the row this session plans and saves it in, while its item may still be saved: an
   * input is unbound once its item is saved finished (see unbindsOnSave), so a batch of any size keeps
   * only the items in flight here.
   */
  private readonly bound = new Map<string, number>();
  private closed = false;
  private readonly items: ItemRows;
  private readonly batchRows: BatchRows;
  private readonly references: ReferenceRows;
  private readonly hashes: HashRows;
  private readonly quotas: QuotaRows;
  private readonly durations: DurationRows;
  /** Writes asked for within a few ms of each other, committed together (write-group.ts). */
  private readonly group: WriteGroup;

  constructor(opts: OpenJournalOptions) {
    this.outDir = realLocation(opts.outDir);
    this.path = opts.path ?? defaultJournalPath(this.outDir);
    this.now = opts.now ?? Date.now;
    assertLocalDisk(this.path, opts.mountInfo);
    let db: Database.Database;
    if (opts.readOnly) {
      const read = openDatabaseToRead(this.path);
      db = read.db;
      this.readNote = read.note;
    } else {
      mkdirSync(dirname(this.path), { recursive: true });
      db = openDatabase(this.path, opts.synchronous ?? 'FULL');
    }
    this.db = db;
    this.items = new ItemRows(db, this.outDir, this.now);
    this.batchRows = new BatchRows(db, this.outDir);
    this.references = new ReferenceRows(db);
    this.hashes = new HashRows(db);
    this.quotas = new QuotaRows(db);
    this.durations = new DurationRows(db);
    this.group = new WriteGroup(db, () => this.items.forgetWritten());
    if (opts.lock !== false && !opts.readOnly) {
      try {
        this.takeLock();
      } catch (err) {
        db.close();
        throw err;
      }
    }
  }

  /** The journal file (Store.location). */
  get location(): string {
    return this.path;
  }

  /**
   * TEST ONLY: the SQLite connection, for tests and the bench that read pragmas or poke rows. Nothing
   * of genpipe's own may use it: the journal's writes go through its parts.
   */
  testOnlyDatabase(): Database.Database {
    return this.db;
  }

  /** Runs `fn` in one `BEGIN IMMEDIATE` transaction (committed, and fsynced, when it returns). */
  private tx<T>(fn: () => T): T {
    this.assertOpen();
    this.group.flush();
    try {
      return this.db.transaction(fn).immediate();
    } catch (err) {
      this.items.forgetWritten(); // rolled back: the rows hold what they held before
      throw err;
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`journal ${this.path} is closed`);
  }

  // ---- batches --------------------------------------------------------------------------------

  /**
   * Records the start of a run (or watch session) and makes it the current batch.
   *
   * @returns the batch id
   */
  async startBatch(info: BatchInfo): Promise<number> {
    this.assertOpen();
    this.group.flush();
    this.scrubServiceCredentials();
    const { formerServices = [], ...recorded } = info;
    const id = this.batchRows.insert({ ...recorded, inputDir: realLocation(info.inputDir) }, this.now());
    this.batch = { id, service: info.service, formers: formerServices };
    return id;
  }

  /** Takes the credentials out of the service of rows an earlier genpipe wrote with them (see SCRUB_SERVICE_CREDENTIALS). */
  private scrubServiceCredentials(): void {
    this.db.function('genpipe_service_identity', { deterministic: true }, (s: unknown) =>
      typeof s === 'string' ? serviceIdentity(s) : s,
    );
    this.db.function('genpipe_recorded_options', { deterministic: true }, (s: unknown) =>
      typeof s === 'string' ? JSON.stringify(recordedOptions(JSON.parse(s) as Record<string, unknown>)) : s,
    );
    this.tx(() => {
      for (const sql of SCRUB_SERVICE_CREDENTIALS) this.db.prepare(sql).run();
    });
  }

  /** Records the end of the current batch: `finished`, or `stopped` when it stopped early. */
  async finishBatch(status: 'finished' | 'stopped' = 'finished'): Promise<void> {
    this.assertOpen();
    if (!this.batch) return;
    this.group.flush();
    this.batchRows.finish(this.batch.id, status, this.now());
  }

  /** The batches run on this out dir, oldest first (a `running` one whose pid is gone was interrupted). */
  async batches(): Promise<BatchRow[]> {
    this.assertOpen();
    this.group.flush();
    return this.batchRows.list();
  }

  private requireBatch(): { id: number; service: string | undefined; formers: readonly string[] } {
    if (!this.batch) throw new Error('journal: startBatch must be called before plan');
    return this.batch;
  }

  // ---- keys -----------------------------------------------------------------------------------

  /** The content-hash cache: the hash of `path` recorded at `identity`, or null. */
  async cachedHash(path: string, identity: FileIdentity): Promise<string | null> {
    this.assertOpen();
    return this.hashes.get(path, identity);
  }

  /** Records the hash of `path` at `identity`. */
  async saveHash(path: string, identity: FileIdentity, hash: string): Promise<void> {
    this.assertOpen();
    const now = this.now();
    await this.group.add(() => this.hashes.put(path, identity, hash, now));
  }

  /**
   * The sha256 of a file's bytes, streamed, through the content-hash cache (hashWithCache). A journal
   * closed while the file was read just does not cache it.
   *
   * @example await journal.hashFile('/in/clip.mp4')
   */
  async hashFile(path: string, signal?: AbortSignal): Promise<string> {
    this.assertOpen();
    const cache: HashCache = {
      cachedHash: (p, identity) => this.cachedHash(p, identity),
      saveHash: async (p, identity, hash) => {
        const now = this.now();
        if (!this.closed) await this.group.add(() => this.hashes.put(p, identity, hash, now));
      },
    };
    return hashWithCache(cache, path, signal);
  }

  /**
   * The key of a planned item: its content hash and its recipe hash (the current batch's service
   * included). Must be taken while the item is `planned`: later states hold real file ids.
   *
   * @param references - the recipe's shared references (their files are hashed, cached)
   */
  async keyOf(
    item: Item,
    references: Readonly<Record<string, { absPath: string }>> = {},
    signal?: AbortSignal,
  ): Promise<JournalKey> {
    return this.keyWith(item, references, this.batch?.service, (path) => this.hashFile(path, signal), [
      ...(this.batch?.formers ?? []),
    ]);
  }

  /** The key of a planned item for `service`, its files hashed by `hash`. */
  private async keyWith(
    item: Item,
    references: Readonly<Record<string, { absPath: string }>>,
    service: string | undefined,
    hash: (path: string) => Promise<string>,
    formers: readonly string[] = [],
  ): Promise<JournalKey> {
    const contentHash = await hash(item.absPath);
    const refHashes: Record<string, string> = {};
    for (const name of item.steps.flatMap((s) => referencesUsed(s.request))) {
      const ref = references[name];
      if (ref) refHashes[name] = await hash(ref.absPath);
    }
    const key: JournalKey = { contentHash, recipeHash: recipeHash(item, refHashes, service) };
    if (formers.length > 0) key.formerRecipeHashes = formers.map((f) => recipeHash(item, refHashes, f));
    return key;
  }

  // ---- planning -------------------------------------------------------------------------------

  /**
   * What to do with a planned file (see resume-decision.ts): fresh, resume or done. The row is
   * created, replaced (content or recipe changed, --force) or brought up to date in the same
   * transaction, and the input is bound to it for save(). The decision's item carries the row's place
   * (item-place.ts): a new row gets a folder of its own when an earlier version of the file left the
   * service's work in the input's folder.
   *
   * A version of the file that was replaced and comes back (the same bytes and recipe as an earlier
   * row whose generation was created, completed or failed at the service) is that earlier row again, in
   * its own place: its work is reused, never paid twice, and its failure is judged as a re-run judges
   * any (retried when it may pass now or with --retry-failed, else reported failed again).
   *
   * SQLite journal only (synchronous; the Store's way in is admit).
   *
   * @example const d = journal.plan(item, await journal.keyOf(item, recipe.references), { force: false });
   */
  plan(item: Item, key: JournalKey, opts: PlanOptions = {}): JournalDecision {
    const batch = this.requireBatch();
    return this.tx(() => {
      const { active, row, decision } = this.decideRow(item, key, opts, true);
      const w = rowWrites(active, row, decision);
      let id: number;
      let next: Item;
      if (w.kind === 'insert') {
        if (w.supersede !== null) this.items.supersede(w.supersede);
        next = { ...w.item, place: this.items.freePlace(item.input) };
        id = this.items.insert(next, key, batch.id);
      } else {
        ({ id, item: next } = w);
        let write = w.write;
        if (row) {
          const place = this.items.placeOf(row, true);
          if (place !== next.place) {
            next = { ...next, place };
            write ??= 'update';
          }
        }
        if (w.supersede !== null) this.items.supersede(w.supersede);
        if (w.reactivate) this.items.reactivate(id);
        if (write) this.items.write(id, next, write === 'fresh' ? null : row, batch.id);
      }
      this.bound.set(item.input, id);
      return {
        action: decision.action,
        item: next,
        reason: decision.reason,
        ...(decision.retried ? { retried: decision.retried } : {}),
        ...(decision.nothingSent ? { nothingSent: decision.nothingSent } : {}),
      };
    });
  }

  /**
   * The row a planned file's key leads to (its active row, or an earlier version's row that the same
   * bytes and recipe bring back), and the decision for it. With `keyNoted`, the key of a row noted
   * without one (noteUnadmitted: stopped or refused before it was planned) is recorded; without it
   * nothing is written.
   */
  private decideRow(
    item: Item,
    key: JournalKey,
    opts: PlanOptions,
    keyNoted: boolean,
  ): { active: JournalRow | null; row: JournalRow | null; decision: RowDecision } {
    let active = this.items.active(item.input);
    const unhashed = active?.contentHash === UNHASHED;
    if (active && unhashed) {
      // Noted for a file never planned (stopped or refused before it was, see save): this is its key.
      if (keyNoted) this.items.setKey(active.id, key);
      active = { ...active, contentHash: key.contentHash, recipeHash: key.recipeHash };
    } else if (active && keyedBefore(active, key)) {
      // Keyed under a former identity of the service (its URL with the password): the same work.
      if (keyNoted) this.items.setKey(active.id, key);
      active = { ...active, contentHash: key.contentHash, recipeHash: key.recipeHash };
    }
    const earlier = wantsEarlier(active, key, opts.force ?? false, unhashed)
      ? this.items.earlier(item.input, key)
      : null;
    const row = earlier ?? active;
    const outputs = needsOutputs(row, key) ? this.outputsCheck(row) : null;
    const decision = decide(decideInputOf(row, item, key, opts, this.now(), outputs, this.batch?.id));
    return { active, row, decision };
  }

  /**
   * What admit would decide for a planned file, writing nothing: no row is made or changed, the input
   * is not bound, no hash is cached, and no batch is needed (`service` stands for the batch's, as part
   * of the recipe hash). For a dry run; safe on a journal opened without the lock. The item of the
   * decision carries the place the file would go to.
   *
   * @example const d = await journal.preview(item, recipe, { service: 'http://127.0.0.1:4010' });
   */
  async preview(
    item: Item,
    recipe: RecipeFiles,
    opts: PlanOptions & { service: string; formerServices?: readonly string[]; signal?: AbortSignal },
  ): Promise<JournalDecision> {
    this.assertOpen();
    this.group.flush();
    const readOnly: HashCache = {
      cachedHash: (p, identity) => this.cachedHash(p, identity),
      saveHash: async () => {},
    };
    const key = await this.keyWith(
      item,
      recipe.references,
      opts.service,
      (path) => hashWithCache(readOnly, path, opts.signal),
      opts.formerServices,
    );
    const { row, decision } = this.decideRow(item, key, opts, false);
    const place =
      !row || decision.supersede ? this.items.freePlace(item.input) : this.items.placeOf(row, false);
    return {
      action: decision.action,
      item: { ...decision.item, place },
      reason: decision.reason,
      ...(decision.retried ? { retried: decision.retried } : {}),
      ...(decision.nothingSent ? { nothingSent: decision.nothingSent } : {}),
    };
  }

  /**
   * The place a file the journal does not plan (skipped, or failed before it was planned) writes its
   * result.json in: the place a new row of `input` would get now, so it never lands in a folder holding
   * the service's work for another version of the file. The place is then taken for every other input
   * for the session (GivenPlaces); `key` is the input's inputKey (raw-names.ts), its path by default.
   *
   * @example await journal.placeFor('scan.png') // 'scan-1.png' while scan.png/ holds a finished generation
   */
  async placeFor(input: string, key = input): Promise<string> {
    this.assertOpen();
    return this.items.givePlace(input, key);
  }

  /**
   * keyOf then plan: what the runner calls for each planned file. The item of a decision to go on
   * (fresh or resume) carries the content hash it was keyed by (Item.contentHash): what is sent of it
   * later must hash to it. A final one (done, fail) is left as it was, so that a restart over finished
   * files writes nothing for them.
   *
   * @example const d = await journal.admit(item, recipe, { resubmitUnknown: flags.resubmitUnknown });
   */
  async admit(
    item: Item,
    recipe: RecipeFiles,
    opts: PlanOptions & { signal?: AbortSignal } = {},
  ): Promise<JournalDecision> {
    const key = await this.keyOf(item, recipe.references, opts.signal);
    const decision = this.plan(item, key, opts);
    if (decision.action !== 'fresh' && decision.action !== 'resume') return decision;
    return { ...decision, item: { ...decision.item, contentHash: key.contentHash } };
  }

  private outputsCheck(row: JournalRow): OutputCheck {
    if (row.outputs === null)
      return { complete: false, resultPresent: false, problems: ['outputs were not recorded'] };
    return checkOutputs(this.outDir, row.place, row.outputs);
  }

  // ---- saving ---------------------------------------------------------------------------------

  /**
   * Records the item's new state; committed and fsynced when it resolves. An item the journal has not
   * planned is ignored while nothing was done for it at the service and it has not ended (discovered,
   * sniffed: those are looked at again on every run anyway).
   *
   * A `stopped` item keeps the state it reached in the row (live_state), and a stop that came while its
   * create was being sent keeps the recorded request id (the create may have reached the service).
   *
   * An item saved as `discovered` or `sniffed` is the file looked at again (watch hands a file over
   * again when it changed or came back): the input is unbound until it is planned again, so nothing of
   * the new look lands in the row an earlier look at the file left.
   *
   * An item never planned that ended is noted (admission.ts's unadmittedWrites): stopped, when the
   * journal has no row of its input yet, so that the next run continues it ("continued: …") rather
   * than taking it for a file seen for the first time; refused before it was planned (sniff, plan, its
   * name) or skipped, as its input's row at its place, so that the out dir's history (finishedItems)
   * tells it. Such a row has no key (NOTED_KEY) until the file is planned; a file whose name is not
   * valid UTF-8 has its row by its bytes (rowInputOf).
   *
   * A save that changes nothing but the item's `journal` note (what this run decided, which every run
   * decides again) writes nothing: a restart over 10,000 finished files would otherwise make 10,000
   * durable writes just to note "already done".
   *
   * An item saved finished (reported, skipped, failed with nothing left to collect) unbinds its
   * input, so that a batch of any size keeps only its items in flight here: its row is final, a later
   * look at the file is planned again, and vanishedInFlight never takes a row in those phases. Saved
   * again all the same, it goes to its input's active row when that row holds the same work.
   *
   * @throws Error when an unplanned item holds service work (a wiring error: it would be lost)
   * @example await ctx.persist(item) // → journal.save(item)
   */
  async save(item: Item): Promise<void> {
    this.assertOpen();
    const input = rowInputOf(item);
    if (item.state === 'discovered' || item.state === 'sniffed') this.bound.delete(input);
    const id = this.bound.get(input) ?? (unbindsOnSave(item) ? this.finishedRowOf(item) : undefined);
    if (id === undefined) {
      if (holdsServiceWork(item)) throw new Error(JOURNAL_TEXTS.notPlanned(item.input, item.state));
      await this.noteUnadmitted(item);
      return;
    }
    if (unbindsOnSave(item)) this.bound.delete(input);
    await this.group.add(() => this.items.save(id, item, this.batch?.id ?? null));
  }

  /**
   * The active row of a finished item saved again after its input was unbound (see save): the row
   * holding the same work (the current step's request and generation ids), else undefined.
   */
  private finishedRowOf(item: Item): number | undefined {
    if (!holdsServiceWork(item)) return undefined;
    this.group.flush();
    const row = this.items.active(item.input);
    const [was, now] = [row ? currentStep(row.item) : undefined, currentStep(item)];
    if (!row || was?.requestId !== now?.requestId || was?.generationId !== now?.generationId)
      return undefined;
    return row.id;
  }

  /** TEST ONLY: the inputs bound to a row for save (the items this session may still save). */
  testOnlyBoundInputs(): string[] {
    return [...this.bound.keys()];
  }

  /** The row of an ended file never planned (see save and admission.ts's unadmittedWrites). */
  private async noteUnadmitted(item: Item): Promise<void> {
    const batch = this.batch;
    if (!batch || (item.state !== 'stopped' && !refusedBeforeAdmission(item))) return;
    const input = rowInputOf(item);
    if (item.state === 'stopped') {
      // A watch stopped with thousands of finished files queued: most have a row, nothing to write.
      this.group.flush();
      if (this.items.hasActive(input)) return;
    }
    await this.group.add(() => {
      const active = this.items.active(input);
      const w = unadmittedWrites(item, active);
      if (w?.kind === 'update') {
        if (active?.contentHash !== UNHASHED) this.items.setKey(w.id, NOTED_KEY);
        this.items.save(w.id, item, batch.id);
      } else if (w?.kind === 'insert') {
        if (w.supersede !== null) this.items.supersede(w.supersede);
        const noted: Item = { ...item, place: item.place ?? this.items.freePlace(placeInput(item), input) };
        this.items.insert(noted, NOTED_KEY, batch.id);
      }
    });
  }

  /** save for the moment the create is about to be sent (the item holds its new request id). */
  async recordIntent(item: Item): Promise<void> {
    if (!currentStep(item)?.requestId) {
      throw new Error(`journal: recordIntent(${item.input}) without a request id`);
    }
    await this.save(item);
  }

  /** save for the moment the 201 arrived (the item holds its generation id). */
  async recordSubmitted(item: Item): Promise<void> {
    if (!currentStep(item)?.generationId)
      throw new Error(`journal: recordSubmitted(${item.input}) without a generation id`);
    await this.save(item);
  }

  // ---- reading (the SQLite journal's own, synchronous: tests and inspection) --------------------

  /** The active row of `input` in this out dir, or null. */
  get(input: string): JournalRow | null {
    this.group.flush();
    return this.items.active(input);
  }

  /** Every row `input` has had in this out dir, oldest first (superseded ones included). */
  history(input: string): JournalRow[] {
    this.group.flush();
    return this.items.history(input);
  }

  /** The active row of every input of this out dir, by input path (one per input). */
  rows(): JournalRow[] {
    this.group.flush();
    return this.items.allActive();
  }

  /** Active rows of this out dir in `phase`. */
  rowsIn(phase: JournalPhase): JournalRow[] {
    this.group.flush();
    return this.items.inPhase(phase);
  }

  /** Rows whose generation was submitted and whose outputs are not yet downloaded (to be polled). */
  inFlight(): JournalRow[] {
    return this.rowsIn('submitted');
  }

  /**
   * The inputs of this out dir whose work is finished — active row `reported`, or `failed` at the
   * service — with the size and mtime their file had then. `watch` hands such a file, found unchanged,
   * straight to the runner (whose admit reports it done) instead of checking it again.
   *
   * @example (await journal.finishedFiles()).get('a.png') // { size: 51234, mtimeMs: 1763772000000.123 }
   */
  async finishedFiles(): Promise<Map<string, FinishedFile>> {
    this.assertOpen();
    this.group.flush();
    return this.items.finished();
  }

  /**
   * The out dir's finished inputs as the reports tell them (finished-items.ts).
   *
   * @example (await journal.finishedItems()).map((i) => i.input) // ['a.png', 'b.png']
   */
  async finishedItems(): Promise<Item[]> {
    this.assertOpen();
    this.group.flush();
    return finishedItemsOf(this.items.finishedAtPlaces());
  }

  /**
   * Work the service did (or is doing) for inputs this session has not planned: active rows in phase
   * `submitted` or `downloaded` whose input was not seen by plan (it was deleted or moved out of the
   * input dir). Call after discovery. Each is resumed (bound for save), so a paid generation is still
   * polled, downloaded and reported even though its input is gone. Rows of vanished inputs in other
   * phases are left in the journal and not reported.
   *
   * @param skip - inputs to leave alone although unplanned (the runner's: seen in this batch, but
   *   skipped or failed before planning; watch's: still in the inbox, to be handed over by the watcher)
   */
  async vanishedInFlight(skip?: (input: string) => boolean): Promise<JournalDecision[]> {
    const batch = this.requireBatch();
    this.assertOpen();
    const out: JournalDecision[] = [];
    for (const phase of VANISHED_TAKEN_PHASES) {
      for (const row of this.rowsIn(phase)) {
        if (this.bound.has(row.input) || skip?.(row.input)) continue;
        const key = { contentHash: row.contentHash, recipeHash: row.recipeHash };
        const outputs = phase === 'downloaded' ? this.outputsCheck(row) : null;
        const decision = decide(decideInputOf(row, row.item, key, {}, this.now(), outputs));
        if (decision.action !== 'resume') continue;
        this.tx(() => this.items.write(row.id, decision.item, row, batch.id));
        this.bound.set(row.input, row.id);
        out.push({ action: decision.action, item: decision.item, reason: decision.reason });
      }
    }
    return out;
  }

  // ---- shared references ----------------------------------------------------------------------

  /**
   * The file_id of an earlier upload of shared reference `name` with these bytes for the current
   * batch's service, when recent enough to reuse; else null.
   */
  async reference(name: string, contentHash: string): Promise<string | null> {
    this.assertOpen();
    const notBefore = this.now() - JOURNAL_CHOICES.uploadReuseMaxAgeMs;
    this.group.flush();
    return this.references.get(this.batch?.service ?? '', name, contentHash, notBefore);
  }

  /** Records the upload of shared reference `name` (durable on resolve). */
  async saveReference(name: string, contentHash: string, fileId: string): Promise<void> {
    this.assertOpen();
    const service = this.batch?.service ?? '';
    const [now, batchId] = [this.now(), this.batch?.id ?? null];
    await this.group.add(() => this.references.save(service, name, contentHash, fileId, now, batchId));
  }

  /** Forgets a recorded reference upload (the service no longer has the file). */
  async forgetReference(name: string, contentHash: string): Promise<void> {
    this.assertOpen();
    const service = this.batch?.service ?? '';
    await this.group.add(() => this.references.forget(service, name, contentHash));
  }

  // ---- quota state ----------------------------------------------------------------------------

  /** The quota state recorded for `service` and the key of `keyFingerprint`, or null. */
  async quotaState(service: string, keyFingerprint: string): Promise<QuotaState | null> {
    this.assertOpen();
    this.group.flush();
    return this.quotas.get(service, keyFingerprint);
  }

  /** Records the quota state of `service` and the key of `keyFingerprint` (durable on resolve). */
  async saveQuotaState(service: string, keyFingerprint: string, state: QuotaStateInput): Promise<void> {
    this.assertOpen();
    const now = this.now();
    await this.group.add(() => this.quotas.save(service, keyFingerprint, state, now));
  }

  // ---- job durations --------------------------------------------------------------------------

  /** The latest job duration samples recorded for `service`, by kind, oldest first. */
  async jobDurations(service: string): Promise<Map<string, JobDurationSample[]>> {
    this.assertOpen();
    this.group.flush();
    return this.durations.ofService(service);
  }

  /** Records one ended job's sample of `kind` at `service` (durable on resolve). */
  async recordJobDuration(service: string, kind: string, sample: JobDurationSample): Promise<void> {
    this.assertOpen();
    const now = this.now();
    await this.group.add(() => this.durations.add(service, kind, sample, now));
  }

  // ---- the runner lock ------------------------------------------------------------------------

  private takeLock(): void {
    if (this.lock) return;
    this.lock = acquireRunnerLock(this.db, this.path, this.outDir, this.now());
  }

  /** Takes the out dir's runner lock (runner-lock.ts); nothing when this journal holds it already. */
  async acquireLock(): Promise<void> {
    this.assertOpen();
    this.takeLock();
  }

  /** Gives the out dir's runner lock back (nothing when not held). */
  async releaseLock(): Promise<void> {
    this.assertOpen();
    const lock = this.lock;
    this.lock = null;
    if (lock) releaseRunnerLock(this.db, this.outDir, lock);
  }

  /** Who holds the out dir, as this journal records it. */
  async lockHolder(): Promise<LockHolder | null> {
    this.assertOpen();
    return lockHolder(this.db, this.outDir);
  }

  // ---- closing --------------------------------------------------------------------------------

  /**
   * Releases the out dir and closes the file (a checkpoint folds the WAL into the database). Done by
   * the time the call returns (the promise only reports it), so a hard exit right after it loses nothing.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      this.group.flush();
      if (this.lock) releaseRunnerLock(this.db, this.outDir, this.lock);
    } finally {
      this.lock = null;
      this.closed = true;
      this.db.close();
    }
  }
}
