/**
 * An item as the reports read it: what report.json, report.html (its cards, stage table, timeline and
 * thumbnails) take from a finished item, and nothing else — the generation's body, the upload, the
 * request's other fields and the earlier steps are left out (the step's upload and the item's
 * failure class, both small, are kept for the batch's result). The batch keeps each finished item only
 * as this view, so its memory per item stays small however large the batch.
 */
import { isChain } from '../chain.ts';
import { currentStep, type Item, type StepRecord } from '../item.ts';

/** Characters of a prompt the reports can show, plus one so they still know it was longer. */
export const REPORT_PROMPT_CHARS = 301;

function requestView(request: Record<string, unknown>): Record<string, unknown> {
  const view: Record<string, unknown> = {};
  if (request.type !== undefined) view.type = request.type;
  if (request.model !== undefined) view.model = request.model;
  if (typeof request.prompt === 'string') view.prompt = request.prompt.slice(0, REPORT_PROMPT_CHARS);
  return view;
}

function stepView(step: StepRecord): StepRecord {
  const view: StepRecord = {
    name: step.name,
    state: step.state,
    request: requestView(step.request),
    upload: step.upload,
    generationId: step.generationId,
    requestId: step.requestId,
    generation: step.generation
      ? {
          state: step.generation.state,
          failure_code: step.generation.failure_code,
          failure_reason: step.generation.failure_reason,
        }
      : null,
    outputs: step.outputs,
    composite: step.composite,
    layers: step.layers ?? [],
    attempts: step.attempts,
  };
  if (step.earlierAttempts?.length) view.earlierAttempts = step.earlierAttempts;
  // A chain step's place in its chain and why it failed (small).
  if (step.after !== undefined) view.after = step.after;
  if (step.download !== undefined) view.download = step.download;
  if (step.reason !== undefined) view.reason = step.reason;
  if (step.failure !== undefined) view.failure = step.failure;
  if (step.failedAt !== undefined) view.failedAt = step.failedAt;
  return view;
}

/**
 * The item as the reports read it (see the module comment): its current step only (a chain's every
 * step), the request's
 * type, model and the start of its prompt.
 *
 * @example batch.keep(entry, reportView(finished))
 */
export function reportView(item: Item): Item {
  const step = currentStep(item);
  const view: Item = {
    input: item.input,
    absPath: item.absPath,
    size: item.size,
    mtimeMs: item.mtimeMs,
    state: item.state,
    reason: item.reason,
    failedAt: item.failedAt,
    sniff: item.sniff,
    media: item.media,
    rule: null,
    inputAs: item.inputAs,
    // A chain item keeps every step (the reports show the chain); any other, its current step.
    steps: isChain(item) ? item.steps.map(stepView) : step ? [stepView(step)] : [],
    timings: item.timings,
  };
  if (item.step !== undefined) view.step = item.step;
  if (item.place !== undefined) view.place = item.place;
  if (item.journal) view.journal = item.journal;
  if (item.failure !== undefined) view.failure = item.failure;
  return view;
}
