/**
 * The PostgreSQL store: the Store interface (../store/store.ts, its contract in ../store/README.md) in
 * a database several workers can share, for distributed mode. Its tables are the SQLite journal's; its
 * decisions are the same pure functions (../journal/admission.ts, resume-decision.ts, crash-policy.ts,
 * item-columns.ts, recipe-hash.ts), so a file is admitted, resumed or failed by the crash policy in
 * the same way whichever store records it.
 *
 * - Every write is committed (synchronous_commit as the server has it: on by default) before its
 *   promise resolves. Writes of one item row are done in the order they were asked for.
 * - An admission runs in one transaction under an advisory lock of the out dir (ITEM_SQL.admissionLock):
 *   two workers admitting files of one out dir never choose the same place or two active rows.
 * - The out dir's lock is a session advisory lock with a row naming its holder (pg-lock.ts). While this
 *   store holds it and its connection is lost, every write is refused.
 * - The store's URL is never shown with its password (connection.ts): `location` and every error name
 *   it redacted.
 *
 * @example
 * const store = await openPostgresStore({ url: process.env.GENPIPE_STORE_URL!, outDir: 'out' });
 * await store.startBatch({ inputDir: 'in', service: baseUrl });
 */

import { hostname } from 'node:os';
import type pg from 'pg';
import type { JobDurationSample, SharedQuota } from '../../client/index.ts';
import { JOB_DURATIONS_KEPT } from '../../client/index.ts';
import { currentStep, type Item } from '../item.ts';
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
} from '../journal/admission.ts';
import { type HashCache, hashWithCache, sameIdentity } from '../journal/content-hash.ts';
import { finishedItemsOf } from '../journal/finished-items.ts';
import { type JournalKey, type JournalRow, UNHASHED } from '../journal/journal-row.ts';
import { realLocation } from '../journal/local-disk.ts';
import { checkOutputs, type OutputCheck } from '../journal/outputs-check.ts';
import { recipeHash, referencesUsed } from '../journal/recipe-hash.ts';
import { decide } from '../journal/resume-decision.ts';
import { JournalLockedError } from '../journal/runner-lock.ts';
import { JOURNAL_CHOICES, JOURNAL_TEXTS } from '../journal/texts.ts';
import { placeInput } from '../raw-names.ts';
import { ItemTakenOverError } from '../store/item-taken-over.ts';
import { recordedOptions } from '../store/recorded-options.ts';
import type {
  BatchInfo,
  BatchRow,
  FileIdentity,
  FinishedFile,
  LockHolder,
  PlanOptions,
  QuotaState,
  QuotaStateInput,
  RecipeFiles,
  Store,
  StoreDecision,
} from '../store/store.ts';
import {
  checkSchemaName,
  connectError,
  openPool,
  redactUrl,
  type StoreConnectionError,
  storeError,
  withPoolClient,
} from './connection.ts';
import { type ItemProgress, PgItems, type Queryable } from './pg-items.ts';
import { lockHolderOf, OutDirLock } from './pg-lock.ts';
import { BATCH_SQL, DURATION_SQL, HASH_SQL, ITEM_SQL, QUOTA_SQL, REFERENCE_SQL } from './pg-plans.ts';
import { migrateSchema } from './pg-schema.ts';
import {
  type JobSlotAnswer,
  type QuotaKey,
  type RequestWindow,
  releaseJobSlot,
  type SlotAnswer,
  takeJobSlot,
  takeRequestSlot,
} from './quota-ledger.ts';
import { type PostgresSharedQuotaOptions, postgresSharedQuota } from './shared-quota-pg.ts';
import {
  beatWorker,
  forgetWorker,
  type KeyQuotaUse,
  keyQuotaUse,
  listWorkers,
  type WorkerBeat,
  type WorkerRow,
} from './worker-registry.ts';

/** Options of openPostgresStore. */
export interface PostgresStoreOptions {
  /** The database's connection string (`postgres://user:password@host:port/db`); shown only redacted. */
  url: string;
  /** The out dir this store serves. */
  outDir: string;
  /** The schema holding genpipe's tables (created when missing); default `genpipe`. */
  schema?: string;
  /** Take the out dir's lock at once (default true). */
  lock?: boolean;
  /** Clock, ms since the epoch (tests). */
  now?: () => number;
}

