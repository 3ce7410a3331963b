/**
 * The journal: the crash-safe record that makes genpipe never pay twice and never lose a result. A
 * SQLite file (better-sqlite3, used synchronously) in WAL mode with `synchronous = FULL`, on a local
 * disk, by default `<out>/.genpipe/journal.db`.
 *
 * How a run uses it:
 *
 * ```ts
 * const journal = openJournal({ outDir });                  // refuses a network fs or a second runner
 * journal.startBatch({ inputDir, service: baseUrl, options });
 * // per file, once planned (state `planned`):
 * const d = await journal.admit(item, recipe, { force, resubmitUnknown, retryFailed });
 * //   d.item.place is the file's out folder (item-place.ts): its own, never another version's
 * //   d.action 'fresh'  → run the stages from d.item.state (check, upload, …)
 * //   d.action 'resume' → run the stages from d.item.state (`uploaded`, `submitted` or `downloaded`)
 * //   d.action 'done'   → d.item is final; report it
 * //   d.action 'fail'   → d.item failed at submit by the crash policy (outcome unknown); report it
 * journal.save(item);                                       // after every transition: durable on return
 * // after discovery: generations in flight whose input is gone are still collected
 * for (const d of journal.vanishedInFlight()) …
 * // a file skipped or failed before it was planned: where its result.json goes
 * journal.placeFor(item.input);
 * journal.finishBatch('finished'); journal.close();
 * ```
 *
 * Intent before action: every write that matters is committed (fsynced) before the action it precedes.
 * submit journals the item with its new X-Request-Id (save) before the create is sent, and the runner
 * saves the generation id as soon as the 201 arrives; an upload's file_id is saved before the create
 * that uses it; outputs are recorded with their sizes when the item reaches `downloaded`. A row found
 * with a request id and no generation id after a crash goes through the crash policy (crash-policy.ts).
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { currentStep, type Item, type ItemState, withStep } from '../item.ts';
import { fileIdentity, sameIdentity, sha256File } from './content-hash.ts';
import { itemFromJson } from './item-json.ts';
import { choosePlace, folderInUse, HOLDS_PLACE_SQL } from './item-place.ts';
import {
  isOutcomeUnknown,
  type JournalKey,
  type JournalPhase,
  type JournalRow,
  liveStateOf,
  phaseOf,
  UNHASHED,
} from './journal-row.ts';
import { assertLocalDisk, realLocation } from './local-disk.ts';
import { checkOutputs, measureOutputs, type OutputCheck, type RecordedOutput } from './outputs-check.ts';
import { recipeHash, referencesUsed } from './recipe-hash.ts';
import { decide, type JournalDecision } from './resume-decision.ts';
import { acquireRunnerLock, type RunnerLock, releaseRunnerLock } from './runner-lock.ts';
import { applyPragmas, JournalFileError, migrate, type SynchronousMode } from './schema.ts';
import { JOURNAL_CHOICES, JOURNAL_TEXTS } from './texts.ts';

/** Options of openJournal. */
export interface OpenJournalOptions {
  /** The batch's out dir (the journal's rows are per out dir; its lock is `<outDir>/.genpipe/runner.lock`). */
  outDir: string;
  /** The journal file (`--journal PATH`); default `<outDir>/.genpipe/journal.db`. */
  path?: string;
  /**
   * Take the out dir's runner lock (default true). Without it the journal can be read (a status
   * command; runner.lock is then not touched) but plan and save must not be used while a runner holds
   * the out dir.
   */
  lock?: boolean;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
  /** The mountinfo text the local-disk check reads (tests); null skips the check. Default: this process's. */
  mountInfo?: string | null;
  /** FULL (default, and what genpipe uses); NORMAL exists only for the bench's baseline. */
  synchronous?: SynchronousMode;
}

/** What a batch row records. */
export interface BatchInfo {
  inputDir: string;
  /**
   * Who produces the results: the service's base URL (or `emulator`). Part of every recipe hash (a
   * result from another service is not this one's) and of the shared-reference uploads' key.
   */
  service?: string;
  /** The run's options as given (flags), for the record. Never put secrets here. */
  options?: Record<string, unknown>;
}

/** What the journal reads of a recipe: the files of its shared references (a Recipe fits). */
export interface RecipeFiles {
  references: Readonly<Record<string, { absPath: string }>>;
}

