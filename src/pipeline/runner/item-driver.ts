/**
 * The item driver: takes one item from its state to a final one, step by step as stage-list.ts orders
 * them, each step in its pool; keeps, journals and announces every transition; applies each stage's
 * policy (step-policy.ts); holds the item's job slot from submit until its job ends; starts an item
 * whose file changed since its check again (or ends it, per `inputChanged`).
 */
import { stat } from 'node:fs/promises';
import { type GenpipeClient, sleep } from '../../client/index.ts';
import {
  chainWords,
  isChain,
  laneRecordState,
  laneStartState,
  mergeStep,
  nextOrEnd,
  runnableSteps,
  STEP_MOMENTS,
  settleChain,
  stepMomentWords,
} from '../chain.ts';
import type { PipelineEvent } from '../events.ts';
import { INPUT_CHANGED_TEXTS, InputChangedError } from '../input-changed.ts';
import { currentStep, FINAL_ITEM_STATES, type Item, newItem, type StageName } from '../item.ts';
import { unprocessedReason } from '../report/index.ts';
import { writeResultJson } from '../report/result-json.ts';
import type { RunContext } from '../run-context.ts';
import { batchStopReason, isAbort, outDirWriteError } from '../runner-errors.ts';
import { failItem } from '../stage.ts';
import { reachedBy, type StageStep, saidOf, stepFor } from '../stage-list.ts';
import { ItemTakenOverError } from '../store/item-taken-over.ts';
import type { BatchItems } from './batch-items.ts';
import type { ResolvedRun } from './options.ts';
import type { Pools } from './pools.ts';
import type { Release } from './slots.ts';
import type { DriveState, StepEnv } from './step-policy.ts';
import { JournalWriteError, type StopControl } from './stop-control.ts';

/** The stages a chain's step runs in a lane of its own. */
const LANE_STAGES: ReadonlySet<StageName> = new Set(['upload', 'submit', 'wait', 'download']);

/** What the lanes of one chain item share (see ItemDriver.driveLanes). */
interface Lane {
  /** The item as every lane has left it so far. */
  get(): Item;
  /** Takes step `name` from a lane's item; the shared item after. */
  put(it: Item, name: string): Item;
  /** A lane was stopped: no new lane starts, and the item ends so. */
  stop(it: Item): void;
}

/** One item's job slot (--concurrency): taken for submit, or for the wait of a resumed generation. */
class JobSlot {
  private release: Release | null = null;

  get held(): boolean {
    return this.release !== null;
  }

  take(release: Release): void {
    this.release = release;
  }

  free(): void {
    this.release?.();
    this.release = null;
  }
}

export class ItemDriver implements StepEnv {
  readonly client: GenpipeClient;
  readonly signal: AbortSignal;
  /** Entries whose item another worker took over (a write refused): their drive ends, untouched. */
  private readonly takenOver = new Map<number, ItemTakenOverError>();

  constructor(
    readonly run: ResolvedRun,
    private readonly ctx: RunContext,
    private readonly pools: Pools,
    private readonly stops: StopControl,
    private readonly items: BatchItems,
    private readonly emit: (event: PipelineEvent) => void,
  ) {
    this.client = run.options.client;
    this.signal = stops.abort.signal;
  }

  get stopped(): boolean {
    return this.stops.stop !== null;
  }

  local<T>(fn: () => Promise<T>): Promise<T> {
    return this.pools.local(fn);
  }

  persist(item: Item): Promise<void> {
    return this.ctx.persist(item);
  }

  journalFailed(err: unknown): void {
    this.stops.journalFailed(err);
  }

  /** The item ended not processed, with the batch's stop reason. */
  stoppedItem(item: Item): Item {
    const stop = this.stops.stop;
    const base = unprocessedReason(stop ? { reason: stop.reason, by: stop.end } : null);
    // A watch stopped as it normally ends said already that the next session takes the file up.
    const later =
      this.run.options.admit && stop?.end === undefined ? '; the next run continues it from the journal' : '';
    const generationId = currentStep(item)?.generationId;
    const reason =
      generationId && item.state !== 'failed'
        ? `${base}; generation ${generationId} was submitted, but its outcome was not collected${later}`
        : base;
    return { ...item, state: 'stopped', reason };
  }

  /** A final item admit never decided on, with the place `placeFor` gives it. */
  async placed(item: Item): Promise<Item> {
    const placeFor = this.run.options.placeFor;
    if (item.place !== undefined || !placeFor || !FINAL_ITEM_STATES.includes(item.state)) return item;
    try {
      return { ...item, place: await placeFor(item) };
    } catch {
      return item; // the journal failed: the input path, as without one
    }
  }

