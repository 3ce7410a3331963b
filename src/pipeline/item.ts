/**
 * The per-file state machine of a batch, kept apart from any scheduler: an Item is plain data that
 * can be persisted (the store) and moved by stages that each advance it one state. An item is an
 * input plus steps: the input (file, sniff, plan, checks) and one StepRecord per generation its rule
 * asks for, each with its own state, request, upload, generation, attempts and outputs (a
 * single-request rule: one step, MAIN_STEP). The item's state follows its current step while it is
 * at the service.
 *
 *   discovered → sniffed → planned → checked → uploaded → submitted → completed → downloaded → reported
 *
 * (plan comes before check: it is cheap, skips files no rule claims before anything decodes them, and
 * tells check the request position and type the service's limits depend on.)
 *
 * or `skipped` / `failed` (with a reason) from any state. `stopped` marks an item left unprocessed when a
 * batch stopped early (authentication, suspended client, insufficient balance, service unreachable).
 */
import type { AlphaHint, ImageRef, LayerBounds } from '../spec/index.ts';

export const ITEM_STATES = [
  'discovered',
  'sniffed',
  'planned',
  'checked',
  'uploaded',
  'submitted',
  'completed',
  'downloaded',
  'reported',
  'skipped',
  'failed',
  'stopped',
] as const;
export type ItemState = (typeof ITEM_STATES)[number];

/** States after which an item needs no more work in this batch. */
export const FINAL_ITEM_STATES: readonly ItemState[] = ['reported', 'skipped', 'failed', 'stopped'];

/** How the item's own media is used in its request (recipe `input_as`). */
export type InputAs = 'source' | 'start_frame' | 'end_frame' | 'image_ref' | 'prompt';

export type MediaKind = 'image' | 'video' | 'text' | 'other';

/** Stage names, used for timings and progress. */
export const STAGE_NAMES = [
  'sniff',
  'plan',
  'check',
  'upload',
  'submit',
  'wait',
  'download',
  'report',
] as const;
export type StageName = (typeof STAGE_NAMES)[number];

export type { LayerBounds } from '../spec/index.ts';

/** One downloaded layer of a layer-stack output (GenerationOutput.type `layering`). */
export interface ItemLayer {
  /** Local file (`layer-<index>.png`), relative to the out dir. */
  path: string;
  /** The service's layer metadata, as given. */
  alpha_hint: AlphaHint;
  description: string;
  index: number;
  bounds: LayerBounds | null;
}

export interface StageTiming {
  /** ms since the epoch */
  started_at: number;
  finished_at?: number;
}

/** One generation of an item that failed and was resubmitted. */
export interface ItemAttempt {
  generation_id: string | null;
  /** X-Request-Id the create was sent with. */
  request_id: string | null;
  failure_code: string | null;
  failure_reason: string | null;
}

export interface Item {
  /** Path relative to the input dir, with '/' separators: the item's identity within a batch. */
  input: string;
  /**
   * The bytes of the input's path (base64) when they are not valid UTF-8 (raw-names.ts): `input` is
   * then only their escaped text, which a valid name may also print as; these bytes tell the file
   * apart (inputKey) and reach it on disk. Absent for every other file.
   */
  rawInput?: string;
  /**
   * The item's out folder, relative to the out dir, '/'-separated: where its outputs and result.json
   * go, and what tells two items of the same input apart in the reports. The journal sets it when it
   * admits the item: `input` itself, unless an earlier version of the file left work of the service
   * there (then `<stem>-<n><ext>`, see store/item-place.ts). Absent means `input` (no journal, or
   * not admitted yet); read it with itemPlace().
   */
  place?: string;
  /** Absolute path of the input file. */
  absPath: string;
  size: number;
  mtimeMs: number;
  /**
   * The sha256 (hex) of the file's bytes as the journal keyed the item when it admitted it, before its
   * check (the runner hashes it at that point without a journal): what is sent must hash to it, or
   * nothing is created from it (input-changed.ts). Absent until admitted.
   */
  contentHash?: string;
  state: ItemState;
  /** Why the item was skipped or failed: names the file's problem and the rule, in plain words. */
  reason: string | null;
  /** The stage that failed it, when failed. */
  failedAt: StageName | null;
  /** Real type from the bytes. */
  sniff: { mime: string; ext: string; kind: MediaKind } | null;
  /** What the local check learned (image header or ffprobe). */
  media: { width?: number; height?: number; durationSeconds?: number; bytes: number } | null;
  /** Recipe rule that matched (index into rules and its glob). */
  rule: { index: number; match: string } | null;
  inputAs: InputAs | null;
  /**
   * The generations the item's rule asks for, each a step record (a single-request rule: one step,
   * named MAIN_STEP; a chain rule: its steps, parents before their dependants). Empty until the item is
   * planned (the request is known at plan).
   */
  steps: StepRecord[];
  /**
   * The name of the step a chain item is at (see chain.ts); absent for a single-request rule's item,
   * whose step is its first not downloaded (see currentStep).
   */
  step?: string;
  timings: Partial<Record<StageName, StageTiming>>;
  /**
   * How the item's failure is judged for a later run, set by the stage that failed it at the service
   * (upload, submit, wait; see failure-class.ts); absent for a local failure and for items that did
   * not fail (null once a retry cleared it).
   */
  failure?: ItemFailure | null;
  /**
   * What the journal decided for this item in this run (absent without a journal): `fresh` (processed
   * from the start), `resume` (continued from where an earlier run left it), `done` (finished by an
   * earlier run and reported as it was) or `fail` (failed by the crash policy: its submission outcome is
   * unknown), with the reason in words (null for a file never seen before).
   */
  journal?: ItemJournalNote;
}

