/**
 * What one pass of the item driver's step loop (item-driver.ts `steps`) moves: the one place where the
 * item itself and a chain step's lane differ. The loop is the same for both.
 * - The item itself (itemTrack): its own state, stage after stage to a final one. A single-request
 *   rule's item is a chain of one step run so: its one step's state is the item's. A chain item runs
 *   its local stages and its report so, and fans out at the service (`fansOut`: driveLanes).
 * - A chain step's lane (driveLanes): the step at its own state through the stages at the service
 *   (upload → submit → wait → download) beside its siblings; what it learns goes through the item
 *   every lane shares, recorded in the state the item is in while others go on (chain.ts
 *   laneRecordState), and its moments are told (`step 'animate' started`, see transition-words.ts).
 */
import {
  isChain,
  laneRecordState,
  laneStartState,
  mergeStep,
  nextOrEnd,
  runnableSteps,
  STEP_STAGES,
} from '../chain.ts';
import type { Item } from '../item.ts';
import { type StageStep, stepFor } from '../stage-list.ts';

/** Journals an item (the runner's persist: failures stop the batch). */
export type Persist = (item: Item) => Promise<void>;

/** What a pass of the step loop moves (see the module comment). */
export interface Track {
  /** The chain step whose lane this is (its moments are told); null for the item itself. */
  readonly lane: string | null;
  /** Journals what a stage or its policy learned (a lane: through the item every lane shares). */
  readonly persist: Persist;
  /** The item the next stage runs on. */
  current(): Item;
  /** The stage that moves the track next; null when the pass is over. */
  next(): StageStep | null;
  /** True when `step` runs as a lane per chain step instead (driveLanes): a chain item at the service. */
  fansOut(step: StageStep): boolean;
  /** Takes the item a stage and its policy left (or the item started again): the item to record. */
  take(item: Item): Promise<Item>;
  /** The pass ends before its next stage, the item stopped for `reason` (another worker took it over). */
  end(reason: string): void;
}

/** The item itself, from `first`; a final item is given its place by `placed`. */
export function itemTrack(first: Item, persist: Persist, placed: (item: Item) => Promise<Item>): Track {
  let item = first;
  return {
    lane: null,
    persist,
    current: () => item,
    next: () => stepFor(item.state),
    fansOut: (step) => isChain(item) && STEP_STAGES.has(step.name),
    take: async (it) => {
      item = await placed(it);
      return item;
    },
    end: (reason) => {
      item = { ...item, state: 'stopped', reason };
    },
  };
}

/** What the lanes of one chain item share (see driveLanes). */
interface Shared {
  /** The item as every lane has left it so far. */
  get(): Item;
  /** Takes step `name` from a lane's item; the shared item after. */
  put(it: Item, name: string): Item;
  /** A lane was stopped: no new lane starts, and the item ends so. */
  stop(it: Item): void;
}

/** The lane of chain step `name`, from its state `start`. */
function laneTrack(name: string, start: Item['state'], shared: Shared, persist: Persist): Track {
  let state = start;
  const view = (it: Item, at: Item['state']): Item => ({ ...it, step: name, state: at });
  const stopped = (reason: string | null): Item => {
    state = 'stopped';
    const now = view(shared.get(), 'stopped');
    shared.stop({ ...now, reason });
    return now;
  };
  return {
    lane: name,
    persist: (it) => persist(view(shared.put(it, name), laneRecordState(it.state))),
    current: () => view(shared.get(), state),
    next: () => {
      const step = stepFor(state);
      return step && STEP_STAGES.has(step.name) ? step : null;
    },
    fansOut: () => false,
    take: async (it) => {
      // A stopped lane's item is its step as it began: the shared step keeps what was journaled since
      // (a create's request id), so the next run knows the create may have been sent.
      if (it.state === 'stopped') return stopped(it.reason);
      state = it.state;
      return view(shared.put(it, name), laneRecordState(state));
    },
    end: (reason) => {
      stopped(reason);
    },
  };
}

/**
 * A chain item's steps, each that can run in a lane of its own (siblings at once, each moved by `move`
 * — the step loop, with its own job slot), until none can: then the item at its end (chain.ts
 * nextOrEnd), or stopped. Every write of the journal — the runner's and a stage's own (submit's
 * intent) — goes through the item all lanes share, so no lane writes another's step as it was when it
 * began. A lane's error (a changed input) starts no new lane and is thrown once the others end.
 */
export async function driveLanes(
  first: Item,
  persist: Persist,
  move: (lane: Track) => Promise<void>,
): Promise<Item> {
  let item = first;
  const lanes = new Map<string, Promise<void>>();
  let changed: unknown = null;
  let stopped: Item | null = null;
  const shared: Shared = {
    get: () => item,
    put: (it, name) => {
      item = mergeStep(item, it, name);
      return item;
    },
    stop: (it) => {
      stopped ??= it;
    },
  };
  for (;;) {
    if (stopped === null && changed === null) {
      for (const step of runnableSteps(item.steps)) {
        if (lanes.has(step.name)) continue;
        const start = step.name === first.step ? first.state : laneStartState(step);
        const task = move(laneTrack(step.name, start, shared, persist))
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
  return stop ? { ...item, state: 'stopped', step: stop.step, reason: stop.reason } : nextOrEnd(item);
}