/** The crash policy flag, --retry-failed and --force. */
export interface PlanOptions {
  /** Redo every item (--force). */
  force?: boolean;
  /** Resubmit items whose submission outcome is unknown (--resubmit-unknown); default: fail them. */
  resubmitUnknown?: boolean;
  /**
   * Retry every item that failed at the service (--retry-failed); default: only those whose failure
   * may pass now (a retryable failure_code, a 5xx, 429s, the network).
   */
  retryFailed?: boolean;
}

/** A batch row. */
export interface BatchRow {
  id: number;
  startedAt: number;
  finishedAt: number | null;
  status: 'running' | 'finished' | 'stopped';
  inputDir: string;
  outDir: string;
  service: string | null;
  options: Record<string, unknown>;
  pid: number;
}

interface ItemRowSql {
  id: number;
  out_dir: string;
  input: string;
  place: string | null;
  content_hash: string;
  recipe_hash: string;
  live_state: string;
  phase: string;
  outcome_unknown: number;
  item: string;
  outputs: string | null;
  uploaded_at: number | null;
  batch_id: number | null;
  created_at: number;
  updated_at: number;
  superseded_at: number | null;
}

interface BatchRowSql {
  id: number;
  started_at: number;
  finished_at: number | null;
  status: string;
  input_dir: string;
  out_dir: string;
  service: string | null;
  options: string;
  pid: number;
}

const ITEM_COLUMNS =
  'id, out_dir, input, place, content_hash, recipe_hash, live_state, phase, outcome_unknown, item, outputs, uploaded_at, batch_id, created_at, updated_at, superseded_at';

function toRow(r: ItemRowSql): JournalRow {
  const place = r.place ?? r.input;
  return {
    id: r.id,
    outDir: r.out_dir,
    input: r.input,
    place,
    contentHash: r.content_hash,
    recipeHash: r.recipe_hash,
    item: { ...itemFromJson(r.item), place },
    liveState: r.live_state as ItemState,
    phase: r.phase as JournalPhase,
    outcomeUnknown: r.outcome_unknown === 1,
    uploadedAt: r.uploaded_at,
    outputs: r.outputs === null ? null : (JSON.parse(r.outputs) as RecordedOutput[]),
    batchId: r.batch_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    supersededAt: r.superseded_at,
  };
}

/** True when the item holds anything the service did for it (a save of it may not be dropped). */
function holdsServiceWork(item: Item): boolean {
  return item.steps.some(
    (s) => !!(s.upload?.fileId || s.requestId || s.generationId || s.outputs.length > 0),
  );
}

/** True when the row is the work of this key. */
function hasKey(row: JournalRow, key: JournalKey): boolean {
  return row.contentHash === key.contentHash && row.recipeHash === key.recipeHash;
}

