/**
 * A chain's steps, each with an identity of its own, so that a step done for the same content is not
 * paid again when the rest of the chain differs (same content under another name, or the same file
 * with a step of its recipe changed): its generation and outputs are taken, and only the steps not
 * done are sent.
 *
 * A step's work (StepRecord.work) is the sha256 of: the input's content hash, where the input goes
 * (`input_as`), the service, the step's planned request with each parent's output placeholder
 * replaced by that parent's work, and the content hash of each shared reference it uses. Two steps
 * with the same work send the same request for the same bytes; a step is taken only under its own
 * name (its files are named after it).
 *
 * Pure but for stepFilesOnDisk, which reads file sizes.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fillStepOutputs, isChain, nextOrEnd } from '../chain.ts';
import type { Item, StepRecord } from '../item.ts';
import type { JournalRow } from './journal-row.ts';
import { outputPathsOf } from './outputs-check.ts';
import { canonicalJson, referencesUsed, sha256Text } from './recipe-hash.ts';
import type { RowDecision } from './resume-decision.ts';
import { SAME_CONTENT_TEXTS } from './texts.ts';

/** Bumped when what goes into a step's work changes (no step is then taken from an older row). */
const STEP_WORK_VERSION = 1;

/**
 * The work of each step of a chain item as planned (parents before dependants), by step name; empty
 * for a single-request item (its recipe hash is its work).
 *
 * @example stepWork(planned, 'ab12…', { style: 'cd34…' }, 'http://127.0.0.1:4010') // { stylize: '…', animate: '…' }
 */
export function stepWork(
  item: Pick<Item, 'steps' | 'inputAs'>,
  contentHash: string,
  referenceHashes: Readonly<Record<string, string>>,
  service: string | undefined,
): Record<string, string> {
  const work: Record<string, string> = {};
  if (!isChain(item)) return work;
  for (const step of item.steps) {
    let request = step.request;
    for (const channel of ['generation_id', 'url'] as const) {
      request = fillStepOutputs(request, channel, (parent) => `$work:${work[parent] ?? parent}`);
    }
    const references: Record<string, string> = {};
    for (const name of referencesUsed(step.request)) references[name] = referenceHashes[name] ?? '';
    work[step.name] = sha256Text(
      canonicalJson({
        v: STEP_WORK_VERSION,
        content: contentHash,
        input_as: item.inputAs ?? null,
        request,
        references,
        service,
      }),
    );
  }
  return work;
}

/** The item with each step's work recorded (StepRecord.work), as `work` gives it. */
export function withStepWork(item: Item, work: Readonly<Record<string, string>>): Item {
  if (Object.keys(work).length === 0) return item;
  return { ...item, steps: item.steps.map((s) => (work[s.name] ? { ...s, work: work[s.name] } : s)) };
}

const DONE: ReadonlySet<StepRecord['state']> = new Set(['downloaded']);
const AT_THE_SERVICE: ReadonlySet<StepRecord['state']> = new Set(['downloaded', 'submitted', 'completed']);

/** Steps of another row whose work a planned chain item takes: by the item's step name, the row's step. */
export interface StepsTaken {
  row: JournalRow;
  steps: Map<string, StepRecord>;
}

/**
 * The steps of `item` (a planned chain, its steps' work recorded) that rows of the same content have
 * done: for each step, a step of the same name and work whose generation is done (downloaded) — or,
 * in a row nobody works on now (`leftAlone`: its process died), at the service (submitted, completed:
 * polled, never created again) — taken only with every parent taken. From the one row that gives the
 * most steps (the newest of equals); null when none gives any.
 */
export function doneStepsFor(
  item: Item,
  rows: readonly JournalRow[],
  leftAlone: (row: JournalRow) => boolean,
): StepsTaken | null {
  let best: StepsTaken | null = null;
  for (const row of rows) {
    const collectable = leftAlone(row) ? AT_THE_SERVICE : DONE;
    const steps = new Map<string, StepRecord>();
    for (const step of item.steps) {
      const done = row.item.steps.find(
        (s) => sameWork(s, step) && collectable.has(s.state) && s.generationId,
      );
      if (done && (step.after ?? []).every((p) => steps.has(p))) steps.set(step.name, done);
    }
    if (steps.size > (best?.steps.size ?? 0)) best = { row, steps };
  }
  return best;
}