/** The schema genpipe's tables are in unless told otherwise. */
export const DEFAULT_STORE_SCHEMA = 'genpipe';

/**
 * Opens the store of `outDir` in the database at `url`: the schema created or brought up to date, and
 * the out dir's lock taken unless `lock: false`.
 *
 * @throws StoreConnectionError when the database cannot be reached or used (its message holds no password)
 * @throws JournalLockedError when another runner holds the out dir
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const schema = checkSchemaName(opts.schema ?? DEFAULT_STORE_SCHEMA);
  let failure: StoreConnectionError | null = null;
  const pool = openPool(opts.url, schema, (err) => {
    failure ??= err;
  });
  try {
    await withPoolClient(pool, (client) => migrateSchema(client, schema), { transaction: false });
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw connectError(err, opts.url);
  }
  const store = new PostgresStore(pool, opts, schema, () => failure);
  if (opts.lock !== false) {
    try {
      await store.acquireLock();
    } catch (err) {
      await store.close().catch(() => undefined);
      throw err;
    }
  }
  return store;
}

/** Runs each task of a key after the earlier ones of that key have settled (an item row's writes). */
class KeyedSerial {
  private readonly tails = new Map<number, Promise<unknown>>();

  run<T>(key: number, task: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const result = before.then(task, task);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}

/** See the module comment. One per process and out dir (it may share the database with others). */
export class PostgresStore implements Store {
  /** The store as it may be shown: the redacted URL and the schema. */
  readonly location: string;
  /** The out dir's real path (the rows' `out_dir`). */
  readonly outDir: string;
  private readonly url: string;
  private readonly schema: string;
  private readonly now: () => number;
  private readonly items: PgItems;
  private readonly serial = new KeyedSerial();
  private batch: { id: number; service: string | undefined; formers: readonly string[] } | null = null;
  /** input → id of the row this session admitted it in. */
  private readonly bound = new Map<string, number>();
  private lock: OutDirLock | null = null;
  private closed = false;
  /** Queries under way (close waits for them). */
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly pool: pg.Pool,
    opts: PostgresStoreOptions,
    schema: string,
    private readonly poolFailure: () => StoreConnectionError | null,
  ) {
    this.url = opts.url;
    this.schema = schema;
    this.outDir = realLocation(opts.outDir);
    this.now = opts.now ?? Date.now;
    this.location = `${redactUrl(opts.url)} (schema ${schema})`;
    this.items = new PgItems(this.outDir, this.now);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`store ${this.location} is closed`);
  }

  /** Refuses writes once the held lock was lost (another runner may hold the out dir now). */
  private assertWritable(): void {
    this.assertOpen();
    const lost = this.lock?.lost;
    if (lost) throw lost;
  }

  /** Keeps `work` until it settles, so that close() waits for what was asked before it. */
  private track<T>(work: Promise<T>): Promise<T> {
    this.inFlight.add(work);
    const done = (): void => {
      this.inFlight.delete(work);
    };
    work.then(done, done);
    return work;
  }

  /** Runs `fn` with a pooled connection, its driver errors turned into redacted ones. */
  private use<T>(what: string, fn: (q: Queryable) => Promise<T>): Promise<T> {
    return this.track(
      (async () => {
        try {
          return await fn(this.pool);
        } catch (err) {
          throw this.errorOf(err, what);
        }
      })(),
    );
  }

  /** What the driver threw, redacted (only driver calls run inside use and tx). */
  private errorOf(err: unknown, what: string): Error {
    if (err instanceof JournalLockedError || err instanceof ItemTakenOverError) return err;
    return storeError(err, this.url, what);
  }

  /** Runs `fn` in one transaction (committed when it resolves; rolled back, and the row cache with it, when not). */
  private tx<T>(what: string, fn: (q: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertWritable();
    return this.track(this.inTransaction(what, fn));
  }

  private async inTransaction<T>(what: string, fn: (q: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await withPoolClient(this.pool, fn);
    } catch (err) {
      this.items.written.clear();
      throw this.errorOf(err, what);
    }
  }

  // ---- batches --------------------------------------------------------------------------------

  async startBatch(info: BatchInfo): Promise<number> {
    this.assertWritable();
    const { rows } = await this.use('recording the batch', (q) =>
      q.query<{ id: number }>(BATCH_SQL.insert, [
        this.outDir,
        this.now(),
        realLocation(info.inputDir),
        info.service ?? null,
        JSON.stringify(recordedOptions(info.options ?? {})),
        process.pid,
        hostname(),
      ]),
    );
    const id = rows[0]!.id;
    this.batch = { id, service: info.service, formers: info.formerServices ?? [] };
    return id;
  }

  async finishBatch(status: 'finished' | 'stopped' = 'finished'): Promise<void> {
    this.assertWritable();
    const batch = this.batch;
    if (!batch) return;
    await this.use('recording the end of the batch', (q) =>
      q.query(BATCH_SQL.finish, [this.outDir, batch.id, this.now(), status]),
    );
  }

  async batches(): Promise<BatchRow[]> {
    this.assertOpen();
    const { rows } = await this.use('reading the batches', (q) =>
      q.query<{
        id: number;
        started_at: number;
        finished_at: number | null;
        status: string;
        input_dir: string;
        out_dir: string;
        service: string | null;
        options: string;
        pid: number;
      }>(BATCH_SQL.list, [this.outDir]),
    );
    return rows.map((b) => ({
      id: b.id,
      startedAt: b.started_at,
      finishedAt: b.finished_at,
      status: b.status as BatchRow['status'],
      inputDir: b.input_dir,
      outDir: b.out_dir,
      service: b.service,
      options: recordedOptions(JSON.parse(b.options) as Record<string, unknown>),
      pid: b.pid,
    }));
  }

  private requireBatch(): { id: number; service: string | undefined; formers: readonly string[] } {
    if (!this.batch) throw new Error('store: startBatch must be called before admit');
    return this.batch;
  }

  // ---- the content-hash cache -----------------------------------------------------------------

  async cachedHash(path: string, identity: FileIdentity): Promise<string | null> {
    this.assertOpen();
    const { rows } = await this.use('reading the content-hash cache', (q) =>
      q.query<{ dev: string; ino: string; size: number; mtime_ns: string; ctime_ns: string; hash: string }>(
        HASH_SQL.get,
        [path],
      ),
    );
    const row = rows[0];
    if (!row) return null;
    const at = { dev: row.dev, ino: row.ino, size: row.size, mtimeNs: row.mtime_ns, ctimeNs: row.ctime_ns };
    return sameIdentity(identity, at) ? row.hash : null;
  }

  async saveHash(path: string, identity: FileIdentity, hash: string): Promise<void> {
    this.assertWritable();
    const { dev, ino, size, mtimeNs, ctimeNs } = identity;
    await this.use('recording a content hash', (q) =>
      q.query(HASH_SQL.put, [path, dev, ino, size, mtimeNs, ctimeNs, hash, this.now()]),
    );
  }

  /** The content-hash cache as hashWithCache reads it (a file hashed once is not read again while unchanged). */
  hashCache(): HashCache {
    return {
      cachedHash: (p, identity) => this.cachedHash(p, identity),
      saveHash: async (p, identity, hash) => {
        if (!this.closed) await this.saveHash(p, identity, hash);
      },
    };
  }

  /** The key of a planned item: its content hash and recipe hash (the current batch's service in it). */
  private async keyOf(
    item: Item,
    references: RecipeFiles['references'],
    signal?: AbortSignal,
  ): Promise<JournalKey> {
    const cache = this.hashCache();
    const contentHash = await hashWithCache(cache, item.absPath, signal);
    const refHashes: Record<string, string> = {};
    for (const name of item.steps.flatMap((s) => referencesUsed(s.request))) {
      const ref = references[name];
      if (ref) refHashes[name] = await hashWithCache(cache, ref.absPath, signal);
    }
    const key: JournalKey = { contentHash, recipeHash: recipeHash(item, refHashes, this.batch?.service) };
    const formers = this.batch?.formers ?? [];
    if (formers.length > 0) key.formerRecipeHashes = formers.map((f) => recipeHash(item, refHashes, f));
    return key;
  }

  // ---- admitting ------------------------------------------------------------------------------

  private outputsCheck(row: JournalRow): OutputCheck {
    if (row.outputs === null)
      return { complete: false, resultPresent: false, problems: ['outputs were not recorded'] };
    return checkOutputs(this.outDir, row.place, row.outputs);
  }

  /** The steps of ../journal/admission.ts in one transaction, under the out dir's admission lock. */
  private plan(item: Item, key: JournalKey, opts: PlanOptions): Promise<StoreDecision> {
    const batch = this.requireBatch();
    return this.tx(`admitting ${item.input}`, async (q) => {
      await q.query(ITEM_SQL.admissionLock, [this.outDir]);
      let active = await this.items.active(q, item.input);
      const unhashed = active?.contentHash === UNHASHED;
      if (active && unhashed) {
        await this.items.setKey(q, active.id, key);
        active = { ...active, contentHash: key.contentHash, recipeHash: key.recipeHash };
      } else if (active && keyedBefore(active, key)) {
        // Keyed under a former identity of the service (its URL with the password): the same work.
        await this.items.setKey(q, active.id, key);
        active = { ...active, contentHash: key.contentHash, recipeHash: key.recipeHash };
      }
      const earlier = wantsEarlier(active, key, opts.force ?? false, unhashed)
        ? await this.items.earlier(q, item.input, key)
        : null;
      const row = earlier ?? active;
      const outputs = needsOutputs(row, key) ? this.outputsCheck(row) : null;
      const decision = decide(decideInputOf(row, item, key, opts, this.now(), outputs, batch.id));
      const w = rowWrites(active, row, decision);
      let id: number;
      let next: Item;
      if (w.kind === 'insert') {
        if (w.supersede !== null) await this.items.supersede(q, w.supersede);
        next = { ...w.item, place: await this.items.freePlace(q, item.input) };
        id = await this.items.insert(q, next, key, batch.id);
      } else {
        ({ id, item: next } = w);
        if (w.supersede !== null) await this.items.supersede(q, w.supersede);
        if (w.reactivate) await this.items.reactivate(q, id);
        if (w.write) await this.items.write(q, id, next, w.write === 'fresh' ? null : row, batch.id);
      }
      await this.items.claim(q, id);
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

  async admit(
    item: Item,
    recipe: RecipeFiles,
    opts: PlanOptions & { signal?: AbortSignal } = {},
  ): Promise<StoreDecision> {
    this.assertWritable();
    this.requireBatch();
    const key = await this.keyOf(item, recipe.references, opts.signal);
    const decision = await this.plan(item, key, opts);
    if (decision.action !== 'fresh' && decision.action !== 'resume') return decision;
    return { ...decision, item: { ...decision.item, contentHash: key.contentHash } };
  }

  async placeFor(input: string, key = input): Promise<string> {
    this.assertOpen();
    return this.use(`choosing the place of ${input}`, (q) => this.items.givePlace(q, input, key));
  }

  // ---- saving ---------------------------------------------------------------------------------

  async save(item: Item): Promise<void> {
    this.assertWritable();
    const input = rowInputOf(item);
    if (item.state === 'discovered' || item.state === 'sniffed') this.bound.delete(input);
    const id = this.bound.get(input);
    if (id === undefined) {
      if (holdsServiceWork(item)) throw new Error(JOURNAL_TEXTS.notPlanned(item.input, item.state));
      await this.noteUnadmitted(item);
      return;
    }
    const batchId = this.batch?.id ?? null;
    await this.serial.run(id, () =>
      this.use(`recording ${item.input}`, (q) => this.items.save(q, id, item, batchId)).catch((err) => {
        this.items.written.forget(id);
        throw err;
      }),
    );
  }

  /**
   * The row of an ended file never admitted (../journal/admission.ts's unadmittedWrites): stopped, when
   * its input has none (the next run continues it); refused before it was planned, or skipped, as its
   * input's row at its place (the out dir's history tells it).
   */
  private async noteUnadmitted(item: Item): Promise<void> {
    const batch = this.batch;
    if (!batch || (item.state !== 'stopped' && !refusedBeforeAdmission(item))) return;
    const input = rowInputOf(item);
    await this.tx(`noting ${item.input} ${item.state}`, async (q) => {
      await q.query(ITEM_SQL.admissionLock, [this.outDir]);
      const active = await this.items.active(q, input);
      const w = unadmittedWrites(item, active);
      if (w?.kind === 'update') {
        if (active?.contentHash !== UNHASHED) await this.items.setKey(q, w.id, NOTED_KEY);
        await this.items.save(q, w.id, item, batch.id);
      } else if (w?.kind === 'insert') {
        if (w.supersede !== null) await this.items.supersede(q, w.supersede);
        const noted: Item = {
          ...item,
          place: item.place ?? (await this.items.freePlace(q, placeInput(item), input)),
        };
        await this.items.insert(q, noted, NOTED_KEY, batch.id);
      }
    });
  }

  async recordIntent(item: Item): Promise<void> {
    if (!currentStep(item)?.requestId) {
      throw new Error(`store: recordIntent(${item.input}) without a request id`);
    }
    await this.save(item);
  }

  // ---- reading --------------------------------------------------------------------------------

  /** The active row of `input` in this out dir, or null (tests and inspection). */
  async get(input: string): Promise<JournalRow | null> {
    this.assertOpen();
    return this.use(`reading ${input}`, (q) => this.items.active(q, input));
  }

  /** Every row `input` has had in this out dir, oldest first (tests and inspection). */
  async history(input: string): Promise<JournalRow[]> {
    this.assertOpen();
    return this.use(`reading ${input}`, (q) => this.items.history(q, input));
  }

  /** The active row of every input of this out dir, by input path (tests and inspection). */
  async rows(): Promise<JournalRow[]> {
    this.assertOpen();
    return this.use('reading the items', (q) => this.items.allActive(q));
  }

  /**
   * Where each active row of this out dir written at or after `sinceMs` (by its writer's clock) stands:
   * what a run waiting for workers shows of their progress, without reading the items themselves.
   */
  async changedSince(sinceMs: number): Promise<ItemProgress[]> {
    this.assertOpen();
    return this.use('reading the items', (q) => this.items.changedSince(q, sinceMs));
  }

  async finishedFiles(): Promise<Map<string, FinishedFile>> {
    this.assertOpen();
    return this.use('reading the finished files', (q) => this.items.finished(q));
  }

  async finishedItems(): Promise<Item[]> {
    this.assertOpen();
    return finishedItemsOf(
      await this.use('reading the finished files', (q) => this.items.finishedAtPlaces(q)),
    );
  }

  async vanishedInFlight(skip?: (input: string) => boolean): Promise<StoreDecision[]> {
    const batch = this.requireBatch();
    this.assertWritable();
    const out: StoreDecision[] = [];
    for (const phase of VANISHED_TAKEN_PHASES) {
      const rows = await this.use('reading the work in flight', (q) => this.items.inPhase(q, phase));
      for (const row of rows) {
        if (this.bound.has(row.input) || skip?.(row.input)) continue;
        const key = { contentHash: row.contentHash, recipeHash: row.recipeHash };
        const outputs = phase === 'downloaded' ? this.outputsCheck(row) : null;
        const decision = decide(decideInputOf(row, row.item, key, {}, this.now(), outputs));
        if (decision.action !== 'resume') continue;
        await this.tx(`resuming ${row.input}`, async (q) => {
          await this.items.write(q, row.id, decision.item, row, batch.id);
          await this.items.claim(q, row.id);
        });
        this.bound.set(row.input, row.id);
        out.push({ action: decision.action, item: decision.item, reason: decision.reason });
      }
    }
    return out;
  }

  // ---- shared references ----------------------------------------------------------------------

  async reference(name: string, contentHash: string): Promise<string | null> {
    this.assertOpen();
    const notBefore = this.now() - JOURNAL_CHOICES.uploadReuseMaxAgeMs;
    const { rows } = await this.use('reading a shared reference', (q) =>
      q.query<{ file_id: string; uploaded_at: number }>(REFERENCE_SQL.get, [
        this.batch?.service ?? '',
        name,
        contentHash,
      ]),
    );
    const row = rows[0];
    return row && row.uploaded_at >= notBefore ? row.file_id : null;
  }

  async saveReference(name: string, contentHash: string, fileId: string): Promise<void> {
    this.assertWritable();
    const params = [this.batch?.service ?? '', name, contentHash, fileId, this.now(), this.batch?.id ?? null];
    await this.use('recording a shared reference', (q) => q.query(REFERENCE_SQL.save, params));
  }

  async forgetReference(name: string, contentHash: string): Promise<void> {
    this.assertWritable();
    const params = [this.batch?.service ?? '', name, contentHash];
    await this.use('forgetting a shared reference', (q) => q.query(REFERENCE_SQL.forget, params));
  }

  // ---- quota state ----------------------------------------------------------------------------

  async quotaState(service: string, keyFingerprint: string): Promise<QuotaState | null> {
    this.assertOpen();
    const { rows } = await this.use('reading the quota state', (q) =>
      q.query<{
        job_ceiling: number | null;
        request_limit: number | null;
        window_ms: number | null;
        blocked_until: number | null;
        recent_requests: string;
        updated_at: number;
      }>(QUOTA_SQL.get, [service, keyFingerprint]),
    );
    const row = rows[0];
    if (!row) return null;
    return {
      jobCeiling: row.job_ceiling,
      requestLimit: row.request_limit,
      windowMs: row.window_ms,
      blockedUntil: row.blocked_until,
      recentRequests: JSON.parse(row.recent_requests) as number[],
      updatedAt: row.updated_at,
    };
  }

  async saveQuotaState(service: string, keyFingerprint: string, state: QuotaStateInput): Promise<void> {
    this.assertWritable();
    const params = [
      service,
      keyFingerprint,
      state.jobCeiling,
      state.requestLimit,
      state.windowMs,
      state.blockedUntil,
      JSON.stringify(state.recentRequests),
      this.now(),
    ];
    await this.use('recording the quota state', (q) => q.query(QUOTA_SQL.save, params));
  }

  // ---- the quota shared by every worker of a key (quota-ledger.ts) -----------------------------

  /**
   * Intent before action, under the key's shared quota: when the key's request window has room, logs
   * the request and records `intent` (an admitted item holding the request id of the create about to
   * be sent, as recordIntent) in one transaction; else records nothing and says how long until a slot
   * frees. Only once it resolves granted may the create be sent.
   *
   * @throws Error when the item holds no request id or was not admitted
   */
  async takeRequestSlot(key: QuotaKey, window: RequestWindow, intent: Item): Promise<SlotAnswer> {
    this.assertWritable();
    const requestId = currentStep(intent)?.requestId;
    if (!requestId) throw new Error(`store: takeRequestSlot(${intent.input}) without a request id`);
    const id = this.bound.get(intent.input);
    if (id === undefined) throw new Error(JOURNAL_TEXTS.notPlanned(intent.input, intent.state));
    const batchId = this.batch?.id ?? null;
    return this.serial.run(id, () =>
      this.tx(`taking a request slot for ${intent.input}`, (q) =>
        takeRequestSlot(q, key, window, requestId, (tq) => this.items.save(tq, id, intent, batchId)),
      ),
    );
  }

  /**
   * The client's SharedQuota of `key` on this store's database (shared-quota-pg.ts): the quota every
   * worker of the key shares. Given an item of this store as a create's intent (CreateOptions.intent:
   * an admitted item holding the create's request id), its request slot is taken in the transaction
   * that records the intent (takeRequestSlot): a crash between the two cannot leave a request counted
   * and its intent unrecorded.
   */
  sharedQuota(key: QuotaKey, options: Omit<PostgresSharedQuotaOptions, 'withIntent'> = {}): SharedQuota {
    return postgresSharedQuota(this.pool, key, {
      ...options,
      withIntent: (requestId, window, intent) => {
        if (!isItem(intent) || currentStep(intent)?.requestId !== requestId) return null;
        if (this.closed || !this.bound.has(intent.input)) return null;
        return this.takeRequestSlot(key, window, intent);
      },
    });
  }

  /** Takes job slot `slotId` of `key` when fewer than `ceiling` are held by all workers. */
  takeJobSlot(key: QuotaKey, ceiling: number, slotId: string): Promise<JobSlotAnswer> {
    return this.tx('taking a job slot', (q) => takeJobSlot(q, key, ceiling, slotId));
  }

  /** Gives job slot `slotId` of `key` back (false: it was not held). */
  releaseJobSlot(key: QuotaKey, slotId: string): Promise<boolean> {
    return this.tx('releasing a job slot', (q) => releaseJobSlot(q, key, slotId));
  }

  // ---- job durations --------------------------------------------------------------------------

  async jobDurations(service: string): Promise<Map<string, JobDurationSample[]>> {
    this.assertOpen();
    const { rows } = await this.use('reading job durations', (q) =>
      q.query<{ kind: string; running_at_ms: number; done_by_ms: number }>(DURATION_SQL.ofService, [service]),
    );
    const out = new Map<string, JobDurationSample[]>();
    for (const row of rows) {
      const list = out.get(row.kind) ?? [];
      list.push({ runningAtMs: row.running_at_ms, doneByMs: row.done_by_ms });
      out.set(row.kind, list);
    }
    return out;
  }

  async recordJobDuration(service: string, kind: string, sample: JobDurationSample): Promise<void> {
    const [running, done] = [Math.round(sample.runningAtMs), Math.round(sample.doneByMs)];
    await this.tx('recording a job duration', async (q) => {
      await q.query(DURATION_SQL.add, [service, kind, running, done, this.now()]);
      await q.query(DURATION_SQL.prune, [service, kind, JOB_DURATIONS_KEPT]);
    });
  }

  // ---- the workers of distributed mode and the keys' quota in use (worker-registry.ts) ----------

  /** Records or renews a worker's row (its heartbeat). */
  async beatWorker(beat: WorkerBeat): Promise<void> {
    this.assertOpen();
    await this.use("recording the worker's heartbeat", (q) => beatWorker(q, beat));
  }

  /** Removes a stopping worker's row. */
  async forgetWorker(id: string): Promise<void> {
    this.assertOpen();
    await this.use("removing the worker's row", (q) => forgetWorker(q, id));
  }

  /** The workers the store knows of, alive or gone. */
  async workers(): Promise<WorkerRow[]> {
    this.assertOpen();
    return this.use('reading the workers', (q) => listWorkers(q));
  }

  /** Each API key's quota in use (by fingerprint). */
  async quotaUse(): Promise<KeyQuotaUse[]> {
    this.assertOpen();
    return this.use('reading the shared quota', (q) => keyQuotaUse(q));
  }

  // ---- the out dir's lock ---------------------------------------------------------------------

  async acquireLock(): Promise<void> {
    this.assertOpen();
    if (this.lock && !this.lock.lost) return;
    if (this.lock) await this.lock.release().catch(() => undefined);
    this.lock = null;
    this.lock = await OutDirLock.acquire(this.url, this.schema, this.outDir, this.location, this.now);
  }

  async releaseLock(): Promise<void> {
    this.assertOpen();
    const lock = this.lock;
    this.lock = null;
    await lock?.release();
  }

  async lockHolder(): Promise<LockHolder | null> {
    this.assertOpen();
    return this.use('reading the lock holder', (q) => lockHolderOf(q, this.outDir));
  }

  // ---- closing --------------------------------------------------------------------------------

  /**
   * Waits for the writes asked before it (a write not awaited by its caller is still recorded), then
   * releases the out dir and closes the connections (again: nothing).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    const lock = this.lock;
    this.lock = null;
    try {
      await lock?.release();
    } finally {
      await this.pool.end().catch(() => undefined);
    }
  }

  /** The failure of an idle pooled connection, if any (the pool replaces it; for status). */
  connectionFailure(): StoreConnectionError | null {
    return this.poolFailure();
  }
}

/** An item of the pipeline (a create's intent), as far as the store can tell. */
function isItem(value: unknown): value is Item {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<Item>;
  return typeof v.input === 'string' && typeof v.state === 'string' && Array.isArray(v.steps);
}
