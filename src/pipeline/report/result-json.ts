/**
 * The per-item `result.json` at `<out>/<place>/result.json` (the item's out folder, see itemPlace): what was asked, what the
 * service answered and where the outputs are, written atomically whenever the item reaches a final state.
 */
import { join } from 'node:path';
import { isoTime } from '../../spec/iso-time.ts';
import { isChain, recordedStepRequest } from '../chain.ts';
import { itemStatus, type ReportStatus } from '../events.ts';
import {
  currentStep,
  type Item,
  type ItemAttempt,
  type ItemLayer,
  type JournalNoteJson,
  journalNoteJson,
  STAGE_NAMES,
  type StageName,
  type StepRecord,
  workReused,
} from '../item.ts';
import { type Redact, redactDeep, redactShapes } from '../progress/redact.ts';
import { itemFolder, itemPlace, RESULT_FILE } from './item-paths.ts';
import { writeFileAtomic } from './write-atomic.ts';

/** One stage's timing in result.json. */
export interface StageTimingJson {
  /** ISO 8601 start time. */
  started_at: string;
  /** ms from start to finish; null when the stage had not finished. */
  duration_ms: number | null;
}

/**
 * What the pipeline learned about the input file itself (result.json `input_facts`): each fact is
 * null when the stage that learns it did not get that far or the file's kind has none.
 */
export interface InputFactsJson {
  /** Hex sha256 of the file's bytes: the one the journal keyed the item by (or the upload computed). */
  sha256: string | null;
  /** The type sniffed from the bytes (not the extension); null before the sniff. */
  mime: string | null;
  /** The file's size in bytes. */
  bytes: number;
  /** Of an image or video, as the check read it from the header (or ffprobe). */
  width: number | null;
  height: number | null;
  /** Of a video, in seconds, as ffprobe gave it. */
  duration_s: number | null;
}

/** The shape of result.json. Paths are relative to the out dir, '/' separated. */
export interface ResultJson {
  input: string;
  /** What the sniff and check learned of the input file (see InputFactsJson). */
  input_facts: InputFactsJson;
  /** The item's out folder, relative to the out dir (the input path unless an earlier version of the file kept that one). */
  place: string;
  /** The item as the batch report counts it. */
  status: ReportStatus;
  /** The item's state in the per-file state machine. */
  item_state: Item['state'];
  /** Why the item was skipped, failed or left unprocessed; null when it succeeded. */
  reason: string | null;
  /** The stage that failed it, when failed. */
  failed_stage: StageName | null;
  /** The request as sent (or as planned, when `request_sent` is false), inline base64 `data` elided. */
  request: Record<string, unknown> | null;
  /**
   * Whether the create request was sent to the service for this file: false for a file another input's
   * work stood for (`journal.same_as`, not `fresh`: its generation_id is that input's), nothing sent for it.
   */
  request_sent: boolean;
  generation_id: string | null;
  /** X-Request-Id of the create request. */
  request_id: string | null;
  /** The generation's terminal state as the service reported it (completed / failed); null when none. */
  state: string | null;
  failure_code: string | null;
  /** The service's failure_reason; for a file that failed before the service saw it, the local reason. */
  failure_reason: string | null;
  /** Downloaded outputs (local paths). */
  outputs: string[];
  /** composite.png of a layer stack. */
  composite: string | null;
  /** The layers of a layer stack with the service's layer metadata (front to back). */
  layers: ItemLayer[];
  /** How the item's own media was uploaded. */
  upload: { mode: string; file_id: string | null } | null;
  /**
   * The generations (or creates) this item had before the one above, oldest first: each one that
   * failed and was tried again — a retryable failure resubmitted within a run, a failure a later run
   * retried, a create of unknown outcome submitted again with --resubmit-unknown. Empty when the item
   * had no other attempt.
   */
  earlier_attempts: ItemAttempt[];
  /** Per stage that ran, in pipeline order. */
  timings: Partial<Record<StageName, StageTimingJson>>;
  /** With a journal: what it decided for the item in the run that wrote this file. Absent without one. */
  journal?: JournalNoteJson;
  /**
   * A chain rule's item: every step, parents first, with its request; the fields above are those of
   * the step the item is at (its last, or its first failed step). Absent for a single-request rule.
   */
  steps?: StepJson[];
}

