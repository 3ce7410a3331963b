/**
 * What a dry run says of one file: what would become of it (sent, failed, skipped, already done,
 * collected from the service, or reused from another file with the same content), and for a file that
 * would be sent, the request as it would go — the item's own media shown as what it would become
 * (uploaded inline or presigned, base64 in the request, the text as the prompt), the shared references
 * as uploaded once — with the number of bytes.
 */
import { uploadModeFor } from '../../client/index.ts';
import type { GenerationType } from '../../spec/index.ts';
import { isChain, stepOfPlaceholder, stepOutputWords } from '../chain.ts';
import { currentStep, type Item, type JournalNoteJson, type StageName, type StepRecord } from '../item.ts';
import { EMULATOR_MEDIA_URL, mediaUrlOf } from '../legacy-media-url.ts';
import { holdsLegacyInput, withLegacyMediaUrl } from '../legacy-request.ts';
import type { Recipe } from '../recipe.ts';
import { INPUT_FILE_ID, isObject, type Json, REF_FILE_ID_PREFIX, requestType } from '../recipe-request.ts';
import { fillReferences, referenceNamesIn } from '../references.ts';
import type { AdmitDecision } from '../runner/options.ts';
import { holdsInput, INLINE_INPUT_DATA, ownMediaMode } from '../stages/upload.ts';

/**
 * What would become of a file: `send` (a generation would be created), `fail` (locally, or reported
 * failed again from the journal), `skip` (no recipe rule), `done` (finished by an earlier run: reported
 * as it was), `collect` (its generation is already at the service: its outputs would be collected,
 * nothing created) or `reuse` (another input with the same content and recipe is done, being done by
 * another process, or sent earlier in this run: its outputs would be linked here, nothing sent).
 */
export type DryRunOutcome = 'send' | 'fail' | 'skip' | 'done' | 'collect' | 'reuse';

/**
 * How the item's own media would travel: uploaded `inline` (multipart) or `presigned`, as `base64` in
 * the request, its text as the `prompt`, `reused` (the upload of an earlier run, from the journal),
 * `url` (a legacy request's `media.url`: the rule's media_url), or `none` (the request holds no media
 * of the file's own).
 */
export type DryRunMedia = 'inline' | 'presigned' | 'base64' | 'prompt' | 'reused' | 'url' | 'none';

/** One file of a dry run (its `--json` line is this with `type: 'dry_run_item'`). */
export interface DryRunEntry {
  input: string;
  /** Its out folder, when the journal gave it one. */
  place?: string;
  outcome: DryRunOutcome;
  /** The stage that would fail it (`fail`), else null. */
  stage: StageName | null;
  /** Why: the reason a real run gives (failed, skipped), or the journal's; null for a plain `send`. */
  reason: string | null;
  /** `send`: the generation's type and model; null otherwise. */
  generation_type: GenerationType | null;
  model: string | null;
  /** `send`: how its own media would travel; null otherwise. */
  media: DryRunMedia | null;
  /** The file's size in bytes. */
  bytes: number;
  /** `send`: the request as it would be sent, placeholders in angle brackets; null otherwise. */
  request: Json | null;
  /** `send`: the shared references it uses (uploaded once per batch). */
  references: string[];
  /** What the journal would decide (absent without a journal, or for a file never planned). */
  journal?: JournalNoteJson;
  /** Reported as an earlier run left it, nothing would run for it. */
  from_journal?: true;
  /**
   * A chain's item (`send` or `collect`): every step, parents first, with what would become of it and
   * the request it would send (a parent's output shown as what it would carry); `generation_type`,
   * `model` and `request` above are its first step's that would be sent.
   */
  steps?: DryRunStep[];
}

/** One step of a chain in a dry run (DryRunEntry.steps). */
export interface DryRunStep {
  name: string;
  /** The steps whose outputs it uses. */
  after: string[];
  /**
   * `send` (its generation would be created), `collect` (its generation exists: collected), `done`
   * (finished by an earlier run) or `fail` (failed in an earlier run, not run again).
   */
  outcome: 'send' | 'collect' | 'done' | 'fail';
  generation_type: GenerationType;
  model: string | null;
  /** The request as it would be sent, placeholders in angle brackets. */
  request: Json;
}

/** The settings an entry's media words need. */
export interface MediaSettings {
  /** The recipe (its rules' `upload`). */
  recipe: Pick<Recipe, 'rules'>;
  /** Largest image sent as base64 under `upload: base64`. */
  base64MaxBytes: number;
  /** Largest file the client sends inline in `auto` mode. */
  inlineMaxBytes: number;
}

