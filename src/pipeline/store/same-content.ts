/**
 * Same content, never paid twice: what admit does when another input of the out dir holds the work
 * of the same key — the same bytes (sha256 and size) and the same recipe hash (the request, the
 * references' bytes, the service; recipe-hash.ts) — under another name: a rename, a copy, a symlink,
 * a file dropped into the inbox again. Pure: the engine reads the rows (ItemRows.twins) and applies
 * the choice (engine.ts's admitRow).
 *
 * Looked for only when the file's own row would send something new, or reports it failed in an
 * earlier run (twinWanted); never with --redo-same-content, and with --force among this batch's rows
 * only. The first that applies, over the twins newest first:
 *
 * | twin                                                        | choice                                   |
 * |-------------------------------------------------------------|------------------------------------------|
 * | reported, its outputs complete on disk                      | reuse: its outputs linked into this place |
 * | the twin this file waited on, ended failed                  | fail: the same failure, nothing sent      |
 * | in flight in this session (bound here)                      | wait: admit again once it ended           |
 * | in flight in another process (a store shared by processes:  | wait, looking again every second: its     |
 * |   not ended, written within TWIN_FRESH_MS)                  |   resubmissions are its own, not doubled  |
 * | its create's outcome unknown, without --resubmit-unknown    | fail: sending the copy could pay twice    |
 * | holds a generation (submitted, downloaded, or reported with | adopt: poll that generation, download     |
 * |   its outputs gone), single-step, in flight nowhere         |   into this place; never a new create     |
 * | failed at the service for its own reason (not retryable),   | fail: the same failure, nothing sent      |
 * |   without --retry-failed                                    |                                           |
 *
 * A file reported failed in an earlier run for a failure of its own takes a twin's work, never its
 * failure (engine.ts's keepsOwnFailure).
 * Otherwise the file's own decision stands. A hash collision (two different files with one sha256 and
 * size) cannot be ruled out by construction; it is not expected in practice.
 */
import { lstatSync } from 'node:fs';
import { failureOf } from '../failure-class.ts';
import { currentStep, type Item, withStep } from '../item.ts';
import { isOutcomeUnknown, type JournalRow } from './journal-row.ts';
import type { RowDecision } from './resume-decision.ts';
import type { PlanOptions, SameContent } from './store.ts';
import { SAME_CONTENT_TEXTS } from './texts.ts';

/**
 * A twin in another process that has not ended is taken as in flight there when its row was written
 * this recently; an older one is a file left behind (its process died, its job given up), which this
 * file does not wait for: its generation, if it holds one, is adopted (a long one polled there without
 * a write for this long is adopted too: polled twice, never created twice).
 */
export const TWIN_FRESH_MS = 2 * 60_000;

/**
 * A file waiting for its twin admits again at the latest after this long: at once when the twin, in
 * flight here, ends; a twin in another process is looked at again so.
 */
export const TWIN_POLL_MS = 1_000;

/** A twin in flight in this process wakes its waiters when it ends; they look again after this at the latest. */
export const TWIN_HERE_MS = 30_000;

/**
 * What admit does with a file whose twin it found (see the module comment). `origin` is whose work the
 * twin's is: the twin, or for a copy that took another file's outputs, the file whose generation made
 * them (originOf).
 */
export type TwinChoice = { kind: 'reuse' | 'fail' | 'wait' | 'adopt'; twin: JournalRow; origin: Origin };

/** The file whose generation made a twin's outputs, and when it was done. */
export interface Origin {
  input: string;
  updatedAt: number;
  item: Item;
}

/** What twinChoice reads besides the twins. */
export interface TwinContext {
  /** The file's size (a twin has the same). */
  size: number;
  /** True when the row is in flight in this session (bound here). */
  boundHere(id: number): boolean;
  /** Other processes write the rows too (the PostgreSQL store). */
  shared: boolean;
  /** ms since the epoch. */
  now: number;
  /** True when the row's recorded outputs are all on disk with their sizes. */
  outputsComplete(row: JournalRow): boolean;
  /** --retry-failed. */
  retryFailed: boolean;
  /** --resubmit-unknown: a twin whose create's outcome is unknown is sent again by its own admission. */
  resubmitUnknown: boolean;
  /** The row this file waited on, when admit is asked again after the wait (PlanOptions.waitedOn). */
  waitedOn: number | null;
  /** With --force: only the rows of this batch (its id) stand for a file; else any row does (null). */
  batchOnly: number | null;
  /**
   * Generations this file already found gone at the service (its own failure while collecting one):
   * never adopted again; its own decision goes on (a re-run sends it, as any file whose generation is gone).
   */
  goneGenerations: ReadonlySet<string>;
}

/**
 * True when another input's work may stand for the file's: its own decision would have the service do
 * new work (fresh, or a resume before any create, its upload kept), or reports it failed in an earlier
 * run (a copy done since stands for it, for free), or resumes a copy's work taken from another file. Never with --redo-same-content; with --force only
 * this batch's work stands (TwinContext.batchOnly).
 */
