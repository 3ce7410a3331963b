/**
 * The item driver: takes one item from its state to a final one, step by step as stage-list.ts orders
 * them, through one step loop for every rule (`steps`): each step in its pool; every transition kept,
 * journaled and announced, told as transition-words.ts says; each stage's policy applied
 * (step-policy.ts); the job slot held from submit until the job ends; a file changed since its check
 * started again (or ended, per `inputChanged`). The loop moves a track (tracks.ts): the item itself
 * (a single-request rule's item is a chain of one step: its step runs so), or a chain step in a lane
 * of its own.
 */
import { stat } from 'node:fs/promises';
import { sleep } from '../../client/index.ts';
import type { PipelineEvent } from '../events.ts';
import { INPUT_CHANGED_TEXTS, InputChangedError } from '../input-changed.ts';
import {
  currentStep,
  FINAL_ITEM_STATES,
  generationsOf,
  type Item,
  newItem,
  reusedNote,
  type StageName,
  workReused,
} from '../item.ts';
import { unprocessedReason } from '../report/index.ts';
import { writeResultJson } from '../report/result-json.ts';
import type { RunContext } from '../run-context.ts';
import { batchStopReason, isAbort, outDirWriteError } from '../runner-errors.ts';
import { failItem } from '../stage.ts';
import { reachedBy, STAGES, type StageStep } from '../stage-list.ts';
import { ItemTakenOverError } from '../store/item-taken-over.ts';
import { holdsServiceWork } from '../store/resume-decision.ts';
import type { BatchItems } from './batch-items.ts';
import type { ResolvedRun } from './options.ts';
import type { Pools } from './pools.ts';
import type { Release } from './slots.ts';
import type { DriveState, Settled, StepEnv } from './step-policy.ts';
import { JournalWriteError, type StopControl } from './stop-control.ts';
import { driveLanes, itemTrack, type Persist, type Track } from './tracks.ts';
import { transitionTold } from './transition-words.ts';

/**
 * Whether the step after `item`'s transition waits for its journal write (ItemDriver.record): when the
 * item ended, or holds work of the service (an uploaded file, a request id, a generation, outputs).
 */
