/**
 * Stage plan (sniffed → planned): the request for one file. The first recipe rule whose glob matches
 * the file's relative path decides; the file's sidecar (`<file>.json`) is merged over the rule's
 * request; the file takes its `input_as` position (its text becomes the prompt, its media the
 * placeholder `{ file_id: '$input' }`); then src/spec validates the request as the service would.
 *
 * Plan runs before check: it is cheap (no decoding), it skips files no rule claims before anything
 * reads them in full, and it tells check which position the file takes (the `<path>` of the service's
 * 413 texts) and whether `video.edit` is used (the 18 s source limit).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readStart, SNIFF_HEAD_BYTES } from '../../media/index.ts';
import { PROMPT_LENGTH_DETAIL, withValidModels } from '../../spec/index.ts';
import { type InputAs, type Item, MAIN_STEP, type MediaKind, newStep, type StepRecord } from '../item.ts';
import { legacyInputAsOf, legacyInputAsProblem, legacyOperationOf } from '../legacy-request.ts';
import { findRule, type RecipeRule } from '../recipe.ts';
import {
  defaultInputAs,
  inputSitePath,
  type Json,
  kindForPosition,
  mergeRequest,
  occupiedBy,
  placeInput,
  requestType,
  validatePlanned,
} from '../recipe-request.ts';
import { readSidecar, SIDECAR_SUFFIX } from '../recipe-sidecar.ts';
import { advance, expectState, failItem, type StageContext, skipItem } from '../stage.ts';
import { EMPTY_SNIFF } from './sniff.ts';

/**
 * Largest prompt file read. A prompt is at most 6000 characters (24,000 bytes of UTF-8 at worst); a
 * bigger file gets the service's prompt-length text without being read.
 */
export const PROMPT_FILE_MAX_BYTES = 64 * 1024;

type Sniff = NonNullable<Item['sniff']>;

function ruleName(rule: RecipeRule): string {
  return `rules[${rule.index}] "${rule.match}"`;
}

function describeKind(sniff: Sniff): string {
  switch (sniff.kind) {
    case 'image':
      return `an image (${sniff.mime})`;
    case 'video':
      return `a video (${sniff.mime})`;
    case 'text':
      return 'text';
    default:
      return sniff.mime;
  }
}

function wanted(kind: MediaKind): string {
  return kind === 'image' ? 'an image' : kind === 'video' ? 'a video' : 'a UTF-8 text file';
}

/**
 * The content hash of a file refused at plan that is no larger than the sniff's head (already read
 * once, so cheap to read again), for its result.json; a larger one is not read for a refusal.
 */
async function smallFileHash(item: Item): Promise<Pick<Item, 'contentHash'>> {
  if (item.size <= 0 || item.size > SNIFF_HEAD_BYTES) return {};
  try {
    return {
      contentHash: createHash('sha256')
        .update(await readFile(item.absPath))
        .digest('hex'),
    };
  } catch {
    return {};
  }
}

/** What to do with a file genpipe cannot send. */
function leaveOut(input: string): string {
  return `genpipe sends images, videos and UTF-8 text only: leave it out with --exclude '${input}' or narrow the rule's match`;
}

/**
 * The service's `detail` for a planned request, with where its cause came from: the prompt's length
 * (or its absence, or the sidecar's `"prompt": null`), or the sidecar's fields the detail names.
 */
function explainDetail(
  detail: string,
  o: { request: Json; inputAs: InputAs; rule: RecipeRule; sidecar: Json | null; sidecarName: string },
): string {
  const side = o.sidecar ?? {};
  if (detail === PROMPT_LENGTH_DETAIL) {
    const prompt = o.request.prompt;
    if (typeof prompt === 'string') {
      const n = [...prompt].length;
      const what =
        o.inputAs === 'prompt'
          ? 'the prompt file'
          : Object.hasOwn(side, 'prompt')
            ? `the sidecar ${o.sidecarName}'s prompt`
            : 'the prompt';
      return PLAN_REASONS.prompt(
        detail,
        prompt.trim() === '' ? `${what} is empty or holds only whitespace` : `${what} holds ${n} characters`,
      );
    }
    if (side.prompt === null)
      return PLAN_REASONS.prompt(
        detail,
        `there is no prompt: the sidecar ${o.sidecarName} removes it with "prompt": null`,
      );
    return PLAN_REASONS.prompt(
      detail,
      `there is no prompt: ${ruleName(o.rule)} gives none, and ${o.sidecar ? `the sidecar ${o.sidecarName} neither` : 'no sidecar'}`,
    );
  }
  const named = Object.keys(side).filter((k) => new RegExp(`\\b${k}\\b`, 'i').test(detail));
  return named.length > 0 ? PLAN_REASONS.fromSidecar(detail, named, o.sidecarName) : detail;
}