export function twinWanted(decision: RowDecision, opts: PlanOptions): boolean {
  if (opts.redoSameContent) return false;
  if (decision.action === 'fresh') return true;
  if (decision.action === 'done') return decision.item.state === 'failed' && !opts.force;
  if (decision.action !== 'resume') return false;
  // A copy whose work was another file's (its note names it), its outputs to collect again: that
  // file's work stands for it again, rather than its own resume of that work counting as sent.
  if (decision.item.journal?.sameAs !== undefined) return true;
  return !decision.item.steps.some((s) => s.requestId || s.generationId || s.outputs.length > 0);
}

const FINAL = new Set(['reported', 'failed', 'skipped', 'stopped']);

/**
 * The phases of a twin another process may be working on: before its create, and while it holds a
 * generation (a chain's between its steps too). Waited for rather than adopted, so that a retryable
 * failure is resubmitted once, by that process, not by each copy that adopted its generation.
 */
const IN_FLIGHT_ELSEWHERE = new Set<JournalRow['phase']>([
  'local',
  'uploaded',
  'submitting',
  'submitted',
  'downloaded',
]);

/** The choice for a file given its twins (rows of other inputs with its key, newest first), or null. */
export function twinChoice(twins: readonly JournalRow[], ctx: TwinContext): TwinChoice | null {
  const same = twins.filter(
    (t) => t.item.size === ctx.size && (ctx.batchOnly === null || t.batchId === ctx.batchOnly),
  );
  const pick = (kind: TwinChoice['kind'], test: (t: JournalRow) => boolean): TwinChoice | null => {
    const twin = same.find(test);
    return twin ? { kind, twin, origin: originOf(twin, same) } : null;
  };
  return (
    pick('reuse', (t) => t.phase === 'reported' && ctx.outputsComplete(t)) ??
    pick('fail', (t) => t.id === ctx.waitedOn && t.item.state === 'failed') ??
    pick('wait', (t) => inFlightHere(t, ctx)) ??
    pick('wait', (t) => inFlightElsewhere(t, ctx)) ??
    // A create that may have reached the service: sending the copy could pay twice (the crash policy's).
    pick('fail', (t) => t.outcomeUnknown && !ctx.resubmitUnknown) ??
    pick('adopt', (t) => holdsGeneration(t) && single(t.item) && !goneFor(t, ctx)) ??
    pick('fail', (t) => t.phase === 'failed' && !ctx.retryFailed && failureOf(t.item)?.retryable === false)
  );
}

/**
 * The file whose generation made `twin`'s outputs: for a copy that took another input's (its journal
 * note's sameAs), that input's row among `twins` holding the same generations, followed as far as it
 * goes; a note naming a file with no such row still names it (the note keeps the origin), with the
 * twin's time; else the twin itself.
 */
function originOf(twin: JournalRow, twins: readonly JournalRow[]): Origin {
  const generations = (item: Item) => item.steps.map((s) => s.generationId ?? '').join('\u0000');
  const took = (row: JournalRow) => {
    const note = row.item.journal;
    return note?.sameAs !== undefined && note.action !== 'fresh' ? note.sameAs : undefined;
  };
  let row = twin;
  const seen = new Set([row.id]);
  for (let name = took(row); name !== undefined; name = took(row)) {
    const from = row;
    const next = twins.find(
      (t) => t.input === name && !seen.has(t.id) && generations(t.item) === generations(from.item),
    );
    if (!next) return { input: name, updatedAt: row.updatedAt, item: row.item };
    seen.add(next.id);
    row = next;
  }
  return { input: row.input, updatedAt: row.updatedAt, item: row.item };
}

/** True when the twin's generation is one this file already found gone at the service. */
function goneFor(t: JournalRow, ctx: TwinContext): boolean {
  const id = currentStep(t.item)?.generationId;
  return id !== undefined && id !== null && ctx.goneGenerations.has(id);
}

/**
 * The generations `own` (a file's item as its row holds it) found gone at the service: those of its
 * steps when it failed collecting one (at wait or download, its generation unknown to the service).
 */
export function goneGenerationsOf(own: Item): Set<string> {
  if (own.state !== 'failed' || (own.failedAt !== 'wait' && own.failedAt !== 'download')) return new Set();
  return new Set(own.steps.flatMap((s) => (s.generationId ? [s.generationId] : [])));
}

/** True when the row is being worked on in this session (bound here, not ended). */
function inFlightHere(t: JournalRow, ctx: TwinContext): boolean {
  return ctx.boundHere(t.id) && !FINAL.has(t.item.state);
}

/** True when another process sharing the store works on the row now (see TWIN_FRESH_MS). */
function inFlightElsewhere(t: JournalRow, ctx: TwinContext): boolean {
  return (
    ctx.shared &&
    IN_FLIGHT_ELSEWHERE.has(t.phase) &&
    !FINAL.has(t.item.state) &&
    ctx.now - t.updatedAt < TWIN_FRESH_MS
  );
}

/**
 * True when nobody works on the row now: its generations at the service may be collected for another
 * file (polled, never created again) without a resubmission of theirs being made twice.
 */
export function leftAlone(t: JournalRow, ctx: TwinContext): boolean {
  return !inFlightHere(t, ctx) && !inFlightElsewhere(t, ctx);
}