/** What a chain step whose outputs were not downloaded says of them (StepJson.note). */
export const STEP_NOT_DOWNLOADED_NOTE =
  'outputs not downloaded (an intermediate step): add download: true to the step to keep them';

/** What report.html draws in place of the picture of such a step (its note is told beside the chain). */
export const STEP_NOT_DOWNLOADED_LABEL = 'not downloaded';

/** One step of an item (ResultJson.steps, report.json's `steps` of a chain). */
export interface StepJson {
  name: string;
  /**
   * planned, uploaded, submitted, completed, downloaded or failed; `succeeded` for a step whose
   * generation succeeded and whose outputs were not downloaded (`download: false`, see `note`).
   */
  state: string;
  /** For a `succeeded` step, STEP_NOT_DOWNLOADED_NOTE; null otherwise. */
  note: string | null;
  /** The steps whose outputs it uses (a chain's); empty for a single request. */
  after: string[];
  /** Its outputs are downloaded (false: an intermediate step not asked for, see the recipe's `download`). */
  download: boolean;
  generation_id: string | null;
  request_id: string | null;
  failure_code: string | null;
  /** Why the step failed (its own failure, or `not run: step '<parent>' failed`); null otherwise. */
  reason: string | null;
  outputs: string[];
  composite: string | null;
  attempts: number;
  earlier_attempts: ItemAttempt[];
}

/**
 * A step's state as told: a step done without its outputs downloaded (an intermediate step not asked
 * for) is `succeeded`, with a note, not `downloaded`.
 */
export function stepStateJson(step: StepRecord): { state: string; note: string | null } {
  return step.state === 'downloaded' && step.download === false
    ? { state: 'succeeded', note: STEP_NOT_DOWNLOADED_NOTE }
    : { state: step.state, note: null };
}

/** The step records of an item as JSON (see StepJson). */
export function stepsJson(item: Pick<Item, 'steps'>, opts: { request?: boolean } = {}): StepJson[] {
  return item.steps.map((s) => ({
    name: s.name,
    ...stepStateJson(s),
    after: [...(s.after ?? [])],
    download: s.download ?? true,
    generation_id: s.generationId,
    request_id: s.requestId,
    failure_code: s.generation?.failure_code ?? null,
    reason: s.reason ?? null,
    outputs: [...s.outputs],
    composite: s.composite,
    attempts: s.attempts,
    earlier_attempts: [...(s.earlierAttempts ?? [])],
    ...(opts.request ? { request: elideInlineData(recordedStepRequest(s, item.steps)) } : {}),
  }));
}

const MAX_DEPTH = 32;

/**
 * A deep copy of a request with every inline base64 `data` string (of an ImageRef) replaced by
 * `<N base64 characters elided>`, so result files never hold media bytes.
 *
 * @example elideInlineData({ source: { data: 'iVBORw0…', media_type: 'image/png' } })
 * // → { source: { data: '<1234 base64 characters elided>', media_type: 'image/png' } }
 */
export function elideInlineData<T>(value: T): T {
  const walk = (v: unknown, depth: number): unknown => {
    if (depth > MAX_DEPTH) return null;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) {
        out[k] =
          // A `data` starting with `$` is a pipeline placeholder (`$input`), not base64: kept as is.
          k === 'data' && typeof x === 'string' && !x.startsWith('$')
            ? `<${x.length} base64 characters elided>`
            : walk(x, depth + 1);
      }
      return out;
    }
    return v;
  };
  return walk(value, 0) as T;
}

