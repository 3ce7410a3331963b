/**
 * An item as report.html carries it: a small JSON object per item, in the page's data, from which the
 * page's script (page-script.ts) draws the item's card — and the writer the cards shown without
 * JavaScript, through the same function. Everything an item's card shows is here and only that: what
 * the page shows of an item is added here (and drawn in page-script.ts's `card`).
 */
import { join } from 'node:path';
import { currentStep, type Item, STAGE_NAMES } from '../item.ts';
import { formatBytes } from '../progress/format.ts';
import type { Redact } from '../progress/redact.ts';
import type { ReportItem } from './report-json.ts';
import { STEP_NOT_DOWNLOADED_LABEL, type StepJson } from './result-json.ts';
import { type Thumbnails, thumbKindOfName } from './thumbnails.ts';

/** Characters of a prompt shown on an item's card. */
export const PROMPT_SHOWN_CHARS = 300;

/** An output of a card: [path relative to the out dir, its thumbnail or 0, flags (OUT_VIDEO | OUT_SMALL)]. */
export type PageOutput = [string, string | 0, number];
/** The output is a video (drawn with a ▶). */
export const OUT_VIDEO = 1;
/** The output is a layer beside its composite (drawn small). */
export const OUT_SMALL = 2;

/**
 * A step of a chain: [name, state, its first output (or composite) relative to the out dir or 0, that
 * file's thumbnail or 0, flags (OUT_VIDEO), what is drawn in place of a picture when it has no file
 * (a short label: "failed: <why>" (cut to the box), "not downloaded", its state) or 0, its parents
 * ("animate") when they are not just the step before it or 0, and its note with its generation
 * ("outputs not downloaded …: add download: true … (generation …)"), told in the card's facts]. The last
 * two are left off when empty.
 */
export type PageStep = [string, string, string | 0, string | 0, number, string | 0, (string | 0)?, string?];

/** An earlier attempt: [generation_id, request_id, failure_code, failure_reason]. */
export type PageAttempt = [string | null, string | null, string | null, string | null];

/** One item of the page (absent keys: nothing to show). */
export interface PageRow {
  /** status */
  s: ReportItem['status'];
  /** input path */
  i: string;
  /** out folder, when not the input path */
  p?: string;
  /** reason (failed, skipped, not processed) */
  r?: string;
  /** failure group (see failure-groups.ts), when failed */
  g?: number;
  /** stage that failed it */
  st?: string;
  /** failure_code */
  fc?: string;
  /** generation id */
  gen?: string;
  /** request id */
  rq?: string;
  /** the journal's word on it */
  j?: string;
  /** time from its first stage's start to its last stage's end, in ms */
  d?: number;
  /** 1: it has a result.json in its out folder */
  res?: 1;
  /** a chain's step the request, prompt, generation and request id are of (its last, or its failed one) */
  sn?: string;
  /** the request: "type · model" */
  q?: string;
  /** the prompt shown (the start of it, `…` when longer) */
  pr?: string;
  /** 1: the input is a prompt file (its prompt is drawn as the input) */
  pi?: 1;
  /** the input's thumbnail */
  it?: string;
  /** the input's caption ("input · 16×12 · 100 B") */
  ic?: string;
  /** 1: the input is a video */
  iv?: 1;
  /** the placeholder drawn when the input has no thumbnail */
  ph?: string;
  /** the composite of a layer stack: [path, thumbnail or 0] */
  c?: [string, string | 0];
  /** the outputs (not of a chain: its steps carry them) */
  o?: PageOutput[];
  /** a chain's steps, parents first (absent for a single request) */
  ch?: PageStep[];
  /** the earlier attempts */
  a?: PageAttempt[];
}

function shown(text: string): string {
  return text.length > PROMPT_SHOWN_CHARS ? `${text.slice(0, PROMPT_SHOWN_CHARS)}…` : text;
}

/** From the item's first stage start to its last stage end; null before it started or while a stage runs. */
export function itemTime(item: Item | undefined): number | null {
  if (!item) return null;
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const s of STAGE_NAMES) {
    const t = item.timings[s];
    if (!t) continue;
    if (t.finished_at === undefined) return null;
    start = Math.min(start, t.started_at);
    end = Math.max(end, t.finished_at);
  }
  return Number.isFinite(start) ? end - start : null;
}

function inputPart(row: PageRow, item: Item | undefined, line: ReportItem, thumbs: Thumbnails): void {
  const request = item ? currentStep(item)?.request : undefined;
  const prompt = typeof request?.prompt === 'string' ? request.prompt : null;
  if (item?.inputAs === 'prompt' || (item?.sniff?.kind === 'text' && prompt !== null)) {
    row.pi = 1;
    row.pr = shown(prompt ?? '');
    return;
  }
  const facts: string[] = ['input'];
  if (item?.media?.width && item.media.height) facts.push(`${item.media.width}×${item.media.height}`);
  if (item?.media?.durationSeconds) facts.push(`${item.media.durationSeconds.toFixed(1)}s`);
  if (item) facts.push(formatBytes(item.size));
  row.ic = facts.join(' · ');
  if ((item?.sniff?.kind ?? thumbKindOfName(line.input)) === 'video') row.iv = 1;
  const thumb = item ? thumbs.get(item.absPath) : undefined;
  if (thumb) row.it = thumb;
  else
    row.ph =
      item?.size === 0 ? 'empty file' : `no preview (${item?.sniff ? item.sniff.mime : 'unknown type'})`;
  if (prompt) row.pr = shown(prompt);
}