/** True when `item` is the stored item (JSON text) but for its `journal` note. */
function sameButNote(stored: string, item: Item): boolean {
  if (stored === JSON.stringify(item)) return true;
  const { journal: _stored, ...was } = itemFromJson(stored);
  const { journal: _now, ...now } = item;
  return JSON.stringify(was) === JSON.stringify(now);
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

/** See the module comment. Not safe to share between threads; one per process and out dir. */
export class Journal {
  /** The journal file. */
  readonly path: string;
  /** The out dir's real path (the rows' `out_dir`). */
  readonly outDir: string;
  /** The connection (tests and the bench read pragmas through it). */
  readonly db: Database.Database;
  private readonly now: () => number;
  private lock: RunnerLock | null = null;
  private batch: { id: number; service: string | undefined } | null = null;
  /** input → id of the row this session plans and saves it in. */
  private readonly bound = new Map<string, number>();
  private closed = false;
  private readonly sql: ReturnType<Journal['prepare']>;

  constructor(opts: OpenJournalOptions) {
    this.outDir = realLocation(opts.outDir);
    this.path = opts.path ?? defaultJournalPath(this.outDir);
    this.now = opts.now ?? Date.now;
    assertLocalDisk(this.path, opts.mountInfo);
    mkdirSync(dirname(this.path), { recursive: true });
    let db: Database.Database | null = null;
    try {
      db = new Database(this.path);
      applyPragmas(db, this.path, opts.synchronous ?? 'FULL');
      migrate(db, this.path);
    } catch (err) {
      db?.close();
      if (err instanceof JournalFileError) throw err;
      const message = err instanceof Error ? err.message : String(err);
      throw new JournalFileError(JOURNAL_TEXTS.notAJournal(this.path, message));
    }
    this.db = db;
    this.sql = this.prepare();
    if (opts.lock !== false) {
      try {
        this.lock = acquireRunnerLock(db, this.path, this.outDir, this.now());
      } catch (err) {
        db.close();
        throw err;
      }
    }
  }

  private prepare() {
    const db = this.db;
    return {
      active: db.prepare<[string, string], ItemRowSql>(
        `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND input = ? AND superseded_at IS NULL`,
      ),
      byId: db.prepare<[number], ItemRowSql>(`SELECT ${ITEM_COLUMNS} FROM items WHERE id = ?`),
      allActive: db.prepare<[string], ItemRowSql>(
        `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND superseded_at IS NULL ORDER BY input`,
      ),
      byPhase: db.prepare<[string, string], ItemRowSql>(
        `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND phase = ? AND superseded_at IS NULL ORDER BY input`,
      ),
      finished: db.prepare<[string], { input: string; size: unknown; mtime_ms: unknown }>(
        `SELECT input, json_extract(item, '$.size') AS size, json_extract(item, '$.mtimeMs') AS mtime_ms
         FROM items WHERE out_dir = ? AND phase IN ('reported', 'failed') AND superseded_at IS NULL`,
      ),
      history: db.prepare<[string, string], ItemRowSql>(
        `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND input = ? ORDER BY id`,
      ),
      // The latest earlier row of an input with this key that holds its place (see item-place.ts).
      earlier: db.prepare<[string, string, string, string], ItemRowSql>(
        `SELECT ${ITEM_COLUMNS} FROM items WHERE out_dir = ? AND input = ? AND content_hash = ? AND recipe_hash = ?
           AND superseded_at IS NOT NULL AND ${HOLDS_PLACE_SQL} ORDER BY id DESC LIMIT 1`,
      ),
      placeTaken: db.prepare<[string, string, string], { one: number }>(
        `SELECT 1 AS one FROM items WHERE out_dir = ? AND place = ?
           AND (${HOLDS_PLACE_SQL} OR (superseded_at IS NULL AND input <> ?)) LIMIT 1`,
      ),
      placeHeldByOther: db.prepare<[string, string, number], { one: number }>(
        `SELECT 1 AS one FROM items WHERE out_dir = ? AND place = ? AND id <> ? AND ${HOLDS_PLACE_SQL} LIMIT 1`,
      ),
      insert: db.prepare(
        `INSERT INTO items (out_dir, input, place, content_hash, recipe_hash, state, live_state, phase, reason, failed_at,
           upload_file_id, generation_id, request_id, attempts, outcome_unknown, item, outputs, uploaded_at, batch_id,
           created_at, updated_at)
         VALUES (@out_dir, @input, @place, @content_hash, @recipe_hash, @state, @live_state, @phase, @reason, @failed_at,
           @upload_file_id, @generation_id, @request_id, @attempts, @outcome_unknown, @item, @outputs, @uploaded_at,
           @batch_id, @now, @now)`,
      ),
      update: db.prepare(
        `UPDATE items SET state = @state, live_state = @live_state, phase = @phase, reason = @reason,
           failed_at = @failed_at, upload_file_id = @upload_file_id, generation_id = @generation_id,
           request_id = @request_id, attempts = @attempts, outcome_unknown = @outcome_unknown, item = @item,
           outputs = @outputs, uploaded_at = @uploaded_at, batch_id = @batch_id, updated_at = @now
         WHERE id = @id`,
      ),
      supersede: db.prepare('UPDATE items SET superseded_at = ? WHERE id = ?'),
      setKey: db.prepare('UPDATE items SET content_hash = ?, recipe_hash = ? WHERE id = ?'),
      reactivate: db.prepare('UPDATE items SET superseded_at = NULL WHERE id = ?'),
      insertBatch: db.prepare(
        `INSERT INTO batches (started_at, input_dir, out_dir, service, options, pid)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      finishBatch: db.prepare('UPDATE batches SET finished_at = ?, status = ? WHERE id = ?'),
      batches: db.prepare<[string], BatchRowSql>('SELECT * FROM batches WHERE out_dir = ? ORDER BY id'),
      reference: db.prepare<[string, string, string], { file_id: string; uploaded_at: number }>(
        'SELECT file_id, uploaded_at FROM shared_references WHERE service = ? AND name = ? AND content_hash = ?',
      ),
      saveReference: db.prepare(
        `INSERT INTO shared_references (service, name, content_hash, file_id, uploaded_at, batch_id)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(service, name, content_hash) DO UPDATE SET file_id = excluded.file_id,
           uploaded_at = excluded.uploaded_at, batch_id = excluded.batch_id`,
      ),
      forgetReference: db.prepare(
        'DELETE FROM shared_references WHERE service = ? AND name = ? AND content_hash = ?',
      ),
      hashGet: db.prepare<
        [string],
        { dev: string; ino: string; size: number; mtime_ns: string; ctime_ns: string; hash: string }
      >('SELECT dev, ino, size, mtime_ns, ctime_ns, hash FROM content_hashes WHERE path = ?'),
      hashPut: db.prepare(
        `INSERT INTO content_hashes (path, dev, ino, size, mtime_ns, ctime_ns, hash, hashed_at)
         VALUES (@path, @dev, @ino, @size, @mtimeNs, @ctimeNs, @hash, @now)
         ON CONFLICT(path) DO UPDATE SET dev = excluded.dev, ino = excluded.ino, size = excluded.size,
           mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns, hash = excluded.hash,
           hashed_at = excluded.hashed_at`,
      ),
    };
  }

  /** Runs `fn` in one `BEGIN IMMEDIATE` transaction (committed, and fsynced, when it returns). */
  private tx<T>(fn: () => T): T {
    this.assertOpen();
    return this.db.transaction(fn).immediate();
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
  startBatch(info: BatchInfo): number {
    this.assertOpen();
    const result = this.sql.insertBatch.run(
      this.now(),
      realLocation(info.inputDir),
      this.outDir,
      info.service ?? null,
      JSON.stringify(info.options ?? {}),
      process.pid,
    );
    const id = Number(result.lastInsertRowid);
    this.batch = { id, service: info.service };
    return id;
  }

  /** Records the end of the current batch: `finished`, or `stopped` when it stopped early. */
  finishBatch(status: 'finished' | 'stopped' = 'finished'): void {
    this.assertOpen();
    if (!this.batch) return;
    this.sql.finishBatch.run(this.now(), status, this.batch.id);
  }

  /** The batches run on this out dir, oldest first (a `running` one whose pid is gone was interrupted). */
  batches(): BatchRow[] {
    return this.sql.batches.all(this.outDir).map((b) => ({
      id: b.id,
      startedAt: b.started_at,
      finishedAt: b.finished_at,
      status: b.status as BatchRow['status'],
      inputDir: b.input_dir,
      outDir: b.out_dir,
      service: b.service,
      options: JSON.parse(b.options) as Record<string, unknown>,
      pid: b.pid,
    }));
  }

  private requireBatch(): { id: number; service: string | undefined } {
    if (!this.batch) throw new Error('journal: startBatch must be called before plan');
    return this.batch;
  }

  // ---- keys -----------------------------------------------------------------------------------

  /**
   * The sha256 of a file's bytes, streamed; taken from the cache when the file's identity (device,
   * inode, size, mtime, ctime) is the one it was hashed at. A file that changes while it is read is
   * hashed but not cached.
   *
   * @example await journal.hashFile('/in/clip.mp4')
   */
  async hashFile(path: string, signal?: AbortSignal): Promise<string> {
    this.assertOpen();
    const before = await fileIdentity(path);
    const cached = this.sql.hashGet.get(path);
    if (
      cached &&
      sameIdentity(before, {
        dev: cached.dev,
        ino: cached.ino,
        size: cached.size,
        mtimeNs: cached.mtime_ns,
        ctimeNs: cached.ctime_ns,
      })
    ) {
      return cached.hash;
    }
    const hash = await sha256File(path, signal);
    const after = await fileIdentity(path);
    if (sameIdentity(before, after) && !this.closed) {
      this.sql.hashPut.run({ path, ...after, hash, now: this.now() });
    }
    return hash;
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
    const contentHash = await this.hashFile(item.absPath, signal);
    const refHashes: Record<string, string> = {};
    for (const name of referencesUsed(currentStep(item)?.request ?? null)) {
      const ref = references[name];
      if (ref) refHashes[name] = await this.hashFile(ref.absPath, signal);
    }
    return { contentHash, recipeHash: recipeHash(item, refHashes, this.batch?.service) };
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
   * @example const d = journal.plan(item, await journal.keyOf(item, recipe.references), { force: false });
   */
  plan(item: Item, key: JournalKey, opts: PlanOptions = {}): JournalDecision {
    const batch = this.requireBatch();
    const force = opts.force ?? false;
    return this.tx(() => {
      const activeSql = this.sql.active.get(this.outDir, item.input);
      let active = activeSql ? toRow(activeSql) : null;
      if (active && active.contentHash === UNHASHED) {
        // Noted by a run that stopped before planning the file (noteStopped): this is its key.
        this.sql.setKey.run(key.contentHash, key.recipeHash, active.id);
        active = { ...active, ...key };
      }
      const earlier = active && !force && !hasKey(active, key) ? this.earlierRow(item.input, key) : null;
      const row = earlier ?? active;
      const needsOutputs =
        row !== null && hasKey(row, key) && (row.phase === 'downloaded' || row.phase === 'reported');
      const decision = decide({
        row,
        fresh: item,
        key,
        force,
        resubmitUnknown: opts.resubmitUnknown ?? false,
        retryFailed: opts.retryFailed ?? false,
        now: this.now(),
        uploadReuseMaxAgeMs: JOURNAL_CHOICES.uploadReuseMaxAgeMs,
        outputs: needsOutputs ? this.outputsCheck(row) : null,
      });
      let id: number;
      let next: Item;
      if (!row || decision.supersede) {
        if (active) this.sql.supersede.run(this.now(), active.id);
        next = { ...decision.item, place: this.freePlace(item.input) };
        id = this.insertRow(next, key, batch.id);
      } else {
        id = row.id;
        next = { ...decision.item, place: row.place };
        if (row !== active) {
          if (active) this.sql.supersede.run(this.now(), active.id);
          this.sql.reactivate.run(row.id);
        }
        if (decision.action === 'fresh') this.writeItem(id, next, null, batch.id);
        else if (JSON.stringify(next) !== JSON.stringify(row.item)) this.writeItem(id, next, row, batch.id);
      }
      this.bound.set(item.input, id);
      return {
        action: decision.action,
        item: next,
        reason: decision.reason,
        ...(decision.retried ? { retried: decision.retried } : {}),
      };
    });
  }

  /**
   * The place a file the journal does not plan (skipped, or failed before it was planned) writes its
   * result.json in: the place a new row of `input` would get now, so it never lands in a folder holding
   * the service's work for another version of the file.
   *
   * @example journal.placeFor('scan.png') // 'scan-1.png' while scan.png/ holds a finished generation
   */
  placeFor(input: string): string {
    this.assertOpen();
    return this.freePlace(input);
  }

  /** The first free place for a new row of `input` (see item-place.ts). */
  private freePlace(input: string): string {
    return choosePlace(
      input,
      (place) =>
        this.sql.placeTaken.get(this.outDir, place, input) !== undefined || folderInUse(this.outDir, place),
    );
  }

  /**
   * The latest replaced row of `input` with this key whose generation was created (it exists or may
   * exist, or it failed at the service: item-place.ts's holdsPlace), when its place is still its own
   * alone (rows of a journal older than places all share the input's folder).
   */
  private earlierRow(input: string, key: JournalKey): JournalRow | null {
    const sqlRow = this.sql.earlier.get(this.outDir, input, key.contentHash, key.recipeHash);
    if (!sqlRow) return null;
    const row = toRow(sqlRow);
    return this.sql.placeHeldByOther.get(this.outDir, row.place, row.id) === undefined ? row : null;
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
   * Records the item's new state; committed and fsynced when it returns. An item the journal has not
   * planned is ignored while nothing was done for it at the service (discovered, sniffed, skipped or
   * failed by plan: those are redone on every run anyway).
   *
   * A `stopped` item keeps the state it reached in the row (live_state), and a stop that came while its
   * create was being sent keeps the recorded request id (the create may have reached the service).
   *
   * An item saved as `discovered` or `sniffed` is the file looked at again (watch hands a file over
   * again when it changed or came back): the input is unbound until it is planned again, so nothing of
   * the new look lands in the row an earlier look at the file left.
   *
   * A file a stopped batch never planned (saved `stopped`, unbound) is noted when the journal has no row
   * of its input yet, so that the next run continues it ("continued: …") rather than taking it for a
   * file seen for the first time; the row gets its key when that run plans the file.
   *
   * A save that changes nothing but the item's `journal` note (what this run decided, which every run
   * decides again) writes nothing: a restart over 10,000 finished files would otherwise make 10,000
   * durable writes just to note "already done".
   *
   * @throws Error when an unplanned item holds service work (a wiring error: it would be lost)
   * @example await ctx.persist(item) // → journal.save(item)
   */
  save(item: Item): void {
    this.assertOpen();
    if (item.state === 'discovered' || item.state === 'sniffed') this.bound.delete(item.input);
    const id = this.bound.get(item.input);
    if (id === undefined) {
      if (holdsServiceWork(item)) throw new Error(JOURNAL_TEXTS.notPlanned(item.input, item.state));
      if (item.state === 'stopped') this.noteStopped(item);
      return;
    }
    this.tx(() => {
      const prevSql = this.sql.byId.get(id);
      if (prevSql && sameButNote(prevSql.item, item)) return;
      const prev = prevSql ? toRow(prevSql) : null;
      this.writeItem(id, item, prev, this.batch?.id ?? prev?.batchId ?? null);
    });
  }

  /** A row for a stopped file never planned, when its input has none (see save). */
  private noteStopped(item: Item): void {
    const batch = this.batch;
    // Most such files have a row (a watch stopped with thousands of finished files queued): read first.
    if (!batch || this.sql.active.get(this.outDir, item.input)) return;
    this.tx(() => {
      if (this.sql.active.get(this.outDir, item.input)) return;
      const noted: Item = { ...item, place: item.place ?? this.freePlace(item.input) };
      this.insertRow(noted, { contentHash: UNHASHED, recipeHash: UNHASHED }, batch.id);
    });
  }

  /** Alias of save for the moment the create is about to be sent (the item holds its new request id). */
  recordSubmitting(item: Item): void {
    if (!currentStep(item)?.requestId) {
      throw new Error(`journal: recordSubmitting(${item.input}) without a request id`);
    }
    this.save(item);
  }

  /** Alias of save for the moment the 201 arrived (the item holds its generation id). */
  recordSubmitted(item: Item): void {
    if (!currentStep(item)?.generationId)
      throw new Error(`journal: recordSubmitted(${item.input}) without a generation id`);
    this.save(item);
  }

  private columns(item: Item, prev: JournalRow | null) {
    let it = item;
    const step = currentStep(item);
    const prevRequestId = prev ? currentStep(prev.item)?.requestId : null;
    // A stop may interrupt a create after it was sent: the request id stays until an answer is known.
    if (
      item.state === 'stopped' &&
      prev?.phase === 'submitting' &&
      !step?.generationId &&
      !step?.requestId &&
      prevRequestId
    ) {
      it = withStep(item, { requestId: prevRequestId });
    }
    const now = currentStep(it);
    const liveState = liveStateOf(it, prev?.liveState ?? null);
    const phase = phaseOf(it, liveState);
    const uploadedAt = phase === 'local' ? null : (prev?.uploadedAt ?? this.now());
    let outputs: string | null = null;
    if (phase === 'downloaded' || phase === 'reported') {
      outputs = JSON.stringify(prev?.outputs ?? measureOutputs(this.outDir, it));
    }
    return {
      state: it.state,
      live_state: liveState,
      phase,
      reason: it.reason,
      failed_at: it.failedAt,
      upload_file_id: now?.upload?.fileId ?? null,
      generation_id: now?.generationId ?? null,
      request_id: now?.requestId ?? null,
      attempts: now?.attempts ?? 0,
      outcome_unknown: isOutcomeUnknown(it, liveState) ? 1 : 0,
      item: JSON.stringify(it),
      outputs,
      uploaded_at: uploadedAt,
      now: this.now(),
    };
  }

  private insertRow(item: Item, key: JournalKey, batchId: number): number {
    const result = this.sql.insert.run({
      out_dir: this.outDir,
      input: item.input,
      place: item.place ?? item.input,
      content_hash: key.contentHash,
      recipe_hash: key.recipeHash,
      batch_id: batchId,
      ...this.columns(item, null),
    });
    return Number(result.lastInsertRowid);
  }

  private writeItem(id: number, item: Item, prev: JournalRow | null, batchId: number | null): void {
    this.sql.update.run({ id, batch_id: batchId, ...this.columns(item, prev) });
  }

  // ---- reading --------------------------------------------------------------------------------

  /** The active row of `input` in this out dir, or null. */
  get(input: string): JournalRow | null {
    const r = this.sql.active.get(this.outDir, input);
    return r ? toRow(r) : null;
  }

  /** Every row `input` has had in this out dir, oldest first (superseded ones included). */
  history(input: string): JournalRow[] {
    return this.sql.history.all(this.outDir, input).map(toRow);
  }

  /** The active row of every input of this out dir, by input path (one per input). */
  rows(): JournalRow[] {
    return this.sql.allActive.all(this.outDir).map(toRow);
  }

  /**
   * The inputs of this out dir whose work is finished — active row `reported`, or `failed` at the
   * service — with the size and mtime their file had then. `watch` hands such a file, found unchanged,
   * straight to the runner (whose admit reports it done) instead of checking it again.
   *
   * @example journal.finishedFiles().get('a.png') // { size: 51234, mtimeMs: 1763772000000.123 }
   */
  finishedFiles(): Map<string, { size: number; mtimeMs: number }> {
    const out = new Map<string, { size: number; mtimeMs: number }>();
    for (const r of this.sql.finished.iterate(this.outDir)) {
      if (typeof r.size === 'number' && typeof r.mtime_ms === 'number') {
        out.set(r.input, { size: r.size, mtimeMs: r.mtime_ms });
      }
    }
    return out;
  }

  /** Active rows of this out dir in `phase`. */
  rowsIn(phase: JournalPhase): JournalRow[] {
    return this.sql.byPhase.all(this.outDir, phase).map(toRow);
  }

  /** Rows whose generation was submitted and whose outputs are not yet downloaded (to be polled). */
  inFlight(): JournalRow[] {
    return this.rowsIn('submitted');
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
  vanishedInFlight(skip?: (input: string) => boolean): JournalDecision[] {
    const batch = this.requireBatch();
    const out: JournalDecision[] = [];
    for (const phase of ['submitted', 'downloaded'] as const) {
      for (const row of this.rowsIn(phase)) {
        if (this.bound.has(row.input) || skip?.(row.input)) continue;
        const decision = decide({
          row,
          fresh: row.item,
          key: { contentHash: row.contentHash, recipeHash: row.recipeHash },
          force: false,
          resubmitUnknown: false,
          retryFailed: false,
          now: this.now(),
          uploadReuseMaxAgeMs: JOURNAL_CHOICES.uploadReuseMaxAgeMs,
          outputs: phase === 'downloaded' ? this.outputsCheck(row) : null,
        });
        if (decision.action !== 'resume') continue;
        this.tx(() => this.writeItem(row.id, decision.item, row, batch.id));
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
  reference(name: string, contentHash: string): string | null {
    const row = this.sql.reference.get(this.batch?.service ?? '', name, contentHash);
    if (!row || this.now() - row.uploaded_at > JOURNAL_CHOICES.uploadReuseMaxAgeMs) return null;
    return row.file_id;
  }

  /** Records the upload of shared reference `name` (durable on return). */
  saveReference(name: string, contentHash: string, fileId: string): void {
    this.assertOpen();
    this.sql.saveReference.run(
      this.batch?.service ?? '',
      name,
      contentHash,
      fileId,
      this.now(),
      this.batch?.id ?? null,
    );
  }

  /** Forgets a recorded reference upload (the service no longer has the file). */
  forgetReference(name: string, contentHash: string): void {
    this.assertOpen();
    this.sql.forgetReference.run(this.batch?.service ?? '', name, contentHash);
  }

  // ---- closing --------------------------------------------------------------------------------

  /** Releases the out dir and closes the file (a checkpoint folds the WAL into the database). */
  close(): void {
    if (this.closed) return;
    try {
      if (this.lock) releaseRunnerLock(this.db, this.outDir, this.lock);
    } finally {
      this.closed = true;
      this.db.close();
    }
  }
}