/** Reasons plan gives, besides the service's own `detail` texts. */
export const PLAN_REASONS = {
  noRule: 'matches no recipe rule',
  empty: 'file is empty',
  unknownType: (rule: RecipeRule, input: string): string =>
    `unknown type: the bytes are not an image, a video or UTF-8 text (matched ${ruleName(rule)}); ${leaveOut(input)}`,
  unsupportedType: (mime: string, rule: RecipeRule, input: string): string =>
    `unknown type: ${mime} is not an image, a video or a text file (matched ${ruleName(rule)}); ${leaveOut(input)}`,
  /** The service's prompt text, with why this file's prompt breaks it. */
  prompt: (detail: string, why: string): string => `${detail} (${why})`,
  /** A service detail about a field the file's sidecar set (or removed with null). */
  fromSidecar: (detail: string, fields: readonly string[], sidecar: string): string =>
    `${detail} (${fields.join(', ')} set by the sidecar ${sidecar})`,
  /** `what`: the request's `type '<type>'`, or a legacy request's `operation '<operation>'`. */
  wrongKind: (sniff: Sniff, rule: RecipeRule, site: string, what: string, wants: MediaKind): string =>
    `wrong type: the file is ${describeKind(sniff)}, but ${ruleName(rule)} uses it as ${site === 'prompt' ? 'the prompt' : site} of ${what}, which takes ${wanted(wants)}`,
  occupied: (field: string, by: string, inputAs: InputAs, defaulted: boolean): string =>
    `${by} sets ${field}, but ${defaulted ? `the file goes there (input_as defaults to '${inputAs}')` : `input_as '${inputAs}' puts the file there`}`,
  notUtf8: 'prompt file is not valid UTF-8 text',
} as const;

/**
 * The trimmed text of a prompt file (a leading BOM dropped), or the reason it cannot be a prompt. Reads
 * at most {@link PROMPT_FILE_MAX_BYTES} + 1 bytes.
 */
async function readPromptText(
  path: string,
): Promise<{ ok: true; text: string } | { ok: false; reason: string }> {
  const start = await readStart(path, PROMPT_FILE_MAX_BYTES + 1);
  if (!start.isFile)
    throw Object.assign(new Error(`EISDIR: not a regular file, '${path}'`), { code: 'EISDIR' });
  const bytes = start.bytes;
  if (bytes.length > PROMPT_FILE_MAX_BYTES) return { ok: false, reason: PROMPT_LENGTH_DETAIL };
  if (bytes.length === 0) return { ok: false, reason: PLAN_REASONS.empty };
  if (bytes.includes(0)) return { ok: false, reason: PLAN_REASONS.notUtf8 };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return { ok: false, reason: PLAN_REASONS.notUtf8 };
  }
  return { ok: true, text: text.trim() };
}

/**
 * Plans the item's request and advances it to `planned` with `rule`, `inputAs` and `request` set.
 * Skips it when no rule matches ("matches no recipe rule"). Fails it when the file is empty, of an
 * unknown type or of the wrong kind for its position, when its sidecar is broken, or when the request
 * is one the service would reject (the reason is then the service's exact `detail`).
 *
 * @example const next = await plan(sniffedItem, ctx); // next.request.source → { file_id: '$input' }
 */