/**
 * True when the twin's generation is at the service to be collected: being polled or downloaded, or
 * reported with its outputs gone since (polled again for fresh URLs, which costs nothing).
 */
function holdsGeneration(t: JournalRow): boolean {
  if (t.phase === 'submitted' || t.phase === 'downloaded') return true;
  return t.phase === 'reported' && !!currentStep(t.item)?.generationId;
}

/** A single-request item (one step): its generation can be adopted as it stands. */
function single(item: Item): boolean {
  return item.steps.length === 1;
}

/**
 * True when the twin's input is no longer on disk: the file was renamed or moved (a reuse, an adopted
 * generation and a chain's taken steps say so: engine.ts's withTwin).
 */
export function twinGone(twin: { item: Item }): boolean {
  try {
    lstatSync(twin.item.absPath);
    return false;
  } catch {
    return true;
  }
}

/**
 * The decision for `fresh` (the file as planned now) once its twin was chosen, `own` being the file's
 * own: reuse (the planned item, its outputs to be linked from the twin's), adopt (a resume at
 * `submitted` polling the twin's generation), fail (done, failed as the twin did), wait.
 */
export function sameContentDecision(
  own: RowDecision,
  choice: TwinChoice,
  fresh: Item,
  renamedFrom: Origin | null,
): RowDecision {
  const { twin, origin } = choice;
  const sameContent: SameContent = {
    id: twin.id,
    input: twin.input,
    place: twin.place,
    item: twin.item,
    ...(renamedFrom ? { renamed: true as const } : {}),
  };
  const base = { supersede: own.supersede, sameContent };
  switch (choice.kind) {
    case 'reuse':
      // A copy names the file whose work it takes (of a copy, the first file); a rename, its old name.
      return {
        ...base,
        sameContent: { ...sameContent, input: (renamedFrom ?? origin).input },
        action: 'reuse',
        item: own.action === 'fresh' ? own.item : fresh,
        reason: renamedFrom ? SAME_CONTENT_TEXTS.renamed(renamedFrom) : SAME_CONTENT_TEXTS.reused(origin),
      };
    case 'adopt': {
      const generationId = currentStep(twin.item)?.generationId ?? null;
      return {
        ...base,
        action: 'resume',
        item: adopted(twin.item, fresh),
        reason: SAME_CONTENT_TEXTS.adopted((renamedFrom ?? twin).input, generationId, renamedFrom !== null),
      };
    }
    case 'fail': {
      // A copy of a copy names the file that failed first, and its failure.
      const root = SAME_CONTENT_TEXTS.failedRoot(twin.item.reason);
      const shared = twin.item.failure?.sharedFrom ?? twin.item.journal?.sameAs;
      const first = root !== null ? (shared ?? twin.input) : twin.input;
      const unknown = isOutcomeUnknown(twin.item, twin.liveState);
      const reason = SAME_CONTENT_TEXTS.failed(first, root ?? twin.item.reason, unknown);
      const failed = sharedFailure(twin.item, first, fresh, reason);
      return { ...base, sameContent: { ...sameContent, input: first }, action: 'done', item: failed, reason };
    }
    case 'wait':
      return {
        ...base,
        supersede: false,
        action: 'wait',
        item: fresh,
        reason: SAME_CONTENT_TEXTS.waiting(twin.input),
      };
  }
}

/**
 * `fresh` failed with its twin's failure, `reason` saying whose (`first`: the file that failed first):
 * the stage that failed the twin, its class (retried as the twin's), and the service's failure of its
 * step (failure_code, failure_reason) — never the twin's generation or request id, nothing being sent
 * for this file (ItemFailure.sharedFrom). A twin not failed (its create's outcome unknown, left so), or
 * whose failure was not recorded, fails the copy at plan.
 */
function sharedFailure(twin: Item, first: string, fresh: Item, reason: string): Item {
  const failure = failureOf(twin);
  if (twin.state !== 'failed' || !twin.failedAt || !failure) {
    // At plan (a create whose answer was lost included): a failure of its own the next run admits
    // again, so it goes with its twin whichever of the two is admitted first.
    return { ...fresh, state: 'failed', failedAt: 'plan', reason, failure };
  }
  const step = currentStep(twin);
  const generation = step?.generation?.state === 'failed' ? step.generation : null;
  const at =
    twin.step !== undefined && fresh.steps.some((s) => s.name === twin.step) ? { step: twin.step } : {};
  const item = generation ? withStep({ ...fresh, ...at }, { generation }) : fresh;
  return {
    ...item,
    state: 'failed',
    failedAt: twin.failedAt,
    reason,
    failure: { ...failure, sharedFrom: first },
  };
}

/** The file as planned now, at its twin's generation (a single step, submitted): polled, then downloaded here. */
function adopted(twin: Item, fresh: Item): Item {
  const step = currentStep(twin);
  const at = withStep(fresh, {
    ...(step ?? {}),
    state: 'submitted',
    generation: null,
    outputs: [],
    composite: null,
    layers: [],
  });
  return { ...at, state: 'submitted', reason: null, failedAt: null, failure: null };
}
