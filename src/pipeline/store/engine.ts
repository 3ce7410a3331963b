/**
 * The store engine: the Store interface (store.ts, its contract in README.md) written once, over a
 * backend (backend.ts) that runs its row work (item-rows.ts, tables.ts) in a dialect's database. Every
 * decision a store makes about rows is here — a file's key, admission (admission.ts's steps, decided
 * by resume-decision.ts), save and the binding of an input to its row, a stopped file's note,
 * vanished-in-flight, a dry run's preview, the reuse of shared references — and the adapters hold
 * only what differs: the SQLite journal (sqlite/journal.ts) and the PostgreSQL store
 * (postgres/postgres-store.ts).
 *
 * Bindings: admit (and vanishedInFlight) binds an input to the row it is saved in; a save of a
 * finished item (unbindsOnSave) releases it, so that a session of any length keeps only the items
 * still in flight here (boundCount).
 */
import { hostname } from 'node:os';
import { isChain } from '../chain.ts';
import { currentStep, type Item } from '../item.ts';
import { placeInput } from '../raw-names.ts';
import { itemPlace } from '../report/item-paths.ts';
import {
  decideInputOf,
  holdsServiceWork,
  keyedBefore,
  NOTED_KEY,
  needsOutputs,
  refusedBeforeAdmission,
  rowInputOf,
  rowWrites,
  UPLOAD_REUSE_MAX_AGE_MS,
  unadmittedWrites,
  unbindsOnSave,
  VANISHED_TAKEN_PHASES,
  wantsEarlier,
} from './admission.ts';
import type { StoreBackend } from './backend.ts';
import { type HashCache, hashWithCache } from './content-hash.ts';
import { finishedItemsOf } from './finished-items.ts';
import { ItemRows } from './item-rows.ts';
import { type JournalKey, type JournalRow, UNHASHED } from './journal-row.ts';
import { KeysInFlight } from './keys-in-flight.ts';
import { earlierBinding, leftRows, takeUp } from './left-in-flight.ts';
import { realLocation } from './local-disk.ts';
import { checkRowOutputs } from './outputs-check.ts';
import { recordedOptions } from './recorded-options.ts';
import { decide, decisionOf, type RowDecision } from './resume-decision.ts';
import { RowWaiters } from './row-waiters.ts';
import {
  goneGenerationsOf,
  leftAlone,
  sameContentDecision,
  TWIN_HERE_MS,
  TWIN_POLL_MS,
  type TwinContext,
  twinChoice,
  twinGone,
  twinWanted,
} from './same-content.ts';
import type { Sql } from './sql.ts';
import type { Step } from './step.ts';
import { doneStepsDecision, stepFilesOnDisk, withStepWork } from './step-work.ts';
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
  StoreDecision,
} from './store.ts';
import * as tables from './tables.ts';
import { JOURNAL_TEXTS, SAME_CONTENT_TEXTS } from './texts.ts';
import { keyWith, workId } from './work-key.ts';

/** The current batch: its row, its service (part of every key) and the service's former identities. */
interface CurrentBatch {
  id: number;
  service: string | undefined;
  formers: readonly string[];
}

/** What admit's row work chose: the decision, the row it is recorded in. */
interface Admitted {
  decision: StoreDecision;
  id: number;
  /** The active row the decision replaced, if any (its generation may be left in flight). */
  replaced?: JournalRow;
}

/** See the module comment. */
export class StoreEngine implements Store {
  /** The out dir's real path (the rows' `out_dir`). */
  readonly outDir: string;
  protected readonly now: () => number;
  protected readonly items: ItemRows;
  protected batch: CurrentBatch | null = null;
  /**
   * input → id of the row this session admitted it in, while its item may still be saved: an input is
   * unbound once its item is saved finished (unbindsOnSave).
   */
  private readonly bound = new Map<string, number>();
  /**
   * Rows admitted here whose input is not bound yet (between admitRow's transaction and bind): in
   * flight here all the same, for a file with the same content admitted meanwhile (withTwin).
   */
  private readonly admitting = new Set<number>();
  /** Who waits for a row bound here to end (a file with the same content: same-content.ts), by row id. */
  private readonly rowWaiters = new RowWaiters();
  /** The keys of the rows in flight here, with the file holding each (keys-in-flight.ts). */
  private readonly keysHere = new KeysInFlight();
  protected closed = false;