/** What the placeholders of a request would become, in words (never a real id). */
export const DRY_RUN_PLACEHOLDERS = {
  upload: (mode: 'inline' | 'presigned') => `<the file, uploaded ${mode}>`,
  base64: (bytes: number) => `<the file as base64, ${bytes} bytes>`,
  reference: (name: string) => `<reference ${name}, uploaded once per batch>`,
  /** A legacy request's media under `media_url: emulator`. */
  emulatorMedia: "<the file, sent to the emulator's media store right before the create>",
  /** A chain step's `{ from: <step> }`, by the channel it travels by. */
  stepOutput: (step: string, channel: 'generation_id' | 'url') => stepOutputWords(step, channel),
} as const;

/** How a checked item's own media would travel. */
function mediaOfChecked(item: Item, request: Json, settings: MediaSettings): DryRunMedia {
  if (holdsLegacyInput(request)) return 'url';
  if (!holdsInput(request)) return item.inputAs === 'prompt' ? 'prompt' : 'none';
  const mode = ownMediaMode(item, settings.recipe, settings.base64MaxBytes);
  if (mode === 'base64') return 'base64';
  return uploadModeFor(mode, item.media?.bytes ?? item.size, settings.inlineMaxBytes);
}

/** How the own media of an item resumed at `uploaded` would travel (its earlier upload is reused). */
function mediaOfUploaded(item: Item): DryRunMedia {
  const upload = currentStep(item)?.upload;
  if (upload?.mode === 'base64') return 'base64';
  if (upload) return 'reused';
  return item.inputAs === 'prompt' ? 'prompt' : 'none';
}

/** The request with its placeholders shown as what they would become. */
function shownRequest(request: Json, media: DryRunMedia, bytes: number, mime: string | null): Json {
  const filled = fillReferences(request, (id) => {
    if (id.startsWith(REF_FILE_ID_PREFIX)) {
      return { file_id: DRY_RUN_PLACEHOLDERS.reference(id.slice(REF_FILE_ID_PREFIX.length)) };
    }
    if (id !== INPUT_FILE_ID) return undefined;
    if (media === 'base64') {
      return { data: DRY_RUN_PLACEHOLDERS.base64(bytes), ...(mime ? { media_type: mime } : {}) };
    }
    return media === 'inline' || media === 'presigned'
      ? { file_id: DRY_RUN_PLACEHOLDERS.upload(media) }
      : undefined;
  });
  // A base64 image's `data` (resumed at `uploaded`, or just placed): its bytes are read at submit.
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    if (!isObject(v)) return v;
    const out: Json = {};
    for (const [k, x] of Object.entries(v)) {
      const step = k === 'generation_id' || k === 'url' ? stepOfPlaceholder(x) : null;
      if (step !== null) out[k] = DRY_RUN_PLACEHOLDERS.stepOutput(step, k as 'generation_id' | 'url');
      else out[k] = k === 'data' && x === INLINE_INPUT_DATA ? DRY_RUN_PLACEHOLDERS.base64(bytes) : walk(x);
    }
    return out;
  };
  return walk(filled) as Json;
}

/** The outcome of an item as the local steps (and the journal) left it; null for one not evaluated. */
function outcomeOf(item: Item): DryRunOutcome | null {
  switch (item.state) {
    case 'checked':
    case 'uploaded':
      return 'send';
    case 'failed':
      return 'fail';
    case 'skipped':
      return 'skip';
    case 'reported':
      return 'done';
    case 'submitted':
    case 'completed':
    case 'downloaded':
      return 'collect';
    default:
      return null;
  }
}

/**
 * The entry of an item the dry run took as far as a real run would before its upload: through sniff,
 * plan, the journal's decision (`decision`, null without a journal) and check; null for an item it did
 * not get to evaluate (the dry run was interrupted).
 *
 * @example dryRunEntry(checkedItem, null, settings).media // 'inline'
 */
export function dryRunEntry(
  item: Item,
  decision: AdmitDecision | null,
  settings: MediaSettings,
): DryRunEntry | null {
  const outcome = reusedByDecision(decision) ? 'reuse' : outcomeOf(item);
  if (outcome === null) return null;
  const bytes = item.media?.bytes ?? item.size;
  const sameAs = decision?.sameContent ? { same_as: decision.sameContent.input } : {};
  const journal = decision
    ? { journal: { action: decision.action, reason: decision.reason, ...sameAs } }
    : {};
  const fromJournal = decision?.action === 'done' ? { from_journal: true as const } : {};
  // A file the journal ends (done, failed by the crash policy, reused) gets the journal's words, as in a run.
  const journalEnds = decision?.action === 'done' || decision?.action === 'fail' || outcome === 'reuse';
  const base = {
    input: item.input,
    ...(item.place !== undefined ? { place: item.place } : {}),
    outcome,
    stage: null,
    reason: journalEnds
      ? (decision?.reason ?? item.reason ?? null)
      : (item.reason ?? decision?.reason ?? null),
    generation_type: null,
    model: null,
    media: null,
    bytes,
    request: null,
    references: [],
    ...journal,
    ...fromJournal,
  };
  if (outcome === 'fail') {
    return { ...base, stage: decision?.action === 'done' ? null : (item.failedAt ?? null) };
  }
  if (isChain(item) && (outcome === 'send' || outcome === 'collect')) return chainEntry(item, base, settings);
  if (outcome !== 'send') return base;
  const request = (currentStep(item)?.request ?? {}) as Json;
  const media = item.state === 'checked' ? mediaOfChecked(item, request, settings) : mediaOfUploaded(item);
  const shown = media === 'url' ? legacyMediaShown(item, request, settings) : request;
  const model = request.model;
  return {
    ...base,
    generation_type: requestType(request),
    model: typeof model === 'string' ? model : null,
    media,
    request: shownRequest(shown, media, bytes, item.sniff?.mime ?? null),
    references: referenceNamesIn(request),
  };
}