/** The name of the one step of a single-request rule. */
export const MAIN_STEP = 'main';

/**
 * The states of one step: `planned` (its request known), `uploaded` (the media it sends are at the
 * service), `submitted` (a generation exists), `completed`, `downloaded` (its outputs on disk), or
 * `failed`. An item that stops leaves its steps where they were.
 */
export const STEP_STATES = ['planned', 'uploaded', 'submitted', 'completed', 'downloaded', 'failed'] as const;
export type StepState = (typeof STEP_STATES)[number];

/** True when `state` (an item's) is one a step takes too. */
export function isStepState(state: string): state is StepState {
  return (STEP_STATES as readonly string[]).includes(state);
}

/** How a step's media (the item's own) were sent. */
export interface StepUpload {
  mode: 'inline' | 'presigned' | 'base64';
  fileId: string | null;
  sha256: string | null;
}

/** One generation an item's rule asks for: its request and what became of it. */
export interface StepRecord {
  /** The step's name (MAIN_STEP for a single-request rule). */
  name: string;
  state: StepState;
  /**
   * The planned request, as it will be sent, except that the item's own media is referenced by the
   * placeholder `{ file_id: '$input' }` until uploaded, and shared recipe references by
   * `{ file_id: '$ref:<name>' }` until the batch uploads them.
   */
  request: Record<string, unknown>;
  /** How the item's own media was uploaded. */
  upload: StepUpload | null;
  generationId: string | null;
  /** X-Request-Id the create was sent with. */
  requestId: string | null;
  /** Terminal state of the generation as the service reported it. */
  generation: { state: string; failure_code: string | null; failure_reason: string | null } | null;
  /** Local output paths, relative to the out dir. */
  outputs: string[];
  /** composite.png of a layer stack, relative to the out dir. */
  composite: string | null;
  /**
   * The layers of a layer-stack output with their metadata, in the service's output order (front to
   * back), set by the download stage; empty (or absent) when the outputs are not a layer stack.
   */
  layers?: ItemLayer[];
  attempts: number;
  /**
   * Earlier generations of this step that failed with a retryable failure_code and were resubmitted
   * (oldest first); absent when the first generation was the last.
   */
  earlierAttempts?: ItemAttempt[];
  /**
   * A chain step's parents: the steps whose outputs its request uses (`{ from: <step> }`); absent for
   * a single-request rule's step.
   */
  after?: string[];
  /** A chain step's outputs are downloaded (a leaf, or `download: true`); absent: they are. */
  download?: boolean;
  /** Why a chain step failed (its own failure, or its parent's), in plain words; absent otherwise. */
  reason?: string | null;
  /** How a chain step's failure is judged for a later run (as Item.failure); absent otherwise. */
  failure?: ItemFailure | null;
  /** The stage that failed a chain step (null: its parent failed, it never ran); absent otherwise. */
  failedAt?: StageName | null;
  /**
   * A chain step's work (store/step-work.ts): what its generation is of, so that a step done for the
   * same content is taken instead of paid again; set when the journal admits the item, absent otherwise.
   */
  work?: string;
}

/** A new step of `name` for `request`, nothing done yet. */
export function newStep(name: string, request: Record<string, unknown>): StepRecord {
  return {
    name,
    state: 'planned',
    request,
    upload: null,
    generationId: null,
    requestId: null,
    generation: null,
    outputs: [],
    composite: null,
    layers: [],
    attempts: 0,
  };
}

/**
 * The step the item is at: a chain item's named step (Item.step), else the first one not yet
 * downloaded, else the last (a single-request rule's only step); undefined before the item is planned.
 */
export function currentStep(item: Pick<Item, 'steps' | 'step'>): StepRecord | undefined {
  if (item.step !== undefined) {
    const named = item.steps.find((s) => s.name === item.step);
    if (named) return named;
  }
  return item.steps.find((s) => s.state !== 'downloaded') ?? item.steps.at(-1);
}

/** One generation an item's rule asks for: its type, and whether the service completed it (what it charges for). */
export interface ItemGeneration {
  type: string;
  completed: boolean;
}

