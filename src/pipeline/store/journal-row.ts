/**
 * A journal row as the code sees it, and the pure rules that read an item's progress from it: which
 * state the item really reached (through a `stopped`), which phase that is for resuming, and whether a
 * create may have reached the service without its answer being recorded.
 */
import { isChain } from '../chain.ts';
import { currentStep, type Item, type ItemState, type StageName } from '../item.ts';
import { lostAnswerReason } from '../outcome-texts.ts';
import type { RecordedOutput } from './outputs-check.ts';
import { JOURNAL_TEXTS } from './texts.ts';

/**
 * The content and recipe hash of a row noted for a file a stopped run saw but never planned (it was not
 * hashed): the next run that plans the file gives the row its key (Journal.plan).
 */
export const UNHASHED = '';

/** What identifies an item's work: the input's bytes and everything else that decides its result. */
export interface JournalKey {
  /** sha256 of the input's bytes (see content-hash.ts). */
  contentHash: string;
  /** See recipe-hash.ts. */
  recipeHash: string;
  /**
   * The recipe hashes of the same recipe under the service's former identities (BatchInfo
   * formerServices): a row with one of them is this key's, and is re-keyed (see rekeyed in admission.ts).
   */
  formerRecipeHashes?: readonly string[];
  /** A chain's: the work of each of its steps by name (step-work.ts); absent for a single request. */
  stepWork?: Readonly<Record<string, string>>;
}

/**
 * How far an item got, as far as resuming is concerned:
 * - `local`: nothing at the service yet (discovered … checked, skipped, or failed by a local stage);
 *   redone from scratch, which is cheap;
 * - `uploaded`: its media are uploaded, the create was not sent;
 * - `submitting`: the create may have been sent but no generation id was recorded (outcome unknown);
 * - `submitted`: a generation exists (queued … completed, or its download failed);
 * - `downloaded`: outputs on disk, result.json not yet written;
 * - `reported`: finished;
 * - `failed`: failed for good at the service (upload refused, create rejected, generation failed).
 */
export type JournalPhase =
  | 'local'
  | 'uploaded'
  | 'submitting'
  | 'submitted'
  | 'downloaded'
  | 'reported'
  | 'failed';

/** One item row of the journal (the active row of an input in an out dir, or an older one). */
export interface JournalRow {
  id: number;
  outDir: string;
  input: string;
  /** The row's out folder, relative to the out dir (see item-place.ts); the item's `place`. */
  place: string;
  contentHash: string;
  recipeHash: string;
  /** The item as last saved (its `place` is the row's). */
  item: Item;
  /** The last state the item reached before any `stopped` (equal to item.state otherwise). */
  liveState: ItemState;
  phase: JournalPhase;
  /** The create may have reached the service and its answer was not recorded. */
  outcomeUnknown: boolean;
  /** When the item's media (and references) were uploaded, ms since the epoch; null before. */
  uploadedAt: number | null;
  /** Local outputs with their sizes, recorded when the item reached `downloaded`; null before. */
  outputs: RecordedOutput[] | null;
  /** The batch that last planned or saved the row. */
  batchId: number | null;
  createdAt: number;
  updatedAt: number;
  /** When a later row of the same input replaced this one; null for the active row. */
  supersededAt: number | null;
}

const LOCAL_STATES: ReadonlySet<ItemState> = new Set(['discovered', 'sniffed', 'planned', 'checked']);
const LOCAL_STAGES: ReadonlySet<StageName> = new Set(['sniff', 'plan', 'check']);

/**
 * The state an item really reached: its state, except that `stopped` (the batch ended before the item
 * did) keeps the state it had before — or `submitted`, when the item holds a generation id the row had
 * not recorded yet: a create answered whose `submitted` write failed (a full disk) before the stop's
 * own write got through. That item is at the service; taken as `uploaded`, a re-run would create it
 * again.
 *
 * @param previousLive - the live state recorded before this save (null for a new row)
 */
export function liveStateOf(
  item: Pick<Item, 'state' | 'steps' | 'step'>,
  previousLive: ItemState | null,
): ItemState {
  if (item.state !== 'stopped') return item.state;
  const live = previousLive ?? 'discovered';
  const behind = LOCAL_STATES.has(live) || live === 'uploaded';
  return behind && currentStep(item)?.generationId ? 'submitted' : live;
}

/**
 * True when the item's create may have reached the service but no generation id was recorded:
 * - a request id is recorded (it is journaled before the create is sent) with no generation id, and
 *   the item had not moved on; or
 * - the item failed at submit because the create's answer was lost (stages/submit.ts), or under the
 *   default crash policy (texts.unknownOutcome), in today's words or earlier ones.
 */
export function isOutcomeUnknown(item: Item, liveState: ItemState): boolean {
  const step = currentStep(item);
  if (!step || step.generationId || !step.requestId) return false;
  if (item.state === 'failed') {
    if (item.failedAt !== 'submit' || item.reason === null) return false;
    const id = step.requestId;
    return (
      item.reason === lostAnswerReason(id) ||
      item.reason === JOURNAL_TEXTS.unknownOutcome(id) ||
      JOURNAL_TEXTS.earlierUnknownReasons(id).includes(item.reason)
    );
  }
  return liveState === 'uploaded';
}

/**
 * The phase of an item for resuming (see JournalPhase).
 *
 * @example phaseOf(stoppedItemWithGeneration, 'submitted') // 'submitted'
 */
export function phaseOf(item: Item, liveState: ItemState): JournalPhase {
  if (isOutcomeUnknown(item, liveState)) return 'submitting';
  const generationId = currentStep(item)?.generationId ?? null;
  if (item.state === 'skipped') return 'local';
  if (item.state === 'failed') {
    // A failure shared from a copy (same-content.ts) is at that file's stage: nothing was sent for this one.
    if (item.failedAt === null || LOCAL_STAGES.has(item.failedAt) || item.failure?.sharedFrom !== undefined)
      return 'local';
    // Work the service did is never thrown away: a failed download or result write is resumed.
    if (item.failedAt === 'download' && generationId) return 'submitted';
    if (item.failedAt === 'report' && generationId) return 'downloaded';
    return 'failed';
  }
  // A chain item between steps (back at `checked` for the next one) has work at the service.
  if (LOCAL_STATES.has(liveState) && isChain(item) && item.steps.some((s) => s.generationId || s.requestId)) {
    return 'submitted';
  }
  if (LOCAL_STATES.has(liveState)) return 'local';
  switch (liveState) {
    case 'uploaded':
      return 'uploaded';
    case 'submitted':
    case 'completed':
      return generationId ? 'submitted' : 'uploaded';
    case 'downloaded':
      return 'downloaded';
    case 'reported':
      return 'reported';
    default:
      return 'local';
  }
}