  /** Keeps, journals and announces an item's transition (`reason` overrides the item's in the event). */
  async record(
    entry: number,
    item: Item,
    stage: StageName | null,
    reason = item.reason,
    stepEvent?: 'started' | 'done' | 'failed',
  ): Promise<void> {
    this.items.keep(entry, item);
    try {
      await this.ctx.persist(item);
    } catch (err) {
      // journalFailed stopped the batch; the item is still reported. Taken over: the drive ends.
      if (err instanceof ItemTakenOverError) this.takenOver.set(entry, err);
    }
    // A failed item's stage is the one that failed it, as in report.json (an item the journal fails at
    // admission failed at `submit`, not at the plan stage it came from). An item the journal reports as
    // an earlier run left it ran no stage in this one.
    const fromJournal = item.journal?.action === 'done';
    const at = fromJournal ? null : item.state === 'failed' && item.failedAt ? item.failedAt : stage;
    const told = item.state === 'submitted' || item.state === 'failed' ? currentStep(item) : undefined;
    this.emit({
      type: 'item_state',
      at: Date.now(),
      input: item.input,
      ...(item.place !== undefined ? { place: item.place } : {}),
      ...(item.step !== undefined ? { step: item.step } : {}),
      ...(stepEvent !== undefined ? { step_event: stepEvent } : {}),
      state: item.state,
      stage: at,
      reason,
      ...(told?.generationId ? { generation_id: told.generationId } : {}),
      ...(told?.requestId ? { request_id: told.requestId } : {}),
      ...(fromJournal ? { from_journal: true as const } : {}),
    });
  }

  /** Drives the item of `entry` from `first` to a final state, then hands it to onItemDone; the final item. */
  async drive(entry: number, first: Item): Promise<Item> {
    if (first.state === 'failed' && first.steps.length === 0 && first.sniff === null) {
      return this.foundFailed(entry, first);
    }
    const delegate = this.run.options.delegate;
    if (delegate) {
      const final = await this.delegated(entry, first, delegate);
      await this.done(entry, final);
      return final;
    }
    let item = first;
    const job = new JobSlot();
    const state: DriveState = { resubmits: new Map() };
    /** Times the item's file was found changed since its check (see afterChange). */
    let changes = 0;
    try {
      for (let step = stepFor(item.state); step; step = stepFor(item.state)) {
        const lost = this.takenOver.get(entry);
        if (lost) {
          item = { ...item, state: 'stopped', reason: lost.message };
          break;
        }
        if (isChain(item) && LANE_STAGES.has(step.name)) {
          try {
            item = await this.placed(await this.driveLanes(entry, item, state));
          } catch (err) {
            if (!(err instanceof InputChangedError)) throw err;
            item = await this.afterChange(item, step, ++changes);
            const why = item.state === 'discovered' ? INPUT_CHANGED_TEXTS.again : item.reason;
            await this.record(entry, item, step.name, why);
            continue;
          }
          if (item.state !== 'downloaded') await this.record(entry, item, null, item.reason);
          continue;
        }
        let next: Item;
        try {
          next = await this.runInPool(step, item, job);
        } catch (err) {
          if (!(err instanceof InputChangedError)) throw err;
          job.free(); // nothing was created from the changed bytes
          item = await this.afterChange(item, step, ++changes);
          await this.record(
            entry,
            item,
            step.name,
            item.state === 'discovered' ? INPUT_CHANGED_TEXTS.again : item.reason,
          );
          continue;
        }
        if (next.state !== 'submitted') job.free();
        const settled = (await step.policy?.after?.(next, this, state)) ?? { item: next };
        // A chain item goes on to its next step (or ends) once a step is downloaded or failed.
        const chained = settleChain(settled.item);
        item = await this.placed(chained);
        // A policy's words, else the chain's, else the item's reason, else what the stage did when its
        // state's name would not say it (a prompt file is not "uploaded"). A stopped item says why it
        // stopped, whatever stopped it.
        const reason =
          item.state === 'stopped'
            ? item.reason
            : settled.reason !== undefined
              ? settled.reason
              : (chainWords(settled.item, chained) ?? item.reason ?? saidOf(step, item));
        await this.record(entry, item, item.state === 'stopped' ? null : step.name, reason);
        if (settled.pauseMs) await sleep(settled.pauseMs, this.stops.stopping.signal).catch(() => {});
      }
      if (item.state === 'failed' || item.state === 'skipped') await this.writeResult(item);
    } finally {
      job.free();
      this.takenOver.delete(entry);
    }
    await this.done(entry, item);
    return item;
  }

  /**
   * An item that came failed, before any stage (discovery: a name that is not valid UTF-8, see
   * raw-names.ts): recorded and reported as it is, placed, with its result.json. Nothing reads its
   * file, here or elsewhere (no delegate); onItemDone (watch --on-done move) files it away by its bytes.
   */
  private async foundFailed(entry: number, first: Item): Promise<Item> {
    const item = await this.placed(first);
    await this.record(entry, item, item.failedAt);
    await this.writeResult(item);
    await this.done(entry, item);
    return item;
  }