  constructor(
    protected readonly backend: StoreBackend,
    outDir: string,
    now: () => number = Date.now,
  ) {
    this.outDir = outDir;
    this.now = now;
    this.items = new ItemRows(outDir, now, backend.plans.statements, backend.plans.claim);
    backend.onRollback = () => this.items.written.clear();
  }

  /** Where the store is, as it may be shown (Store.location). */
  get location(): string {
    return this.backend.location;
  }

  protected get tables() {
    return this.backend.plans.statements.table;
  }

  protected assertOpen(): void {
    if (this.closed) throw new Error(`${this.backend.noun} ${this.location} is closed`);
  }

  /** Refuses writes once closed, or once the held lock was lost (another runner may hold the out dir). */
  protected assertWritable(): void {
    this.assertOpen();
    this.backend.assertWritable();
  }

  protected requireBatch(): CurrentBatch {
    if (!this.batch) throw new Error(`${this.backend.noun}: startBatch must be called before admit`);
    return this.batch;
  }

  // ---- batches --------------------------------------------------------------------------------

  /** Records the start of a run (or watch session) and makes it the current batch; its id. */
  async startBatch(info: BatchInfo): Promise<number> {
    this.assertWritable();
    this.backend.beforeBatch();
    const options = JSON.stringify(recordedOptions(info.options ?? {}));
    const params = [this.outDir, this.now(), realLocation(info.inputDir), info.service ?? null, options];
    const insert = this.backend.plans.insertBatch;
    const record = (sql: Sql) => insertedId(sql, insert, [...params, process.pid, hostname()]);
    // A synchronous backend records it now: its batch is current when startBatch returns.
    const id = this.backend.transactionNow
      ? this.backend.transactionNow(record)
      : await this.backend.transaction('recording the batch', record);
    this.batch = { id, service: info.service, formers: info.formerServices ?? [] };
    return id;
  }

  /** Records the end of the current batch: `finished`, or `stopped` when it stopped early. */
  async finishBatch(status: 'finished' | 'stopped' = 'finished'): Promise<void> {
    this.assertWritable();
    const batch = this.batch;
    if (!batch) return;
    const params = [this.outDir, batch.id, this.now(), status];
    await this.backend.transaction('recording the end of the batch', (sql) =>
      run(sql, this.tables.finishBatch, params),
    );
  }

  /** The batches run on this out dir, oldest first (a `running` one whose pid is gone was interrupted). */
  async batches(): Promise<BatchRow[]> {
    this.assertOpen();
    return this.backend.read('reading the batches', (sql) =>
      tables.listBatches(sql, this.tables, this.outDir),
    );
  }

  // ---- the content-hash cache and keys ----------------------------------------------------------

  /** The content-hash cache: the hash of `path` recorded at `identity`, or null. */
  async cachedHash(path: string, identity: FileIdentity): Promise<string | null> {
    this.assertOpen();
    // Not worth a commit of the queued writes: a hash saved meanwhile is only missed, and taken again.
    return this.backend.readCache('reading the content-hash cache', (sql) =>
      tables.cachedHash(sql, this.tables, path, identity),
    );
  }

  /** Records the hash of `path` at `identity`. */
  async saveHash(path: string, identity: FileIdentity, hash: string): Promise<void> {
    this.assertWritable();
    const now = this.now();
    await this.backend.write('recording a content hash', (sql) =>
      tables.saveHash(sql, this.tables, path, identity, hash, now),
    );
  }

  /** The content-hash cache as hashWithCache reads it; a store closed meanwhile just does not cache. */
  hashCache(): HashCache {
    return {
      cachedHash: (p, identity) => this.cachedHash(p, identity),
      saveHash: async (p, identity, hash) => {
        if (!this.closed) await this.saveHash(p, identity, hash);
      },
    };
  }

  /**
   * The sha256 of a file's bytes, streamed, through the content-hash cache (hashWithCache).
   *
   * @example await store.hashFile('/in/clip.mp4')
   */
  async hashFile(path: string, signal?: AbortSignal): Promise<string> {
    this.assertOpen();
    return hashWithCache(this.hashCache(), path, signal);
  }