export async function plan(item: Item, ctx: StageContext): Promise<Item> {
  expectState(item, 'plan', 'sniffed');
  ctx.signal.throwIfAborted();
  const sniff = item.sniff ?? EMPTY_SNIFF;
  const rule = findRule(ctx.recipe, item.input);
  if (!rule) return skipItem(item, PLAN_REASONS.noRule);
  const matched = { rule: { index: rule.index, match: rule.match } };
  const fail = async (reason: string, patch: Partial<Item> = {}) =>
    failItem(item, 'plan', reason, { ...matched, ...(await smallFileHash(item)), ...patch });

  if (sniff.mime === EMPTY_SNIFF.mime) return fail(PLAN_REASONS.empty);
  if (sniff.kind === 'other') {
    return fail(
      sniff.ext
        ? PLAN_REASONS.unsupportedType(sniff.mime, rule, item.input)
        : PLAN_REASONS.unknownType(rule, item.input),
    );
  }

  const sidecarName = `${item.input}${SIDECAR_SUFFIX}`;
  const sidecar = await readSidecar(join(ctx.inputDir, sidecarName), sidecarName, ctx.recipe.references);
  if (!sidecar.ok) return fail(sidecar.reason);
  const { steps: stepFields, ...fields } = sidecar.fields ?? {};
  if (stepFields !== undefined && rule.steps === null) {
    return fail(`sidecar ${sidecarName}: steps: the file's rule has no steps (${ruleName(rule)})`);
  }
  const request = sidecar.fields ? mergeRequest(rule.request, fields) : structuredClone(rule.request);

  const type = requestType(request);
  const defaulted = rule.inputAs === null;
  const inputAs: InputAs =
    rule.inputAs ?? legacyInputAsOf(request) ?? (sniff.kind === 'text' ? 'prompt' : defaultInputAs(type));
  const site = inputSitePath(inputAs, request);
  const legacyInput = legacyInputAsProblem(request, inputAs);
  if (legacyInput !== null) return fail(`${legacyInput} (${ruleName(rule)})`, { inputAs });
  const wants = kindForPosition(inputAs, type);
  if (sniff.kind !== wants) {
    const op = legacyOperationOf(request);
    const what = op === null ? `type '${type}'` : `operation '${op}'`;
    return fail(PLAN_REASONS.wrongKind(sniff, rule, site, what, wants), { inputAs });
  }

  const occupied = occupiedBy(inputAs, request);
  if (occupied !== null) {
    const by = occupiedBy(inputAs, rule.request) !== null ? ruleName(rule) : `sidecar ${sidecarName}`;
    return fail(PLAN_REASONS.occupied(occupied, by, inputAs, defaulted), { inputAs });
  }

  let prompt: string | undefined;
  if (inputAs === 'prompt') {
    ctx.signal.throwIfAborted();
    const read = await readPromptText(item.absPath).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EACCES') {
        return { ok: false as const, reason: 'file not found or not readable' };
      }
      throw err;
    });
    if (!read.ok) return fail(read.reason, { inputAs });
    prompt = read.text;
  }
  const planned = placeInput(request, inputAs, {
    kind: sniff.kind,
    mime: sniff.mime,
    prompt,
    mediaUrl: rule.mediaUrl,
  });
  if (rule.steps !== null) {
    const chain = planChain(rule, planned, (stepFields ?? {}) as Record<string, Json>, sidecarName);
    if (typeof chain === 'string') return fail(chain, { inputAs });
    return advance(item, 'planned', { ...matched, inputAs, steps: chain, step: chain[0]!.name });
  }
  const result = validatePlanned(planned);
  const steps = [newStep(MAIN_STEP, planned)];
  if (!result.ok) {
    const detail = explainDetail(withValidModels(result.detail), {
      request: planned,
      inputAs,
      rule,
      sidecar: sidecar.fields,
      sidecarName,
    });
    return fail(detail, { inputAs, steps });
  }
  return advance(item, 'planned', { ...matched, inputAs, steps });
}

/**
 * The steps of a chain rule's item, parents first: the first step written holds the file (`inputPlaced`,
 * the sidecar's top-level fields merged), every other its request with the sidecar's `steps.<name>`
 * merged; each validated as the service would. Or the reason the item fails, naming the step.
 */
function planChain(
  rule: RecipeRule,
  inputPlaced: Json,
  stepFields: Record<string, Json>,
  sidecarName: string,
): StepRecord[] | string {
  const steps = rule.steps ?? [];
  const unknown = Object.keys(stepFields).filter((n) => !steps.some((s) => s.name === n));
  if (unknown.length > 0) {
    return `sidecar ${sidecarName}: steps.${unknown[0]}: no step of that name in ${ruleName(rule)} (steps: ${steps.map((s) => s.name).join(', ')})`;
  }
  const out: StepRecord[] = [];
  for (const step of steps) {
    const own = stepFields[step.name];
    const request =
      step.index === 0 ? inputPlaced : own ? mergeRequest(step.request, own) : structuredClone(step.request);
    const merged = step.index === 0 && own ? mergeRequest(request, own) : request;
    const result = validatePlanned(merged);
    if (!result.ok) return `step '${step.name}': ${withValidModels(result.detail)}`;
    out.push({ ...newStep(step.name, merged), after: [...step.after], download: step.download });
  }
  return out;
}