/** The generations of an item's steps (none before it is planned), for what they cost. */
export function generationsOf(item: Pick<Item, 'steps'>): ItemGeneration[] {
  return item.steps.map((s) => ({
    type: String(s.request.type),
    completed: s.generation?.state === 'completed',
  }));
}

/**
 * Another input's work stood for the item's (its journal note's sameAs, not a fresh start): its outputs
 * reused, nothing sent for it, nothing it costs.
 */
export function workReused(item: Pick<Item, 'journal'>): boolean {
  return item.journal?.sameAs !== undefined && item.journal.action !== 'fresh';
}

/** What a file whose work was reused says of it as it ends (`reused: same content as …`); null otherwise. */
export function reusedNote(item: Pick<Item, 'journal' | 'state'>): string | null {
  return item.state === 'reported' && workReused(item) ? (item.journal?.reason ?? null) : null;
}

/**
 * When the item's last attempt started: its earliest stage timing (each stage's timing is of the
 * attempt that ran it last); null before any stage ran (a file reused as it was found).
 */
export function attemptStartedAt(item: Pick<Item, 'timings'>): number | null {
  const starts = Object.values(item.timings).map((t) => t.started_at);
  return starts.length === 0 ? null : Math.min(...starts);
}

/** The step the item is at (see currentStep); throws for an item not planned: the runner's wiring error. */
export function stepOf(item: Pick<Item, 'steps' | 'step' | 'input'>): StepRecord {
  const step = currentStep(item);
  if (!step) throw new Error(`the item has no step yet (${item.input})`);
  return step;
}

/** The item with its current step patched (unchanged when it has no step). */
export function withStep(item: Item, patch: Partial<StepRecord>): Item {
  const step = currentStep(item);
  if (!step) return item;
  return { ...item, steps: item.steps.map((s) => (s === step ? { ...s, ...patch } : s)) };
}

/** See Item.journal. */
export interface ItemJournalNote {
  /**
   * `reuse`: another input's outputs with the same content and recipe, linked here; `wait`: only a dry
   * run's, another process works on the same content now.
   */
  action: 'fresh' | 'resume' | 'done' | 'fail' | 'reuse' | 'wait';
  reason: string | null;
  /** The item had failed in an earlier run and is tried again in this one (absent otherwise). */
  retried?: true;
  /** The earlier run sent nothing to the service for it: continued, not counted as resumed (absent otherwise). */
  nothingSent?: true;
  /**
   * The other input with the same content and recipe whose work stands for this item's (its outputs
   * reused, its generation collected, its failure shared): nothing was sent for this one. Absent otherwise.
   */
  sameAs?: string;
}

/**
 * A journal note as the JSON documents write it (result.json `journal`, a dry run's `journal`):
 * snake_case, like every key genpipe writes (docs/schemas/common.schema.json's `journal_note`).
 */
export interface JournalNoteJson {
  action: ItemJournalNote['action'];
  reason: string | null;
  retried?: true;
  nothing_sent?: true;
  same_as?: string;
}

/** The JSON form of a journal note (see JournalNoteJson). */
export function journalNoteJson(note: ItemJournalNote): JournalNoteJson {
  return {
    action: note.action,
    reason: note.reason,
    ...(note.retried ? { retried: true as const } : {}),
    ...(note.nothingSent ? { nothing_sent: true as const } : {}),
    ...(note.sameAs !== undefined ? { same_as: note.sameAs } : {}),
  };
}

/** See Item.failure. */
export interface ItemFailure {
  /**
   * What failed, in a few words: the generation's failure_code (`generation_failed`), an HTTP status
   * (`HTTP 422`), `rate limited (HTTP 429)`, `connection failure`, …
   */
  kind: string;
  /**
   * The failure may pass on a later run (it is not the file's own problem): a plain re-run retries the
   * item. False for what the file or the recipe causes (too large, corrupt, moderated, refused).
   */
  retryable: boolean;
  /**
   * The input whose failure this is, for a copy that waited for it (store/same-content.ts): failed at
   * that file's stage, nothing sent for this one. Absent otherwise.
   */
  sharedFrom?: string;
}

/** A fresh item for a discovered file. */
export function newItem(input: string, absPath: string, size: number, mtimeMs: number): Item {
  return {
    input,
    absPath,
    size,
    mtimeMs,
    state: 'discovered',
    reason: null,
    failedAt: null,
    sniff: null,
    media: null,
    rule: null,
    inputAs: null,
    steps: [],
    timings: {},
  };
}

/** The placeholder for the item's own media inside a planned request. */
export const INPUT_PLACEHOLDER: ImageRef = { file_id: '$input' };
/** The placeholder for a shared recipe reference named `name`. */
export function referencePlaceholder(name: string): ImageRef {
  return { file_id: `$ref:${name}` };
}