  /**
   * The key of a planned item: its content hash and its recipe hash (the current batch's service
   * included). Must be taken while the item is `planned`: later states hold real file ids.
   *
   * @param references - the recipe's shared references (their files are hashed, cached)
   */
  async keyOf(
    item: Item,
    references: RecipeFiles['references'] = {},
    signal?: AbortSignal,
  ): Promise<JournalKey> {
    return keyWith(item, references, this.batch?.service, (path) => this.hashFile(path, signal), [
      ...(this.batch?.formers ?? []),
    ]);
  }

  // ---- admitting ------------------------------------------------------------------------------

  /**
   * The row a planned file's key leads to (its active row, or an earlier version's row that the same
   * bytes and recipe bring back), and the decision for it (admission.ts, steps 1-3). With `write`, the
   * key of a row a stopped run noted without one (noteStopped), or keyed under a former identity of
   * the service, is recorded; without it nothing is written.
   */
  private *decideRow(
    sql: Sql,
    item: Item,
    key: JournalKey,
    opts: PlanOptions,
    write: boolean,
  ): Step<{ active: JournalRow | null; row: JournalRow | null; decision: RowDecision }> {
    item = withStepWork(item, key.stepWork ?? {});
    let active = yield* this.items.active(sql, item.input);
    // Noted for a file never planned (stopped or refused before it was, see save): this is its key;
    // or keyed under a former identity of the service (its URL with the password): the same work.
    const unhashed = active?.contentHash === UNHASHED;
    if (active && (unhashed || keyedBefore(active, key))) {
      if (write) yield* this.items.setKey(sql, active.id, key);
      active = { ...active, contentHash: key.contentHash, recipeHash: key.recipeHash };
    }
    const force = opts.force ?? false;
    const earlier = wantsEarlier(active, key, force, unhashed)
      ? yield* this.items.earlier(sql, item.input, key)
      : null;
    const row = earlier ?? active;
    const outputs = needsOutputs(row, key) ? checkRowOutputs(this.outDir, row) : null;
    const input = decideInputOf(row, item, key, opts, this.now(), outputs, this.batch?.id ?? null);
    return { active, row, decision: decide(input) };
  }

  /**
   * What to do with a planned file, in one transaction (admission.ts): the row is created, replaced
   * (content or recipe changed, --force) or brought up to date, and claimed where rows are. The
   * decision's item carries the row's place (item-place.ts): a new row gets a folder of its own when
   * an earlier version of the file left the service's work in the input's folder. A version of the
   * file that comes back (the same bytes and recipe as an earlier row whose generation was created) is
   * that earlier row again, in its own place: its work is reused, never paid twice.
   */
  protected *admitRow(sql: Sql, item: Item, key: JournalKey, opts: PlanOptions): Step<Admitted> {
    const batch = this.requireBatch();
    if (this.backend.plans.admissionLock) yield* sql.run(this.backend.plans.admissionLock, [this.outDir]);
    const { active, row, decision: own } = yield* this.decideRow(sql, item, key, opts, true);
    const decision = twinWanted(own, opts) ? yield* this.withTwin(sql, item, key, opts, own, row) : own;
    // Another input with the same content is being worked on: nothing is written until it ended.
    if (decision.action === 'wait') {
      const here = this.inFlightHere().has(decision.sameContent?.id ?? -1);
      return { id: -1, decision: this.waiting(decision, here) };
    }
    const w = rowWrites(active, row, decision);
    let id: number;
    let next: Item;
    if (w.kind === 'insert') {
      if (w.supersede !== null) yield* this.items.supersede(sql, w.supersede);
      next = { ...w.item, place: yield* this.items.freePlace(sql, item.input) };
      id = yield* this.items.insert(sql, next, key, batch.id);
    } else {
      ({ id, item: next } = w);
      let write = w.write;
      const place = row ? yield* this.items.placeOf(sql, row, true) : next.place;
      if (place !== next.place) {
        next = { ...next, place };
        write ??= 'update';
      }
      if (w.supersede !== null) yield* this.items.supersede(sql, w.supersede);
      if (w.reactivate) yield* this.items.reactivate(sql, id);
      if (write) yield* this.items.write(sql, id, next, write === 'fresh' ? null : row, batch.id);
    }
    yield* this.items.claim(sql, id);
    this.admitting.add(id);
    const replaced = w.supersede !== null && active?.id === w.supersede ? { replaced: active } : {};
    return { id, decision: decisionOf(decision, next), ...replaced };
  }