function outputsPart(
  row: PageRow,
  item: Item | undefined,
  line: ReportItem,
  outDir: string,
  thumbs: Thumbnails,
): void {
  const thumbOf = (rel: string) => thumbs.get(join(outDir, ...rel.split('/'))) ?? 0;
  if (line.composite) row.c = [line.composite, thumbOf(line.composite)];
  const layers = new Set(((item && currentStep(item)?.layers) ?? []).map((l) => l.path));
  if (line.outputs.length === 0) return;
  row.o = line.outputs.map((rel) => {
    let flags = thumbKindOfName(rel) === 'video' ? OUT_VIDEO : 0;
    if (layers.has(rel) && line.composite !== null) flags |= OUT_SMALL;
    return [rel, thumbOf(rel), flags];
  });
}

/** What a step with no file to show is drawn as, in a thumbnail's box. */
function stepPlaceholder(step: StepJson): string {
  if (step.state === 'failed') return `failed: ${step.reason ?? step.failure_code ?? 'failed'}`;
  // The only note: its outputs were not downloaded (told in full by stepNote).
  if (step.note !== null) return STEP_NOT_DOWNLOADED_LABEL;
  return step.state;
}

/** What the card says of a step besides its picture: its note, with the generation it is of. */
function stepNote(step: StepJson): string | null {
  return step.note === null ? null : `${step.note} (generation ${step.generation_id ?? '?'})`;
}

/** A chain's steps as the card draws them, left to right (the line's, already redacted). */
function chainPart(row: PageRow, steps: readonly StepJson[], outDir: string, thumbs: Thumbnails): void {
  row.ch = steps.map((step, k) => {
    const rel = step.composite ?? step.outputs[0];
    const thumb = rel ? (thumbs.get(join(outDir, ...rel.split('/'))) ?? 0) : 0;
    const video = rel && thumbKindOfName(rel) === 'video' ? OUT_VIDEO : 0;
    const s: PageStep = [step.name, step.state, rel ?? 0, thumb, video, rel ? 0 : stepPlaceholder(step)];
    const before = k === 0 ? [] : [steps[k - 1]!.name];
    const parents = step.after.join('\n') === before.join('\n') ? 0 : step.after.join(', ') || 'input';
    const note = stepNote(step);
    if (note !== null) s.push(parents, note);
    else if (parents !== 0) s.push(parents);
    return s;
  });
}

/**
 * The page's row of one item (its report line and the item it came from): the one place where what a
 * card shows is taken from the item. What it takes from the item besides the line (the request, its
 * prompt and id) is passed through `redact`; the line is taken as it is (already redacted).
 *
 * @param group the item's failure group (failure-groups.ts), when it failed
 */
export function pageRow(
  line: ReportItem,
  item: Item | undefined,
  thumbs: Thumbnails,
  outDir: string,
  redact: Redact,
  group?: number,
): PageRow {
  const row: PageRow = { s: line.status, i: line.input };
  if (line.place !== line.input) row.p = line.place;
  if (line.reason) row.r = line.reason;
  if (group !== undefined) row.g = group;
  if (line.status === 'failed' && line.stage) row.st = line.stage;
  if (line.failure_code) row.fc = line.failure_code;
  if (line.generation_id) row.gen = line.generation_id;
  const step = item ? currentStep(item) : undefined;
  if (step?.requestId) row.rq = step.requestId;
  if (line.journal) row.j = line.journal;
  const took = itemTime(item);
  if (took !== null) row.d = took;
  if (line.result) row.res = 1;
  const r = step?.request;
  if (r) row.q = [r.type, r.model].filter((v): v is string => typeof v === 'string').join(' · ') || 'request';
  inputPart(row, item, line, thumbs);
  if (line.steps) {
    if (step) row.sn = step.name;
    chainPart(row, line.steps, outDir, thumbs);
  } else outputsPart(row, item, line, outDir, thumbs);
  if (row.pr) row.pr = redact(row.pr);
  if (row.q) row.q = redact(row.q);
  if (row.sn) row.sn = redact(row.sn);
  if (row.rq) row.rq = redact(row.rq);
  if (line.earlier_attempts.length > 0) {
    row.a = line.earlier_attempts.map((a) => [
      a.generation_id,
      a.request_id,
      a.failure_code,
      a.failure_reason,
    ]);
  }
  return row;
}

/**
 * JSON for inside a `<script type="application/json">`: `<` is written `\u003c` (no `</script>` nor
 * `<!--` can appear), and U+2028 / U+2029 escaped too; JSON.parse reads back the same value.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(
    /[<\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