  /** The result.json of an item that failed or was skipped; an out dir that refuses it stops the batch. */
  private async writeResult(item: Item): Promise<void> {
    try {
      await writeResultJson(item, this.run.outDir, { redact: this.run.redact });
    } catch (err) {
      const refused = outDirWriteError(err, this.run.outDir);
      if (refused) this.stops.outDirFailed(refused);
    }
  }

  /**
   * An item whose stages run elsewhere (RunOptions.delegate): each state it is told of is recorded as
   * the stages' own would be, and so is the final one.
   */
  private async delegated(
    entry: number,
    first: Item,
    delegate: NonNullable<ResolvedRun['options']['delegate']>,
  ): Promise<Item> {
    let told = Promise.resolve();
    const tell = (it: Item) => {
      // No stage: none ran here (the metrics count this process's own creates only).
      told = told.then(() => this.record(entry, it, null, reachedBy(it).said));
    };
    let final: Item;
    try {
      final = await delegate(first, tell, this.stops.stopping.signal);
    } catch (err) {
      final = { ...first, state: 'failed', reason: err instanceof Error ? err.message : String(err) };
    }
    await told;
    await this.record(entry, final, final.state === 'failed' ? final.failedAt : null);
    return final;
  }

  /** onItemDone (watch --on-done): a moved input's new path is what the reports show. */
  private async done(entry: number, item: Item): Promise<void> {
    const onItemDone = this.run.options.onItemDone;
    if (!onItemDone || item.state === 'stopped') return;
    try {
      const moved = await onItemDone(item);
      if (moved && this.items.holds(entry)) this.items.keep(entry, moved);
    } catch {
      // the hook reports its own problems; the item's result stands
    }
  }

  /**
   * A chain item's steps, each that can run in a lane of its own (siblings at once, each with its own
   * job slot), until none can: then the item at its end (chain.ts nextOrEnd), or stopped. Every write of
   * the journal — the runner's and a stage's own (submit's intent) — goes through the item all lanes
   * share, so no lane writes another's step as it was when it began.
   */
  private async driveLanes(entry: number, first: Item, drive: DriveState): Promise<Item> {
    let shared = first;
    const lanes = new Map<string, Promise<void>>();
    let changed: unknown = null;
    let stopped: Item | null = null;
    const lane: Lane = {
      get: () => shared,
      put: (it, name) => {
        shared = mergeStep(shared, it, name);
        return shared;
      },
      stop: (it) => {
        stopped ??= it;
      },
    };
    for (;;) {
      if (stopped === null && changed === null) {
        for (const step of runnableSteps(shared.steps)) {
          if (lanes.has(step.name)) continue;
          const start = step.name === first.step ? first.state : laneStartState(step);
          const task = this.runLane(entry, step.name, start, lane, drive)
            .catch((err: unknown) => {
              changed ??= err;
            })
            .finally(() => lanes.delete(step.name));
          lanes.set(step.name, task);
        }
      }
      if (lanes.size === 0) break;
      await Promise.race(lanes.values());
    }
    if (changed !== null) throw changed;
    // Stopped: the item as every lane left it (a lane that went on after the stop, such as a wait,
    // keeps what it learned), at the step that stopped first.
    const stop = stopped as Item | null;
    return stop ? { ...shared, state: 'stopped', step: stop.step, reason: stop.reason } : nextOrEnd(shared);
  }

  /** One step of a chain item through upload, submit, wait and download (see driveLanes). */
  private async runLane(entry: number, name: string, start: Item['state'], lane: Lane, drive: DriveState) {
    const job = new JobSlot();
    const view = (it: Item, state: Item['state']): Item => ({ ...it, step: name, state });
    const persist = (it: Item) => this.ctx.persist(view(lane.put(it, name), laneRecordState(it.state)));
    const ctx: RunContext = { ...this.ctx, persist };
    const env: StepEnv = Object.assign(Object.create(this) as ItemDriver, { persist });
    let state = start;
    try {
      for (let step = stepFor(state); step && LANE_STAGES.has(step.name); step = stepFor(state)) {
        const next = await this.runInPool(step, view(lane.get(), state), job, ctx);
        if (next.state !== 'submitted') job.free();
        const settled = (await step.policy?.after?.(next, env, drive)) ?? { item: next };
        state = settled.item.state;
        // A stopped lane's item is its step as it began: the shared step keeps what was journaled since
        // (a create's request id), so the next run knows the create may have been sent.
        const shared = state === 'stopped' ? lane.get() : lane.put(settled.item, name);
        if (state === 'stopped') lane.stop({ ...view(shared, 'stopped'), reason: settled.item.reason });
        const moment = settled.reason === undefined ? STEP_MOMENTS[state] : undefined;
        const said =
          settled.reason !== undefined
            ? settled.reason
            : moment !== undefined
              ? stepMomentWords(name, moment, settled.item.reason)
              : (settled.item.reason ?? saidOf(step, settled.item));
        await this.record(entry, view(shared, laneRecordState(state)), step.name, said, moment);
        if (state === 'stopped' || state === 'failed' || state === 'downloaded') return;
        if (settled.pauseMs) await sleep(settled.pauseMs, this.stops.stopping.signal).catch(() => {});
      }
    } finally {
      job.free();
    }
  }