  /**
   * The decision for a file another input's work of the same key may stand in for (same-content.ts):
   * that work reused, its generation adopted, its failure shared, or a wait for it; for a chain, the
   * steps done for the same bytes taken (step-work.ts); else `own`.
   */
  private *withTwin(
    sql: Sql,
    item: Item,
    key: JournalKey,
    opts: PlanOptions,
    own: RowDecision,
    ownRow: JournalRow | null,
  ): Step<RowDecision> {
    const twins = yield* this.items.twins(sql, rowInputOf(item), key);
    const batchOnly = opts.force ? (this.batch?.id ?? -1) : null; // --force: this batch's work only
    const boundIds = this.inFlightHere();
    const ctx: TwinContext = {
      size: item.size,
      boundHere: (id) => boundIds.has(id),
      shared: this.backend.plans.claim !== null,
      now: this.now(),
      outputsComplete: (row) => checkRowOutputs(this.outDir, row).complete,
      retryFailed: opts.retryFailed ?? false,
      resubmitUnknown: opts.resubmitUnknown ?? false,
      waitedOn: opts.waitedOn ?? null,
      batchOnly,
      goneGenerations: goneGenerationsOf(ownRow?.item ?? item),
    };
    const choice = twinChoice(twins, ctx);
    // A file new to the journal taking the work of one no longer on disk — whole (reused, adopted) or
    // a chain's steps — is that file renamed; a file with a row of its own never is.
    const renamed = (row: { input: string; item: Item }) =>
      ownRow === null && row.input !== rowInputOf(item) && twinGone(row);
    if (choice && !this.keepsOwnFailure(own, choice)) {
      const taken = choice.kind === 'reuse' || choice.kind === 'adopt';
      // The twin, or the latest file with the same work gone since (a copy of it is still on disk).
      const from = taken ? ([choice.twin, ...twins].find(renamed) ?? null) : null;
      return sameContentDecision(own, choice, item, from);
    }
    // A chain's steps done for the same bytes (by a twin, or under another recipe) are taken (step-work.ts).
    if (own.action !== 'fresh' || !isChain(own.item)) return own;
    const rows = [...twins, ...(yield* this.items.sameBytes(sql, key))].filter(
      (r) => r.item.size === item.size && (batchOnly === null || r.batchId === batchOnly),
    );
    return doneStepsDecision(
      own,
      rows,
      (row, step) => stepFilesOnDisk(this.outDir, row, step),
      (row) => !this.batch || leftAlone(row, ctx), // a dry run waits for nothing
      renamed,
    );
  }

  /**
   * True when a file reported failed in an earlier run for a failure of its own keeps it: a copy's work
   * stands for it, never a copy's failure (a failure it shared — its journal note names the copy —
   * follows the copy's, as it changes).
   */
  private keepsOwnFailure(own: RowDecision, choice: { kind: string }): boolean {
    return own.action === 'done' && choice.kind === 'fail' && own.item.journal?.sameAs === undefined;
  }

  /** The rows in flight in this session: bound, or being admitted. */
  private inFlightHere(): Set<number> {
    return new Set([...this.bound.values(), ...this.admitting]);
  }

  /**
   * A `wait` decision told to the runner: `settled` resolves once the row waited for is saved finished
   * here or unbound (or the store closes); a row of another process (not `here`) is looked at again
   * after TWIN_POLL_MS, one in flight here after TWIN_HERE_MS at the latest.
   */
  private waiting(decision: RowDecision, here: boolean): StoreDecision {
    const id = decision.sameContent?.id ?? -1;
    const settled = (signal?: AbortSignal): Promise<void> =>
      this.rowWaiters.wait(id, here ? TWIN_HERE_MS : TWIN_POLL_MS, signal);
    return { ...decisionOf(decision, decision.item), settled };
  }

  /** Binds the input of an admitted file to its row, for save (not a `wait`: nothing was admitted); the decision. */
  protected bind(input: string, admitted: Admitted): StoreDecision {
    this.admitting.delete(admitted.id);
    if (admitted.decision.action !== 'wait') this.bound.set(input, admitted.id);
    return admitted.decision;
  }