/** True when two steps are the same work under the same name (their files are named after it). */
function sameWork(a: StepRecord, b: StepRecord): boolean {
  return a.name === b.name && a.work !== undefined && a.work === b.work;
}

/** True when `row` has one of `steps` (same name and work) that is neither done nor failed yet. */
function pendingThere(steps: readonly StepRecord[], row: JournalRow): boolean {
  return steps.some((step) =>
    row.item.steps.some((s) => sameWork(s, step) && s.state !== 'downloaded' && s.state !== 'failed'),
  );
}

/**
 * The step a planned item takes from another row's `done` one: its generation and files (their paths
 * still under the other row's place), without the attempts made before it (the other file's); when
 * its files are no longer on disk as recorded, or its generation was not downloaded yet, at
 * `submitted` instead: polled (for fresh URLs) and downloaded, which costs nothing.
 */
export function takenStep(own: StepRecord, done: StepRecord, filesThere: boolean): StepRecord {
  const { earlierAttempts: _earlier, ...rest } = done;
  const step: StepRecord = { ...rest, after: own.after, download: own.download, work: own.work };
  if (filesThere && done.state === 'downloaded') return step;
  return { ...step, state: 'submitted', generation: null, outputs: [], composite: null, layers: [] };
}

/** True when the step's local files are on disk as the row recorded them (any size when it recorded none). */
export function stepFilesOnDisk(outDir: string, row: JournalRow, step: StepRecord): boolean {
  const recorded = new Map((row.outputs ?? []).map((o) => [o.path, o.bytes]));
  return outputPathsOf({ steps: [step] }).every((path) => {
    try {
      const st = statSync(join(outDir, ...path.split('/')));
      const want = recorded.get(path);
      return st.isFile() && (want === undefined ? st.size > 0 : st.size === want);
    } catch {
      return false;
    }
  });
}

/**
 * The decision for a file whose own is to send it all (`own`, fresh) when rows of the same content
 * are doing some of its chain's steps now (a `wait` for the row, then admitted again), or have done
 * some of its chain's steps (`rows`, newest first: twins no rule of same-content.ts took,
 * and rows of the same bytes with another recipe): a `reuse` of those steps (SameContent.steps), the
 * rest sent; else `own`. `filesThere` tells whether a row's step still has its files on disk.
 */
export function doneStepsDecision(
  own: RowDecision,
  rows: readonly JournalRow[],
  filesThere: (row: JournalRow, step: StepRecord) => boolean,
  leftAlone: (row: JournalRow) => boolean,
  renamed: (row: JournalRow) => boolean = () => false,
): RowDecision {
  if (own.action !== 'fresh' || !isChain(own.item)) return own;
  const taken = doneStepsFor(own.item, rows, leftAlone);
  // A step this file would send is being done for the same bytes now: wait for it, never pay it twice.
  const toSend = own.item.steps.filter((s) => !taken?.steps.has(s.name));
  const busy = rows.find((row) => !leftAlone(row) && pendingThere(toSend, row));
  if (busy) {
    const { id, input, place, item } = busy;
    return {
      ...own,
      action: 'wait',
      reason: SAME_CONTENT_TEXTS.waiting(input),
      sameContent: { id, input, place, item },
    };
  }
  if (!taken) return own;
  const { row } = taken;
  const steps = own.item.steps.flatMap((s) => {
    const done = taken.steps.get(s.name);
    return done ? [takenStep(s, done, filesThere(row, done))] : [];
  });
  const gone = renamed(row);
  const said = SAME_CONTENT_TEXTS.stepsReused(
    row.input === own.item.input ? null : row.input,
    steps,
    own.item.steps.length - steps.length,
    gone,
  );
  return {
    ...own,
    action: 'reuse',
    reason: own.reason ? `${own.reason}; ${said}` : said,
    sameContent: {
      ...{ id: row.id, input: row.input, place: row.place, item: row.item, steps },
      ...(gone ? { renamed: true as const } : {}),
    },
  };
}

/**
 * The planned chain item with the steps it takes (takenStep's, their paths where they are to be), at
 * the step it goes on with (chain.ts nextOrEnd); `media` is what the other file's check learned of the
 * same bytes, for a file that was not checked.
 */
export function stepsTaken(item: Item, taken: readonly StepRecord[], media: Item['media']): Item {
  const byName = new Map(taken.map((s) => [s.name, s]));
  return nextOrEnd({
    ...item,
    media: item.media ?? media,
    steps: item.steps.map((s) => byName.get(s.name) ?? s),
  });
}