/** A legacy request with the URL its media_url gives the file (or, `emulator`, what it would be). */
function legacyMediaShown(item: Item, request: Json, settings: MediaSettings): Json {
  const template = item.rule ? settings.recipe.rules[item.rule.index]?.mediaUrl : null;
  const url =
    template === null || template === undefined || template === EMULATOR_MEDIA_URL
      ? DRY_RUN_PLACEHOLDERS.emulatorMedia
      : mediaUrlOf(template, item.input);
  return withLegacyMediaUrl(request, url);
}

/**
 * True when the journal's decision is another input's work with the same content: done (`reuse`), or
 * being done by another process (`wait`, which a run waits out and then reuses).
 */
export function reusedByDecision(decision: AdmitDecision | null): boolean {
  return decision?.action === 'reuse' || decision?.action === 'wait';
}

/**
 * The entry of a file that would have been sent, turned into one that reuses the work of `sameAs`, a
 * file with the same content sent earlier in this run (`reason` says so): nothing of it is sent.
 */
export function reusedInRun(entry: DryRunEntry, sameAs: string, reason: string): DryRunEntry {
  const { steps: _, journal, ...rest } = entry;
  return {
    ...rest,
    outcome: 'reuse',
    stage: null,
    reason,
    generation_type: null,
    model: null,
    media: null,
    request: null,
    references: [],
    // What the journal would decide: wait for `sameAs`, then reuse its outputs.
    ...(journal ? { journal: { action: 'reuse', reason, same_as: sameAs } } : {}),
  };
}

/**
 * A chain's entry whose steps `names` another file of this dry run sends for the same bytes (`reason`
 * says so): those are taken from it (`done`, not priced), the entry's request and type the first step
 * it still sends.
 */
export function withStepsDoneInRun(
  entry: DryRunEntry,
  names: readonly string[],
  reason: string,
): DryRunEntry {
  const steps = (entry.steps ?? []).map((s) =>
    names.includes(s.name) ? { ...s, outcome: 'done' as const } : s,
  );
  const first = steps.find((s) => s.outcome === 'send');
  return {
    ...entry,
    steps,
    reason: entry.reason ? `${entry.reason}; ${reason}` : reason,
    generation_type: first?.generation_type ?? null,
    model: first?.model ?? null,
    request: first?.request ?? null,
  };
}

/** What would become of a chain's step, by the state an earlier run (or the plan) left it in. */
function stepOutcome(step: StepRecord): DryRunStep['outcome'] {
  switch (step.state) {
    case 'planned':
    case 'uploaded':
      return 'send';
    case 'submitted':
    case 'completed':
      return 'collect';
    case 'downloaded':
      return 'done';
    case 'failed':
      return 'fail';
  }
}

/**
 * The entry of a chain's item: every step with the request it would send, the item's own media shown
 * in the step that holds it; the top-level type, model and request are the first step's to be sent.
 */
function chainEntry(item: Item, base: DryRunEntry, settings: MediaSettings): DryRunEntry {
  const holder = item.steps.find((s) => holdsInput(s.request as Json));
  const fresh = holder === undefined || holder.state === 'planned';
  const media = holder
    ? fresh && item.state === 'checked'
      ? mediaOfChecked(item, holder.request as Json, settings)
      : mediaOfUploaded({ ...item, step: holder.name })
    : item.inputAs === 'prompt'
      ? 'prompt'
      : 'none';
  const steps: DryRunStep[] = item.steps.map((s) => {
    const request = s.request as Json;
    return {
      name: s.name,
      after: [...(s.after ?? [])],
      outcome: stepOutcome(s),
      generation_type: requestType(request),
      model: typeof request.model === 'string' ? request.model : null,
      request: shownRequest(request, media, base.bytes, item.sniff?.mime ?? null),
    };
  });
  const first = steps.find((s) => s.outcome === 'send') ?? steps[0];
  const sent = item.steps.filter((s) => stepOutcome(s) === 'send');
  return {
    ...base,
    generation_type: first?.generation_type ?? null,
    model: first?.model ?? null,
    media,
    request: first?.request ?? null,
    references: [...new Set(sent.flatMap((s) => referenceNamesIn(s.request as Json)))],
    steps,
  };
}