  /**
   * keyOf, then the decision in one transaction (admitRow): what the runner calls for each planned
   * file. The item of a decision to go on (fresh or resume) carries the content hash it was keyed by
   * (Item.contentHash): what is sent of it later must hash to it. A final one (done, fail) is left as
   * it was, so that a restart over finished files writes nothing for them.
   *
   * @example const d = await store.admit(item, recipe, { resubmitUnknown: flags.resubmitUnknown });
   */
  async admit(
    item: Item,
    recipe: RecipeFiles,
    opts: PlanOptions & { signal?: AbortSignal } = {},
  ): Promise<StoreDecision> {
    this.assertWritable();
    this.requireBatch();
    const key = await this.keyOf(item, recipe.references, opts.signal);
    // Another file of this session works on the same key: wait for it first, no transaction needed.
    const holder = opts.redoSameContent ? undefined : this.keysHere.holder(key, rowInputOf(item));
    if (holder) {
      const reason = SAME_CONTENT_TEXTS.waiting(holder.input);
      return this.waiting({ action: 'wait', item, reason, supersede: false, sameContent: holder }, true);
    }
    const admitted = await this.backend.transaction(`admitting ${item.input}`, (sql) =>
      this.admitRow(sql, item, key, opts),
    );
    const leftBehind = admitted.replaced && (await this.takeUpLeft(admitted.replaced, true));
    const decision = this.bind(item.input, admitted);
    if (leftBehind) decision.leftBehind = leftBehind;
    if (decision.action === 'fresh' || decision.action === 'resume') {
      const at = { id: admitted.id, input: rowInputOf(item), place: itemPlace(decision.item) };
      this.keysHere.add(key, { ...at, item: decision.item });
    }
    if (decision.action !== 'fresh' && decision.action !== 'resume' && decision.action !== 'reuse')
      return decision;
    return { ...decision, item: { ...decision.item, contentHash: key.contentHash } };
  }

  /**
   * What admit would decide for a planned file, writing nothing: no row is made or changed, the input
   * is not bound, no hash is cached, and no batch is needed (`service` stands for the batch's, as part
   * of the recipe hash). For a dry run; safe on a store opened without the lock. The item of the
   * decision carries the place the file would go to.
   *
   * @example const d = await store.preview(item, recipe, { service: 'http://127.0.0.1:4010' });
   */
  async preview(
    item: Item,
    recipe: RecipeFiles,
    opts: PlanOptions & { service: string; formerServices?: readonly string[]; signal?: AbortSignal },
  ): Promise<StoreDecision> {
    this.assertOpen();
    const readOnly: HashCache = { cachedHash: (p, id) => this.cachedHash(p, id), saveHash: async () => {} };
    const hash = (path: string) => hashWithCache(readOnly, path, opts.signal);
    const key = await keyWith(item, recipe.references, opts.service, hash, opts.formerServices);
    return this.backend.read(
      `previewing ${item.input}`,
      function* (this: StoreEngine, sql: Sql) {
        const { row, decision: own } = yield* this.decideRow(sql, item, key, opts, false);
        const mayReuse = twinWanted(own, opts);
        const decision = mayReuse ? yield* this.withTwin(sql, item, key, opts, own, row) : own;
        const place =
          !row || decision.supersede
            ? yield* this.items.freePlace(sql, item.input)
            : yield* this.items.placeOf(sql, row, false);
        const work = { id: workId(key), mayReuse, ...(key.stepWork ? { steps: key.stepWork } : {}) };
        return { ...decisionOf(decision, { ...decision.item, place }), work };
      }.bind(this),
    );
  }

  /**
   * The place a file the store does not admit (skipped, or failed before it was planned) writes its
   * result.json in: the place a new row of `input` would get now, so it never lands in a folder holding
   * the service's work for another version of the file. The place is then taken for every other input
   * for the session (GivenPlaces); `key` is the input's inputKey (raw-names.ts), its path by default.
   *
   * @example await store.placeFor('scan.png') // 'scan-1.png' while scan.png/ holds a finished generation
   */
  async placeFor(input: string, key = input): Promise<string> {
    this.assertOpen();
    return this.backend.read(`choosing the place of ${input}`, (sql) =>
      this.items.givePlace(sql, input, key),
    );
  }