/** The item's earlier attempts as reported (a copy, oldest first; empty when none). */
export function earlierAttemptsJson(item: Item): ItemAttempt[] {
  return (currentStep(item)?.earlierAttempts ?? []).map((a) => ({
    generation_id: a.generation_id,
    request_id: a.request_id,
    failure_code: a.failure_code,
    failure_reason: a.failure_reason,
  }));
}

/** The input file's facts as the sniff and check (and the journal's hash) recorded them; reads no file. */
export function inputFactsJson(item: Item): InputFactsJson {
  const media = item.media;
  // An empty contentHash is the journal's placeholder for an item admitted without hashing.
  const sha256 = item.contentHash || currentStep(item)?.upload?.sha256 || null;
  return {
    sha256,
    mime: item.sniff?.mime ?? null,
    bytes: media?.bytes ?? item.size,
    width: media?.width ?? null,
    height: media?.height ?? null,
    duration_s: media?.durationSeconds ?? null,
  };
}

/** Per stage that started: its ISO start time and duration, in pipeline order. */
export function timingsJson(item: Item): Partial<Record<StageName, StageTimingJson>> {
  const out: Partial<Record<StageName, StageTimingJson>> = {};
  for (const stage of STAGE_NAMES) {
    const t = item.timings[stage];
    if (!t) continue;
    out[stage] = {
      started_at: isoTime(t.started_at),
      duration_ms: t.finished_at === undefined ? null : Math.max(0, t.finished_at - t.started_at),
    };
  }
  return out;
}

/**
 * The content of an item's result.json (pure). Secrets are passed through `redact` (by default only
 * API-key- and bearer-shaped strings are masked).
 *
 * @example const json = buildResultJson(item, { redact: createRedactor([apiKey]) });
 */
export function buildResultJson(item: Item, opts: { redact?: Redact } = {}): ResultJson {
  const status = itemStatus(item);
  const step = currentStep(item);
  const generation = step?.generation ?? null;
  const result: ResultJson = {
    input: item.input,
    input_facts: inputFactsJson(item),
    place: itemPlace(item),
    status,
    item_state: item.state,
    reason: status === 'succeeded' ? null : item.reason,
    failed_stage: item.state === 'failed' ? item.failedAt : null,
    request: step
      ? elideInlineData(isChain(item) ? recordedStepRequest(step, item.steps) : step.request)
      : null,
    request_sent:
      !workReused(item) && ((step?.requestId ?? null) !== null || (step?.generationId ?? null) !== null),
    generation_id: step?.generationId ?? null,
    request_id: step?.requestId ?? null,
    state: generation?.state ?? null,
    failure_code: generation?.failure_code ?? null,
    failure_reason: generation?.failure_reason ?? (item.state === 'failed' ? item.reason : null),
    outputs: [...(step?.outputs ?? [])],
    composite: step?.composite ?? null,
    layers: step?.layers ?? [],
    upload: step?.upload ? { mode: step.upload.mode, file_id: step.upload.fileId } : null,
    earlier_attempts: earlierAttemptsJson(item),
    timings: timingsJson(item),
  };
  if (isChain(item)) result.steps = stepsJson(item, { request: true });
  if (item.journal) result.journal = journalNoteJson(item.journal);
  return redactDeep(result, opts.redact ?? redactShapes);
}

/**
 * Writes `<out>/<place>/result.json` atomically (tmp file + rename) and returns its path.
 *
 * @param outDir the batch's out dir
 * @param opts.redact masks the secrets the runner knows
 * @example await writeResultJson(item, '/data/out', { redact });
 */
export async function writeResultJson(
  item: Item,
  outDir: string,
  opts: { redact?: Redact } = {},
): Promise<string> {
  const path = join(itemFolder(outDir, item), RESULT_FILE);
  await writeFileAtomic(path, `${JSON.stringify(buildResultJson(item, opts), null, 2)}\n`);
  return path;
}