  /**
   * Runs `step` on the item in the step's pool: `jobs` takes a job slot first (held until the job
   * ends), `poll` takes one for a generation resumed from the journal, a pool name runs it in that pool.
   */
  private async runInPool(step: StageStep, item: Item, job: JobSlot, ctx = this.ctx): Promise<Item> {
    if (this.stopped && !step.whileStopping) return this.stoppedItem(item);
    const instead = step.policy?.before?.(item, this);
    if (instead) return instead;
    if (step.pool === 'jobs') {
      try {
        job.take(await this.pools.jobs.acquire(this.stops.stopping.signal));
        return await this.runStep(step, item, ctx);
      } catch (err) {
        if (err instanceof InputChangedError) throw err;
        return this.stopped ? this.stoppedItem(item) : this.afterThrow(item, step, err);
      }
    }
    if (step.pool === 'poll') {
      // A generation resumed from the journal counts against --concurrency like any other; no slot is
      // taken once the batch stops (its wait still runs).
      if (!job.held && !this.stopped) {
        const release = await this.pools.jobs.acquire(this.stops.stopping.signal).catch(() => null);
        if (release) job.take(release);
      }
      return this.runStep(step, item, ctx);
    }
    return this.pools.limits[step.pool](() => this.runStep(step, item, ctx));
  }

  /** Runs one stage with its timing; an error that escapes it ends the item (see afterThrow). */
  private async runStep(step: StageStep, item: Item, ctx = this.ctx): Promise<Item> {
    if (this.stopped && !step.whileStopping) return this.stoppedItem(item);
    const started = Date.now();
    const begun: Item = { ...item, timings: { ...item.timings, [step.name]: { started_at: started } } };
    let next: Item;
    try {
      next = await step.run(begun, ctx);
    } catch (err) {
      if (err instanceof InputChangedError) throw err; // drive's to handle
      await step.policy?.onThrow?.(begun, err, this);
      next = this.afterThrow(begun, step, err);
    }
    const timing = { started_at: started, finished_at: Date.now() };
    return { ...next, timings: { ...next.timings, [step.name]: timing } };
  }

  /**
   * The item after `err` escaped a stage: stopped (abort, batch stop, an out dir that refuses writes)
   * or failed (anything else).
   */
  private afterThrow(item: Item, step: StageStep, err: unknown): Item {
    if (err instanceof ItemTakenOverError) return { ...item, state: 'stopped', reason: err.message };
    const stopWhy = batchStopReason(err);
    if (stopWhy !== null) {
      this.stops.trigger(stopWhy, 'service');
      return this.stoppedItem(item);
    }
    const refused = outDirWriteError(err, this.run.outDir);
    if (refused) {
      this.stops.outDirFailed(refused);
      return this.stoppedItem(item);
    }
    if (err instanceof JournalWriteError || isAbort(err, this.signal) || this.signal.aborted) {
      return this.stoppedItem(item);
    }
    const why = err instanceof Error ? err.message : String(err);
    return {
      ...item,
      state: 'failed',
      failedAt: step.name,
      reason: this.run.redact(`internal error: ${why}`),
    };
  }

  /**
   * An item whose file changed since its check (`step` found it: InputChangedError), for the
   * `changes`-th time in this drive: a fresh item of the same path, to be processed again from the
   * start; failed retryably past changedAgainMax; not processed with `inputChanged: 'source'`.
   */
  private async afterChange(item: Item, step: StageStep, changes: number): Promise<Item> {
    if (this.run.options.inputChanged === 'source') {
      return { ...item, state: 'stopped', reason: INPUT_CHANGED_TEXTS.watch };
    }
    if (changes > this.run.changedAgainMax) {
      return failItem(item, step.name, INPUT_CHANGED_TEXTS.tooOften(changes), {
        failure: { kind: INPUT_CHANGED_TEXTS.failureKind, retryable: true },
      });
    }
    const now = await stat(item.absPath).catch(() => null);
    return newItem(item.input, item.absPath, now?.size ?? item.size, now?.mtimeMs ?? item.mtimeMs);
  }
}