  // ---- saving ---------------------------------------------------------------------------------

  /**
   * Records the item's new state; durable when it resolves (see README.md, "Items"). An item saved as
   * `discovered` or `sniffed` is the file looked at again: the input is unbound until it is admitted
   * again. An item saved finished (unbindsOnSave) releases its binding (and its row's claim): its row
   * is final; saved again all the same, it goes to its input's active row when that row holds the same
   * work. An item never admitted is ignored while it holds nothing the service did, and noted when
   * `stopped` and its input has no row.
   *
   * @throws Error when an unadmitted item holds service work (a wiring error: it would be lost)
   */
  async save(item: Item): Promise<void> {
    this.assertWritable();
    const input = this.bindingOf(item);
    if (item.state === 'discovered' || item.state === 'sniffed') this.release(input);
    const last = unbindsOnSave(item);
    const id = this.bound.get(input) ?? (last ? await this.finishedRowOf(item) : undefined);
    if (id === undefined) {
      if (holdsServiceWork(item)) throw new Error(JOURNAL_TEXTS.notPlanned(item.input, item.state));
      await this.noteUnadmitted(item);
      return;
    }
    if (last) this.bound.delete(input);
    const batchId = this.batch?.id ?? null;
    try {
      await this.backend.write(
        `recording ${item.input}`,
        (sql) => this.items.save(sql, id, item, batchId),
        id,
      );
    } finally {
      if (last && this.bound.get(input) !== id) this.items.release(id);
    }
    if (last) this.rowEnded(id);
  }

  /**
   * The key `item` is bound to its row by: its input (rowInputOf), or its input and place for an
   * earlier version taken up by vanishedInFlight (left-in-flight.ts's earlierBinding).
   */
  private bindingOf(item: Item): string {
    const input = rowInputOf(item);
    const earlier = earlierBinding(input, itemPlace(item));
    return this.bound.has(earlier) ? earlier : input;
  }

  /** Row `id` ended here: who waits for it is told (same-content.ts), its key is free. */
  private rowEnded(id: number): void {
    this.keysHere.ended(id);
    this.rowWaiters.ended(id);
  }

  /** Unbinds `input` from its row (and drops the row's claim). */
  private release(input: string): void {
    const id = this.bound.get(input);
    if (id === undefined) return;
    this.bound.delete(input);
    this.items.release(id);
    this.rowEnded(id);
  }

  /** The row `input` is bound to for save, or undefined. */
  protected boundRow(input: string): number | undefined {
    return this.bound.get(input);
  }

  /** How many inputs are bound to a row (the items this session may still save): bounded by those in flight. */
  boundCount(): number {
    return this.bound.size;
  }

  /** TEST ONLY: the inputs bound to a row for save (the items this session may still save). */
  testOnlyBoundInputs(): string[] {
    return [...this.bound.keys()];
  }

  /**
   * The active row of a finished item saved again after its input was unbound (see save): the row
   * holding the same work (the current step's request and generation ids), else undefined.
   */
  private async finishedRowOf(item: Item): Promise<number | undefined> {
    if (!holdsServiceWork(item)) return undefined;
    const row = await this.backend.read(`reading ${item.input}`, (sql) => this.items.active(sql, item.input));
    const [was, now] = [row ? currentStep(row.item) : undefined, currentStep(item)];
    if (!row || was?.requestId !== now?.requestId || was?.generationId !== now?.generationId)
      return undefined;
    return row.id;
  }

  /**
   * The row of an ended file never admitted (admission.ts's unadmittedWrites): stopped, when its input
   * has none (the next run continues it); refused before it was planned (sniff, plan, its name), or
   * skipped, as its input's row at its place (the out dir's history tells it). Such a row has no key
   * (NOTED_KEY) until the file is admitted; a file whose name is not valid UTF-8 has its row by its
   * bytes (rowInputOf).
   */
  private async noteUnadmitted(item: Item): Promise<void> {
    const batch = this.batch;
    if (!batch || (item.state !== 'stopped' && !refusedBeforeAdmission(item))) return;
    const input = rowInputOf(item);
    // A watch stopped with thousands of finished files queued: most have a row, nothing to write.
    if (item.state === 'stopped') {
      if (await this.backend.read(`reading ${item.input}`, (sql) => this.items.active(sql, input))) return;
    }
    await this.backend.atomicWrite(`noting ${item.input} ${item.state}`, (sql) =>
      this.noteRow(sql, item, input, batch.id),
    );
  }