export function journalAwaited(item: Item): boolean {
  return FINAL_ITEM_STATES.includes(item.state) || holdsServiceWork(item);
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

/**
 * What a pass of the step loop runs its stages with: its job slot, and the stage context and policy env
 * that journal through its track.
 */
interface StepRun {
  job: JobSlot;
  ctx: RunContext;
  env: StepEnv;
}

export class ItemDriver {
  private readonly signal: AbortSignal;
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
    this.signal = stops.abort.signal;
  }

  get stopped(): boolean {
    return this.stops.stop !== null;
  }

  /**
   * Journals `item`: resolves once the write is on disk when the next step needs it (journalAwaited),
   * else at once, the write's failure stopping the batch all the same (the context's persist).
   */
  persist(item: Item): Promise<void> {
    const written = this.ctx.persist(item);
    if (journalAwaited(item)) return written;
    written.catch(() => undefined);
    return Promise.resolve();
  }

  /** The item ended not processed, with the batch's stop reason. */
  stoppedItem(item: Item): Item {
    const stop = this.stops.stop;
    const base = unprocessedReason(stop ? { reason: stop.reason, by: stop.end } : null);
    // A watch stopped as it normally ends said already that the next session takes the file up.
    const later =
      this.run.options.admit && stop?.end === undefined ? '; the next run continues it from the journal' : '';
    const generationId = currentStep(item)?.generationId;
    // A copy stopped before another file's outputs were linked for it: nothing was submitted for it.
    const from = item.journal?.action === 'reuse' ? item.journal.sameAs : undefined;
    const reason =
      from !== undefined
        ? `${base}; the outputs of ${from} (the same content) were not linked yet${later}`
        : generationId && item.state !== 'failed'
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

  /**
   * Keeps, journals and announces an item's transition (`reason` overrides the item's in the event). A
   * file another input's work stood for says so as it ends, whatever its stages said on the way (a
   * progress line per outcome shows only that one).
   *
   * The next step waits for the journal write to be on disk only when the item holds something the
   * service did or ended (journalAwaited): a file sniffed, planned or checked, or a prompt made ready,
   * is found so again from its input after a crash, and the write the next action at the service needs
   * first (submit's request id, journaled before the create is sent) is committed after this one and
   * covers it. Waiting for each of those fsyncs put three or four of them between a batch's start and
   * its first create.
   */
  async record(
    entry: number,
    item: Item,
    stage: StageName | null,
    said = item.reason,
    stepEvent?: 'started' | 'done' | 'failed',
  ): Promise<void> {
    const reason = said ?? reusedNote(item);
    this.items.keep(entry, item);
    const written = this.ctx.persist(item).catch((err: unknown) => {
      // journalFailed stopped the batch; the item is still reported. Taken over: the drive ends.
      if (err instanceof ItemTakenOverError) this.takenOver.set(entry, err);
    });
    if (journalAwaited(item)) await written;
    this.announce(item, stage, reason, stepEvent);
  }

  /** Tells the item as it stands (`reason` its event's), without keeping or journaling it. */
  private announce(
    item: Item,
    stage: StageName | null,
    reason: string | null,
    stepEvent?: 'started' | 'done' | 'failed',
  ): void {
    // A failed item's stage is the one that failed it, as in report.json (an item the journal fails at
    // admission failed at `submit`, not at the plan stage it came from). An item the journal reports as
    // an earlier run left it ran no stage in this one.
    const fromJournal = item.journal?.action === 'done' && item.journal.sameAs === undefined;
    const at = fromJournal ? null : item.state === 'failed' && item.failedAt ? item.failedAt : stage;
    const told = item.state === 'submitted' || item.state === 'failed' ? currentStep(item) : undefined;
    const priced =
      item.steps.length > 0 &&
      (item.state === 'planned' || stepEvent === 'done' || FINAL_ITEM_STATES.includes(item.state));
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
      ...(priced ? { generations: generationsOf(item) } : {}),
      ...(fromJournal ? { from_journal: true as const } : {}),
      ...(workReused(item) ? { reused: true as const } : {}),
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
    const track = itemTrack(
      first,
      (it) => this.ctx.persist(it),
      (it) => this.placed(it),
    );
    let item: Item;
    try {
      await this.steps(entry, track, { resubmits: new Map() });
      item = track.current();
      if (item.state === 'failed' || item.state === 'skipped') await this.writeResult(item);
    } finally {
      this.takenOver.delete(entry);
    }
    await this.done(entry, item);
    return item;
  }

  /**
   * THE step loop, for every rule: moves `track` (tracks.ts: the item itself, or a chain step's lane)
   * stage by stage until its stages are over — each stage in its pool, the job slot freed once its job
   * ends, the stage's policy, the transition kept, journaled and told (transitionTold), the policy's
   * pause. A chain item at the service fans out into a lane per step, each moved by this same loop; a
   * changed input (InputChangedError) starts the item again, from wherever a lane found it.
   */
  private async steps(entry: number, track: Track, drive: DriveState): Promise<void> {
    const run: StepRun = {
      job: new JobSlot(),
      ctx: { ...this.ctx, persist: track.persist },
      env: this.envWith(track.persist),
    };
    /** Times the item's file was found changed since its check (see afterChange). */
    let changes = 0;
    try {
      for (let step = track.next(); step; step = track.next()) {
        const lost = this.takenOver.get(entry);
        if (lost) return track.end(lost.message);
        const fanned = track.fansOut(step);
        let settled: Settled;
        try {
          settled = fanned
            ? { item: await driveLanes(track.current(), track.persist, (l) => this.steps(entry, l, drive)) }
            : await this.settled(step, track.current(), run, drive);
        } catch (err) {
          if (!(err instanceof InputChangedError) || track.lane !== null) throw err;
          run.job.free(); // nothing was created from the changed bytes
          const again = await track.take(await this.afterChange(track.current(), step, ++changes));
          const why = again.state === 'discovered' ? INPUT_CHANGED_TEXTS.again : again.reason;
          await this.record(entry, again, step.name, why);
          continue;
        }
        const recorded = await track.take(settled.item);
        // Each lane told its step's end: a chain item done at the service is told by its report.
        if (fanned && recorded.state === 'downloaded') continue;
        const told = transitionTold(step, settled, track.lane);
        await this.record(entry, recorded, told.stage, told.reason, told.moment);
        if (settled.pauseMs) await sleep(settled.pauseMs, this.stops.stopping.signal).catch(() => {});
      }
    } finally {
      run.job.free();
    }
  }

  /** `step` run on `item` in its pool, the job slot freed unless a job goes on, then the stage's policy. */
  private async settled(step: StageStep, item: Item, run: StepRun, drive: DriveState): Promise<Settled> {
    const next = await this.runInPool(step, item, run);
    if (next.state !== 'submitted') run.job.free();
    return (await step.policy?.after?.(next, run.env, drive)) ?? { item: next };
  }

  /** What a stage's policy may use of the batch, journaling through `persist` (a lane's: the shared item). */
  private envWith(persist: Persist): StepEnv {
    const { stops, pools } = this;
    return {
      run: this.run,
      client: this.run.options.client,
      signal: this.signal,
      stopping: stops.stopping.signal,
      get stopped() {
        return stops.stop !== null;
      },
      local: (fn) => pools.local(fn),
      stoppedItem: (item) => this.stoppedItem(item),
      journalFailed: (err) => {
        stops.journalFailed(err);
      },
      persist,
      tell: (item, stage, reason) => this.announce(item, stage, reason),
    };
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
      // A finished result's row learns where its input went: a copy of it dropped later is then told
      // as the same content, not as the file renamed (store/same-content.ts's twinGone); a failed one's
      // too, so that the dashboard of the out dir finds its thumbnail there.
      if (
        moved &&
        (moved.state === 'reported' || moved.state === 'failed') &&
        moved.absPath !== item.absPath
      ) {
        await this.ctx.persist(moved).catch(() => undefined);
      }
    } catch {
      // the hook reports its own problems; the item's result stands
    }
  }

  /**
   * Runs `step` on the item in the step's pool: `jobs` takes a job slot first (held until the job
   * ends), `poll` takes one for a generation resumed from the journal, a pool name runs it in that pool.
   */
  private async runInPool(step: StageStep, item: Item, run: StepRun): Promise<Item> {
    const { job } = run;
    if (this.stopped && !step.whileStopping) return this.stoppedItem(item);
    const instead = step.policy?.before?.(item, run.env);
    if (instead) return instead;
    if (step.pool === 'jobs') {
      try {
        job.take(await this.pools.jobs.acquire(this.stops.stopping.signal));
        return await this.runStep(step, item, run);
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
      return this.runStep(step, item, run);
    }
    return this.pools.run(step.pool, () => this.runStep(step, item, run), STAGES.indexOf(step));
  }

  /** Runs one stage with its timing; an error that escapes it ends the item (see afterThrow). */
  private async runStep(step: StageStep, item: Item, run: StepRun): Promise<Item> {
    if (this.stopped && !step.whileStopping) return this.stoppedItem(item);
    const started = Date.now();
    const begun: Item = { ...item, timings: { ...item.timings, [step.name]: { started_at: started } } };
    // What the stage journaled on its way (a create's intent): an item it leaves by throwing is made
    // from that, as the journal holds it — a create cut on the wire by the stop may have been sent.
    let journaled = begun;
    const ctx: RunContext = {
      ...run.ctx,
      persist: async (it) => {
        await run.ctx.persist(it);
        journaled = it;
      },
    };
    let next: Item;
    try {
      next = await step.run(begun, ctx);
    } catch (err) {
      if (err instanceof InputChangedError) throw err; // the step loop's to handle
      const withdrawn = await step.policy?.onThrow?.(begun, err, run.env);
      next = this.afterThrow(withdrawn ?? journaled, step, err);
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