  private *noteRow(sql: Sql, item: Item, input: string, batchId: number): Step<void> {
    if (this.backend.plans.admissionLock) yield* sql.run(this.backend.plans.admissionLock, [this.outDir]);
    const active = yield* this.items.active(sql, input);
    const w = unadmittedWrites(item, active);
    if (w?.kind === 'update') {
      if (active?.contentHash !== UNHASHED) yield* this.items.setKey(sql, w.id, NOTED_KEY);
      yield* this.items.save(sql, w.id, item, batchId);
    } else if (w?.kind === 'insert') {
      if (w.supersede !== null) yield* this.items.supersede(sql, w.supersede);
      const noted: Item = {
        ...item,
        place: item.place ?? (yield* this.items.freePlace(sql, placeInput(item), input)),
      };
      yield* this.items.insert(sql, noted, NOTED_KEY, batchId);
    }
  }

  /** save for the moment the create is about to be sent (the item holds its new request id). */
  async recordIntent(item: Item): Promise<void> {
    if (!currentStep(item)?.requestId) {
      throw new Error(`${this.backend.noun}: recordIntent(${item.input}) without a request id`);
    }
    await this.save(item);
  }

  /** save for the moment the 201 arrived (the item holds its generation id). */
  async recordSubmitted(item: Item): Promise<void> {
    if (!currentStep(item)?.generationId)
      throw new Error(`${this.backend.noun}: recordSubmitted(${item.input}) without a generation id`);
    await this.save(item);
  }

  // ---- reading --------------------------------------------------------------------------------

  /**
   * The inputs of this out dir whose work is finished — active row `reported`, or `failed` at the
   * service — with the size and mtime their file had then.
   */
  async finishedFiles(): Promise<Map<string, FinishedFile>> {
    this.assertOpen();
    return this.backend.read('reading the finished files', (sql) => this.items.finished(sql));
  }

  /** The out dir's finished inputs as the reports tell them (finished-items.ts). */
  async finishedItems(): Promise<Item[]> {
    this.assertOpen();
    return finishedItemsOf(
      await this.backend.read('reading the finished files', (sql) => this.items.finishedAtPlaces(sql)),
    );
  }

  /**
   * Work the service did (or does) that no file of this session stands for, taken up (left-in-flight.ts):
   * call after discovery; each is resumed, so a paid generation is collected although its input is gone.
   *
   * @param skip - inputs to leave alone although unadmitted (see README.md)
   */
  async vanishedInFlight(skip?: (input: string) => boolean): Promise<StoreDecision[]> {
    this.requireBatch();
    this.assertWritable();
    const out: StoreDecision[] = [];
    for (const phase of VANISHED_TAKEN_PHASES) {
      const rows = await this.backend.read('reading the work in flight', (sql) =>
        this.items.leftInPhase(sql, phase),
      );
      const bound = { inputs: new Set(this.bound.keys()), rows: this.inFlightHere() };
      for (const { row, earlier } of leftRows(rows, bound, skip)) {
        const decision = await this.takeUpLeft(row, earlier);
        if (decision) out.push(decision);
      }
    }
    return out;
  }

  /**
   * A row left in flight resumed to be collected (left-in-flight.ts): written and claimed, bound for
   * save (an earlier version by its input and place), its decision; null when there is nothing to
   * collect or it is in flight here already.
   */
  private async takeUpLeft(row: JournalRow, earlier: boolean): Promise<StoreDecision | null> {
    const batch = this.requireBatch();
    if (!VANISHED_TAKEN_PHASES.some((p) => p === row.phase) || this.inFlightHere().has(row.id)) return null;
    const outputs = row.phase === 'downloaded' ? checkRowOutputs(this.outDir, row) : null;
    const decision = takeUp({ row, earlier }, this.now(), outputs);
    if (!decision) return null;
    await this.backend.transaction(
      `resuming ${row.input}`,
      function* (this: StoreEngine, sql: Sql) {
        yield* this.items.write(sql, row.id, decision.item, row, batch.id);
        yield* this.items.claim(sql, row.id);
      }.bind(this),
    );
    this.bound.set(earlier ? earlierBinding(row.input, itemPlace(decision.item)) : row.input, row.id);
    return decision;
  }

  // ---- shared references ----------------------------------------------------------------------

  /**
   * The file_id of an earlier upload of shared reference `name` with these bytes for the current
   * batch's service, when recent enough to reuse; else null.
   */
  async reference(name: string, contentHash: string): Promise<string | null> {
    this.assertOpen();
    const notBefore = this.now() - UPLOAD_REUSE_MAX_AGE_MS;
    const key: [string, string, string] = [this.batch?.service ?? '', name, contentHash];
    return this.backend.read('reading a shared reference', (sql) =>
      tables.reference(sql, this.tables, key, notBefore),
    );
  }

  /** Records the upload of shared reference `name` (durable on resolve). */
  async saveReference(name: string, contentHash: string, fileId: string): Promise<void> {
    this.assertWritable();
    const params = [this.batch?.service ?? '', name, contentHash, fileId, this.now(), this.batch?.id ?? null];
    await this.backend.write('recording a shared reference', (sql) =>
      run(sql, this.tables.saveReference, params),
    );
  }

  /** Forgets a recorded reference upload (the service no longer has the file). */
  async forgetReference(name: string, contentHash: string): Promise<void> {
    this.assertWritable();
    const params = [this.batch?.service ?? '', name, contentHash];
    await this.backend.write('forgetting a shared reference', (sql) =>
      run(sql, this.tables.forgetReference, params),
    );
  }

  // ---- quota state and job durations ------------------------------------------------------------

  /** The quota state recorded for `service` and the key of `keyFingerprint`, or null. */
  async quotaState(service: string, keyFingerprint: string): Promise<QuotaState | null> {
    this.assertOpen();
    return this.backend.read('reading the quota state', (sql) =>
      tables.quotaState(sql, this.tables, service, keyFingerprint),
    );
  }

  /** Records the quota state of `service` and the key of `keyFingerprint` (durable on resolve). */
  async saveQuotaState(service: string, keyFingerprint: string, state: QuotaStateInput): Promise<void> {
    this.assertWritable();
    const now = this.now();
    await this.backend.write('recording the quota state', (sql) =>
      tables.saveQuotaState(sql, this.tables, [service, keyFingerprint], state, now),
    );
  }

  /** The latest job duration samples recorded for `service`, by kind, oldest first. */
  async jobDurations(service: string): Promise<Map<string, JobDurationSample[]>> {
    this.assertOpen();
    return this.backend.read('reading job durations', (sql) =>
      tables.jobDurations(sql, this.tables, service),
    );
  }

  /** Records one ended job's sample of `kind` at `service` (durable on resolve). */
  async recordJobDuration(service: string, kind: string, sample: JobDurationSample): Promise<void> {
    this.assertWritable();
    const now = this.now();
    await this.backend.write('recording a job duration', (sql) =>
      tables.addJobDuration(sql, this.tables, [service, kind], sample, now),
    );
  }

  // ---- the out dir's lock, closing --------------------------------------------------------------

  /** Takes the out dir's lock; nothing when this store holds it already. */
  async acquireLock(): Promise<void> {
    this.assertOpen();
    await this.backend.acquireLock();
  }

  /** Gives the out dir's lock back (nothing when not held). */
  async releaseLock(): Promise<void> {
    this.assertOpen();
    await this.backend.releaseLock();
  }

  /** Who holds the out dir, as this store records it. */
  async lockHolder(): Promise<LockHolder | null> {
    this.assertOpen();
    return this.backend.read('reading the lock holder', (sql) =>
      tables.lockHolder(sql, this.tables, this.outDir),
    );
  }

  /** Waits for the writes asked before it, releases the out dir, closes the database (again: nothing). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.rowWaiters.endAll();
    await this.backend.close();
  }
}

/** Runs an insert answering the new row's `id`. */
function* insertedId(sql: Sql, text: string, params: readonly unknown[]): Step<number> {
  const [row] = yield* sql.all<{ id: number }>(text, params);
  return Number(row!.id);
}

/** Runs one statement, as a Step answering nothing. */
function* run(sql: Sql, text: string, params: readonly unknown[]): Step<void> {
  yield* sql.run(text, params);
}
