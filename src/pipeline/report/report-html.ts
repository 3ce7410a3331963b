/**
 * `<out>/report.html`: one page a person would rather look at than report.json. Input and output
 * thumbnails side by side, failures first and loud, skipped and unprocessed files with their reasons,
 * the folder's entries that are not inputs (ignored) with theirs, totals, time per stage and a timeline of the batch. No scripts and no external assets (a CSP forbids
 * both); thumbnails live in `<out>/.thumbs/` and are referenced relatively. Every user-supplied string
 * (file names, prompts, reasons) is escaped, and the page passes through the redactor.
 */

import { join } from 'node:path';
import { isChain } from '../chain.ts';
import type { ReportStatus } from '../events.ts';
import { currentStep, type Item, STAGE_NAMES, type StageName } from '../item.ts';
import { formatBytes, formatDuration } from '../progress/format.ts';
import { type Redact, redactDeep, redactShapes } from '../progress/redact.ts';
import { esc, relUrl } from './html-escape.ts';
import { ignoredReasonsText, type ReportIgnored } from './ignored.ts';
import { itemPlace } from './item-paths.ts';
import { heldEntries, type ReportEntry } from './report-entries.ts';
import {
  type BatchReport,
  entryStatus,
  journalCountsText,
  type ReportHead,
  type ReportItem,
  type ReportMeta,
  reportHead,
  reportItem,
  uniqueItems,
} from './report-json.ts';
import { makeThumbnails, type Thumbnails, thumbKindOfName } from './thumbnails.ts';
import { STAGE_COLORS, TimelineRows, timelineLegend } from './timeline-svg.ts';
import { writeFileAtomic } from './write-atomic.ts';

/** File name of the HTML report, at the top of the out dir. */
export const REPORT_HTML_FILE = 'report.html';

/** Seconds between reloads of the page while the batch runs (none once it finished). */
export const REPORT_REFRESH_SECONDS = 5;

/** Characters of a prompt shown on an item's card. */
const PROMPT_SHOWN_CHARS = 300;

/** What the page is rendered from. */
export interface ReportHtmlInput {
  report: BatchReport;
  /** The batch's items (for timings, requests, media facts and input paths). */
  items: readonly Item[];
  /** Source file (absolute) → thumbnail path relative to the out dir. */
  thumbs: Thumbnails;
  /** The out dir (to find output files in `thumbs`). */
  outDir: string;
  /** Where the batch read from, shown in the header. */
  inputDir?: string;
  /** Whether the batch ran against the embedded emulator (said in the header). */
  emulator?: boolean;
  /** The time the page is rendered at (ms since the epoch); the end of the timeline while running. */
  now?: number;
  redact?: Redact;
}

const STATUS_LABEL: Record<ReportItem['status'], string> = {
  succeeded: 'succeeded',
  failed: 'failed',
  skipped: 'skipped',
  unprocessed: 'not processed',
  pending: 'in progress',
};

const CSS = `
:root{--ok:#2e7d32;--bad:#c62828;--warn:#b26a00;--skip:#6b6b6b;--run:#1565c0;--line:#e3e3e3;--bg:#fafafa;--muted:#666}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1d;background:var(--bg)}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:32px 0 10px}
.muted{color:var(--muted)}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.banner{margin:16px 0;padding:12px 16px;border-radius:8px;font-weight:600}
.banner.stopped{background:#fdecea;border:1px solid #f5c2c0;color:var(--bad)}
.banner.emulator{background:#fff4e0;border:1px solid #f3d19e;color:var(--warn)}
.banner.running{background:#e8f0fe;border:1px solid #c3d5f7;color:var(--run)}
.banner.journal{background:#fff;border:1px solid var(--line);color:#333;font-weight:400}
.totals{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
.total{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px 16px;min-width:110px}
.total b{display:block;font-size:24px;line-height:1.1}
.total.succeeded b{color:var(--ok)}.total.failed b{color:var(--bad)}.total.skipped b{color:var(--skip)}
.total.unprocessed b{color:var(--warn)}.total.pending b{color:var(--run)}
.total.failed.some{border-color:#f5c2c0;background:#fdecea}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line);border-radius:8px;overflow:hidden}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#f3f3f3;font-weight:600}
table.failures{border-color:#f5c2c0}
table.failures th{background:#fdecea;color:var(--bad)}
td.reason{color:var(--bad);font-weight:500}
.badge{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap}
.badge.succeeded{background:var(--ok)}.badge.failed{background:var(--bad)}.badge.skipped{background:var(--skip)}
.badge.unprocessed{background:var(--warn)}.badge.pending{background:var(--run)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:14px}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.card.failed{border-color:#f5c2c0;box-shadow:inset 4px 0 0 var(--bad)}
.card header{display:flex;gap:8px;align-items:center;margin-bottom:8px}
.card .name{font-weight:600;overflow-wrap:anywhere}
.media{display:flex;gap:10px;align-items:flex-start;flex-wrap:wrap}
figure{margin:0;display:flex;flex-direction:column;align-items:center;gap:3px;max-width:130px}
figure img,.ph,.prompt-in{width:120px;height:120px;object-fit:contain;border-radius:6px;border:1px solid var(--line);
 background-color:#fff;background-image:linear-gradient(45deg,#eee 25%,transparent 25%),linear-gradient(-45deg,#eee 25%,transparent 25%),linear-gradient(45deg,transparent 75%,#eee 75%),linear-gradient(-45deg,transparent 75%,#eee 75%);
 background-size:12px 12px;background-position:0 0,0 6px,6px -6px,-6px 0}
figure.small img,figure.small .ph{width:64px;height:64px}
figcaption{font-size:11.5px;color:var(--muted);text-align:center;overflow-wrap:anywhere}
.ph{display:flex;align-items:center;justify-content:center;text-align:center;color:var(--muted);font-size:12px;background:#f1f1f1;padding:6px}
.prompt-in{background:#fffdf5;font-size:11.5px;padding:6px;overflow:hidden;text-align:left;white-space:pre-wrap;overflow-wrap:anywhere}
.arrow{align-self:center;font-size:20px;color:#aaa;padding:0 2px}
.play{font-size:11px;color:var(--run)}
.reason{margin:8px 0 0;color:var(--bad);font-weight:500;overflow-wrap:anywhere}
.attempts{margin:6px 0 0;font-size:12px;color:var(--muted);overflow-wrap:anywhere}
.card.skipped .reason,.card.unprocessed .reason{color:var(--warn)}
dl.facts{display:grid;grid-template-columns:auto 1fr;gap:2px 10px;margin:10px 0 0;font-size:12.5px}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
.links{margin-top:6px;font-size:12.5px}
a{color:var(--run)}
.timeline-wrap{background:#fff;border:1px solid var(--line);border-radius:8px;padding:10px;overflow-x:auto}
svg.timeline{display:block;font:11px system-ui,sans-serif}
svg .grid{stroke:#ececec}
svg .tick{fill:#777;text-anchor:middle}
svg .label{fill:#333;text-anchor:end}
svg .label.failed{fill:#c62828;font-weight:600}
svg rect.running{opacity:.55}
.legend{display:flex;flex-wrap:wrap;gap:12px;list-style:none;padding:0;margin:0 0 8px;font-size:12.5px}
.swatch{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}
footer{margin:32px 0 8px;color:var(--muted);font-size:12px}
`;

function iso(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/** The median of values sorted ascending. */
function median(v: readonly number[]): number {
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** The p-th percentile of values sorted ascending. */
function percentile(v: readonly number[], p: number): number {
  return v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]!;
}

function badge(status: ReportItem['status']): string {
  return `<span class="badge ${status}">${esc(STATUS_LABEL[status])}</span>`;
}

function base(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** An image thumbnail figure, or a placeholder naming what the file is. */
function figure(
  thumb: string | undefined,
  alt: string,
  caption: string,
  opts: { href?: string; video?: boolean; small?: boolean; placeholder?: string } = {},
): string {
  const img = thumb
    ? `<img src="${relUrl(thumb)}" alt="${esc(alt)}" loading="lazy">`
    : `<div class="ph">${esc(opts.placeholder ?? 'no preview')}</div>`;
  const linked = opts.href ? `<a href="${relUrl(opts.href)}">${img}</a>` : img;
  const play = opts.video ? '<span class="play">▶ video</span>' : '';
  return `<figure${opts.small ? ' class="small"' : ''}>${linked}${play}<figcaption>${esc(caption)}</figcaption></figure>`;
}

function inputFigure(item: Item | undefined, line: ReportItem, thumbs: Thumbnails): string {
  const request = item ? currentStep(item)?.request : undefined;
  const prompt = typeof request?.prompt === 'string' ? request.prompt : null;
  if (item?.inputAs === 'prompt' || (item?.sniff?.kind === 'text' && prompt !== null)) {
    const text = prompt ?? '';
    const shown = text.length > PROMPT_SHOWN_CHARS ? `${text.slice(0, PROMPT_SHOWN_CHARS)}…` : text;
    return `<figure><div class="prompt-in">${esc(shown)}</div><figcaption>input · prompt file</figcaption></figure>`;
  }
  const facts: string[] = ['input'];
  const kind = item?.sniff?.kind ?? thumbKindOfName(line.input);
  if (item?.media?.width && item.media.height) facts.push(`${item.media.width}×${item.media.height}`);
  if (item?.media?.durationSeconds) facts.push(`${item.media.durationSeconds.toFixed(1)}s`);
  if (item) facts.push(formatBytes(item.size));
  const thumb = item ? thumbs.get(item.absPath) : undefined;
  const what = item?.sniff ? item.sniff.mime : 'unknown type';
  return figure(thumb, `input ${line.input}`, facts.join(' · '), {
    video: kind === 'video',
    placeholder: item?.size === 0 ? 'empty file' : `no preview (${what})`,
  });
}

function outputFigures(item: Item | undefined, line: ReportItem, outDir: string, thumbs: Thumbnails): string {
  const figs: string[] = [];
  const thumbOf = (rel: string) => thumbs.get(join(outDir, ...rel.split('/')));
  if (line.composite) {
    figs.push(
      figure(thumbOf(line.composite), `composite of ${line.input}`, 'composite', { href: line.composite }),
    );
  }
  const layerPaths = new Set(((item && currentStep(item)?.layers) ?? []).map((l) => l.path));
  for (const rel of line.outputs) {
    const isLayer = layerPaths.has(rel);
    figs.push(
      figure(thumbOf(rel), `output ${base(rel)} of ${line.input}`, base(rel), {
        href: rel,
        video: thumbKindOfName(rel) === 'video',
        small: isLayer && line.composite !== null,
        placeholder: 'no preview',
      }),
    );
  }
  return figs.join('');
}

/**
 * A chain's steps left to right, parents first: each step's first output (a thumbnail, or a video's
 * poster), or a placeholder saying what became of it — a failed step in place, with why.
 */
function chainFigures(item: Item, outDir: string, thumbs: Thumbnails): string {
  return item.steps
    .map((step) => {
      const rel = step.composite ?? step.outputs[0];
      const caption = `${step.name} · ${step.state === 'downloaded' ? 'done' : step.state}`;
      if (rel) {
        const thumb = thumbs.get(join(outDir, ...rel.split('/')));
        return figure(thumb, `step ${step.name} of ${item.input}`, caption, {
          href: rel,
          video: thumbKindOfName(rel) === 'video',
        });
      }
      const why =
        step.state === 'failed'
          ? `failed: ${step.reason ?? step.generation?.failure_reason ?? 'failed'}`
          : step.state === 'downloaded'
            ? `not downloaded (generation ${step.generationId ?? '?'})`
            : step.state;
      return figure(undefined, `step ${step.name} of ${item.input}`, caption, { placeholder: why });
    })
    .join('<div class="arrow">→</div>');
}

function requestFacts(item: Item | undefined): string {
  const r = item ? currentStep(item)?.request : undefined;
  if (!r) return '';
  const what = [r.type, r.model].filter((v): v is string => typeof v === 'string').join(' · ');
  const prompt = typeof r.prompt === 'string' ? r.prompt : null;
  const shown =
    prompt && prompt.length > PROMPT_SHOWN_CHARS ? `${prompt.slice(0, PROMPT_SHOWN_CHARS)}…` : prompt;
  const rows = [`<dt>request</dt><dd>${esc(what || 'request')}</dd>`];
  if (shown && item?.inputAs !== 'prompt') rows.push(`<dt>prompt</dt><dd>${esc(shown)}</dd>`);
  return rows.join('');
}

/** From the item's first stage start to its last stage end; null before it started or while a stage runs. */
function itemTime(item: Item | undefined): number | null {
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

/** A report line's name on the page: its input path, and its out folder when that is not the same. */
function shownName(line: Pick<ReportItem, 'input' | 'place'>): string {
  return line.place === line.input ? line.input : `${line.input} (out folder ${line.place}/)`;
}

/** One earlier attempt in words: which generation (or create) it was and how it failed. */
function attemptText(a: ReportItem['earlier_attempts'][number]): string {
  const what = a.generation_id
    ? `generation <span class="mono">${esc(a.generation_id)}</span>`
    : `request <span class="mono">${esc(a.request_id ?? '?')}</span>`;
  const code = a.failure_code ? ` <span class="mono">${esc(a.failure_code)}</span>` : '';
  const why = a.failure_reason ? `: ${esc(a.failure_reason)}` : '';
  return `${what} failed${code}${why}`;
}

/** The small line under an item naming the attempts a retry replaced; '' when there were none. */
function attemptsLine(line: ReportItem): string {
  const n = line.earlier_attempts.length;
  if (n === 0) return '';
  const label = n === 1 ? 'Earlier attempt' : `${n} earlier attempts`;
  return `<p class="attempts">${label}: ${line.earlier_attempts.map(attemptText).join('; ')}</p>`;
}

function card(
  line: ReportItem,
  index: number,
  item: Item | undefined,
  outDir: string,
  thumbs: Thumbnails,
): string {
  const facts: string[] = [requestFacts(item)];
  if (line.status === 'failed' && line.stage) facts.push(`<dt>failed at</dt><dd>${esc(line.stage)}</dd>`);
  if (line.failure_code) facts.push(`<dt>failure code</dt><dd class="mono">${esc(line.failure_code)}</dd>`);
  if (line.generation_id) facts.push(`<dt>generation</dt><dd class="mono">${esc(line.generation_id)}</dd>`);
  const requestId = item ? currentStep(item)?.requestId : null;
  if (requestId) facts.push(`<dt>request id</dt><dd class="mono">${esc(requestId)}</dd>`);
  if (line.journal) facts.push(`<dt>journal</dt><dd>${esc(line.journal)}</dd>`);
  const took = itemTime(item);
  if (took !== null) facts.push(`<dt>time</dt><dd>${esc(formatDuration(took))}</dd>`);
  const outputs =
    item && isChain(item) ? chainFigures(item, outDir, thumbs) : outputFigures(item, line, outDir, thumbs);
  return [
    `<article class="card ${line.status}" id="item-${index}">`,
    `<header>${badge(line.status)}<span class="name">${esc(shownName(line))}</span></header>`,
    `<div class="media">${inputFigure(item, line, thumbs)}${outputs ? `<div class="arrow">→</div>${outputs}` : ''}</div>`,
    line.reason ? `<p class="reason">${esc(line.reason)}</p>` : '',
    attemptsLine(line),
    `<dl class="facts">${facts.join('')}</dl>`,
    line.result ? `<div class="links"><a href="${relUrl(line.result)}">result.json</a></div>` : '',
    '</article>',
  ].join('');
}

function totalsHtml(report: ReportHead): string {
  const t = report.totals;
  const cell = (key: string, label: string, n: number) =>
    `<div class="total ${key}${n > 0 ? ' some' : ''}"><b>${n}</b>${esc(label)}</div>`;
  const cells = [
    cell('inputs', 'inputs', t.inputs),
    cell('succeeded', 'succeeded', t.succeeded),
    cell('failed', 'failed', t.failed),
    cell('skipped', 'skipped', t.skipped),
  ];
  if (t.unprocessed > 0 || report.stopped_early)
    cells.push(cell('unprocessed', 'not processed', t.unprocessed));
  if (t.pending > 0) cells.push(cell('pending', 'in progress', t.pending));
  return `<section class="totals" aria-label="Totals">${cells.join('')}</section>`;
}

/** Each stage's durations, added one item at a time, for the table of time per stage. */
class StageDurations {
  private readonly durations = new Map<StageName, number[]>();

  add(item: Item): void {
    for (const s of STAGE_NAMES) {
      const t = item.timings[s];
      if (t?.finished_at === undefined) continue;
      const ds = this.durations.get(s) ?? [];
      if (ds.length === 0) this.durations.set(s, ds);
      ds.push(t.finished_at - t.started_at);
    }
  }

  table(): string {
    const rows: string[] = [];
    for (const s of STAGE_NAMES) {
      const ds = this.durations.get(s);
      if (!ds) continue;
      ds.sort((a, b) => a - b);
      rows.push(
        `<tr><td><span class="swatch" style="background:${STAGE_COLORS[s]}"></span>${s}</td><td>${ds.length}</td><td>${esc(formatDuration(median(ds)))}</td><td>${esc(formatDuration(percentile(ds, 90)))}</td><td>${esc(formatDuration(ds.at(-1)!))}</td></tr>`,
      );
    }
    if (rows.length === 0) return '';
    return `<table class="stages"><thead><tr><th>stage</th><th>files</th><th>median</th><th>p90</th><th>max</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  }
}

/**
 * The page's items, in report order: each one's status without reading it, its report line and item
 * on demand (`item` is undefined when the line has none).
 */
interface PageRows {
  readonly count: number;
  status(i: number): ReportStatus;
  read(i: number): { line: ReportItem; item: Item | undefined };
}

/** Asked of the writer before the cards of `items`: their thumbnails, in the page's `thumbs`. */
interface ThumbsWanted {
  thumbsFor: Item[];
}

/** What the page is made from (see pageParts). */
interface PageInput {
  report: ReportHead;
  rows: PageRows;
  /** Source file (absolute) → thumbnail path relative to the out dir: at least those of the cards asked for. */
  thumbs: Thumbnails;
  outDir: string;
  inputDir?: string;
  emulator?: boolean;
  now?: number;
}

/** Cards rendered between two asks for thumbnails. */
const CARDS_PER_THUMBS = 64;

/** Rows with one of `statuses`, in report order. */
function* rowsWith(rows: PageRows, statuses: readonly ReportStatus[]): Generator<number> {
  for (let i = 0; i < rows.count; i++) if (statuses.includes(rows.status(i))) yield i;
}

/** Whether an item's timings count in this batch's figures (see pageParts). */
function timedHere(item: Item | undefined): item is Item {
  return item !== undefined && item.journal?.action !== 'done' && item.journal?.action !== 'fail';
}

/**
 * The lines of report.html, unredacted, one after another ('' for none), reading each item when its
 * section comes (a failed one twice: its row among the failures, its card). Before each run of cards it
 * asks for their thumbnails (renderReportHtml has them all already; writeReportHtml makes them then).
 */
function* pageParts(input: PageInput): Generator<string | ThumbsWanted> {
  const { report, rows, outDir, thumbs } = input;
  const now = input.now ?? Date.now();
  const startedAt = Date.parse(report.started_at);
  const finishedAt = report.finished_at ? Date.parse(report.finished_at) : null;
  const running = finishedAt === null;
  const t = report.totals;

  const title = `genpipe report — ${t.inputs} inputs, ${t.succeeded} succeeded, ${t.failed} failed`;
  yield* [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' data: file:; style-src 'unsafe-inline'">`,
    running ? `<meta http-equiv="refresh" content="${REPORT_REFRESH_SECONDS}">` : '',
    `<title>${esc(title)}</title>`,
    `<style>${CSS}</style>`,
    '</head>',
  ];

  const when = running
    ? `Started ${esc(iso(startedAt))} · running for ${esc(formatDuration(now - startedAt))} · page refreshed ${esc(iso(now))}`
    : `Started ${esc(iso(startedAt))} · finished ${esc(iso(finishedAt))} · took ${esc(formatDuration(finishedAt - startedAt))}`;
  yield* ['<body>', '<main>', '<h1>genpipe report</h1>', `<p class="muted">${when}</p>`];
  if (input.inputDir) yield `<p class="muted">Input folder: <code>${esc(input.inputDir)}</code></p>`;
  if (input.emulator) {
    yield '<div class="banner emulator">Ran against the embedded emulator, not the real service: the outputs are stand-ins.</div>';
  }
  if (report.stopped_early) {
    yield `<div class="banner stopped" role="alert">The batch stopped early: ${esc(report.stopped_early.reason)}. ${t.unprocessed} file${t.unprocessed === 1 ? ' was' : 's were'} not processed.</div>`;
  } else if (running) {
    yield `<div class="banner running">The batch is still running; this page reloads every ${REPORT_REFRESH_SECONDS} s.</div>`;
  }
  if (report.journal) {
    const j = report.journal;
    yield `<div class="banner journal">Journal <code>${esc(j.file)}</code>: ${esc(journalCountsText(j))}. Crash policy: ${esc(j.unknown_submissions_note)}</div>`;
  }
  yield totalsHtml(report);

  // Items finished by an earlier run (or failed from its record by the crash policy) keep that run's
  // timings: they are left out of this batch's figures. Every item is added once, from the section
  // that shows it (a failed one from its card).
  const stages = new StageDurations();
  const timeline = new TimelineRows();
  const figures = (item: Item | undefined, status: ReportStatus) => {
    if (!timedHere(item)) return;
    stages.add(item);
    timeline.add(item, status === 'failed');
  };

  if (t.failed > 0) {
    yield `<section id="failures"><h2>Failed (${t.failed})</h2>`;
    yield '<table class="failures"><thead><tr><th>file</th><th>stage</th><th>reason</th></tr></thead><tbody>';
    for (const i of rowsWith(rows, ['failed'])) {
      const { line: l } = rows.read(i);
      yield `<tr class="failed"><td><a href="#item-${i}">${esc(shownName(l))}</a></td><td>${esc(l.stage ?? '')}</td><td class="reason">${esc(l.reason ?? '')}${l.failure_code ? ` <span class="mono muted">(${esc(l.failure_code)})</span>` : ''}</td></tr>`;
    }
    yield '</tbody></table></section>';
  }
  yield* statusTable(rows, 'unprocessed', 'Not processed', t.unprocessed, figures);
  if (t.succeeded + t.failed + t.pending > 0) {
    yield '<section id="results"><h2>Results</h2><div class="cards">';
    let batch: { i: number; line: ReportItem; item: Item | undefined }[] = [];
    const cards = function* (): Generator<string | ThumbsWanted> {
      const items = batch.flatMap((b) => (b.item ? [b.item] : []));
      if (items.length > 0) yield { thumbsFor: items };
      for (const b of batch) {
        figures(b.item, b.line.status);
        yield card(b.line, b.i, b.item, outDir, thumbs);
      }
      batch = [];
    };
    for (const i of rowsWith(rows, ['succeeded', 'failed', 'pending'])) {
      batch.push({ i, ...rows.read(i) });
      if (batch.length >= CARDS_PER_THUMBS) yield* cards();
    }
    yield* cards();
    yield '</div></section>';
  }
  yield* statusTable(rows, 'skipped', 'Skipped', t.skipped, figures);
  if (report.ignored && report.ignored.total > 0) yield* ignoredSection(report.ignored);
  const table = stages.table();
  if (table) yield* ['<section id="stages"><h2>Time per stage</h2>', table, '</section>'];
  yield* [
    '<section id="timeline"><h2>Timeline</h2>',
    timelineLegend(),
    `<div class="timeline-wrap">${timeline.svg(startedAt, finishedAt ?? now)}</div>`,
    '</section>',
    `<footer>Written by genpipe at ${esc(iso(now))}. Details of each file are in its result.json; the same data as JSON is in <a href="report.json">report.json</a>.</footer>`,
    '</main>',
    '</body>',
    '</html>',
  ];
}

/** The section listing the items of `status` (skipped, not processed) with their reasons; none when there are none. */
function* statusTable(
  rows: PageRows,
  status: 'skipped' | 'unprocessed',
  heading: string,
  count: number,
  figures: (item: Item | undefined, status: ReportStatus) => void,
): Generator<string> {
  if (count === 0) return;
  yield `<section id="${status}"><h2>${heading} (${count})</h2>`;
  yield '<table><thead><tr><th>file</th><th>status</th><th>reason</th></tr></thead><tbody>';
  for (const i of rowsWith(rows, [status])) {
    const { line: l, item } = rows.read(i);
    figures(item, l.status);
    yield `<tr class="${status}" id="item-${i}"><td>${esc(shownName(l))}</td><td>${badge(l.status)}</td><td>${esc(l.reason ?? '')}</td></tr>`;
  }
  yield '</tbody></table></section>';
}

/** The entries of the input folder that are not inputs, each with why (the first 1,000; all counted). */
function* ignoredSection(ignored: ReportIgnored): Generator<string> {
  const more =
    ignored.unlisted > 0
      ? ` The first ${ignored.entries.length} are listed; ${ignored.unlisted} more are counted only.`
      : '';
  yield `<section id="ignored"><h2>Ignored (${ignored.total})</h2>`;
  yield `<p class="muted">Entries of the input folder that are not inputs: ${esc(ignoredReasonsText(ignored))}.${more}</p>`;
  yield '<table><thead><tr><th>entry</th><th>reason</th></tr></thead><tbody>';
  for (const e of ignored.entries) {
    yield `<tr class="ignored"><td>${esc(e.input)}</td><td>${esc(e.reason)}</td></tr>`;
  }
  yield '</tbody></table></section>';
}

/**
 * The whole report.html page (pure: no I/O). Every user-supplied string is escaped and the page is
 * passed through `redact`.
 *
 * @example const html = renderReportHtml({ report, items, thumbs, outDir });
 */
export function renderReportHtml(input: ReportHtmlInput): string {
  const { items: lines, ...head } = input.report;
  const byPlace = new Map(uniqueItems(input.items).map((i) => [itemPlace(i), i]));
  const rows: PageRows = {
    count: lines.length,
    status: (i) => lines[i]!.status,
    read: (i) => ({ line: lines[i]!, item: byPlace.get(lines[i]!.place) }),
  };
  const redact = input.redact ?? redactShapes;
  const out: string[] = [];
  for (const part of pageParts({ ...input, report: head, rows })) {
    if (typeof part === 'string' && part !== '') out.push(redact(part));
  }
  return out.join('\n');
}

/**
 * Writes `<out>/report.html` atomically from the report's head and its entries (see reportEntries),
 * reading one entry's item at a time and making the thumbnails of a few cards at a time, so the page of
 * a batch of any size is written from bounded memory. Can be called repeatedly while a batch runs
 * (thumbnails already made are reused).
 *
 * @returns the path written
 */
export async function writeReportHtmlEntries(
  outDir: string,
  head: ReportHead,
  entries: readonly ReportEntry[],
  meta: ReportMeta & { inputDir?: string; emulator?: boolean; now?: number },
): Promise<string> {
  const rows: PageRows = {
    count: entries.length,
    status: (i) => entryStatus(entries[i]!, meta),
    read: (i) => {
      const item = entries[i]!.item();
      return { line: redactDeep(reportItem(item, meta), meta.redact ?? redactShapes), item };
    },
  };
  const thumbs = new Map<string, string>();
  const parts = pageParts({
    report: head,
    rows,
    thumbs,
    outDir,
    inputDir: meta.inputDir,
    emulator: meta.emulator,
    now: meta.now,
  });
  const path = join(outDir, REPORT_HTML_FILE);
  await writeFileAtomic(path, pageText(parts, thumbs, outDir, meta.redact ?? redactShapes));
  return path;
}

/** The page's lines, redacted, a newline between two, the thumbnails of each run of cards made first. */
async function* pageText(
  parts: Generator<string | ThumbsWanted>,
  thumbs: Map<string, string>,
  outDir: string,
  redact: Redact,
): AsyncGenerator<string> {
  let first = true;
  for (const part of parts) {
    if (typeof part !== 'string') {
      thumbs.clear();
      for (const [file, thumb] of await makeThumbnails(part.thumbsFor, outDir)) thumbs.set(file, thumb);
      continue;
    }
    if (part === '') continue;
    yield first ? redact(part) : `\n${redact(part)}`;
    first = false;
  }
}

/**
 * Builds the batch report from the items, makes the thumbnails and writes `<out>/report.html`
 * atomically. Can be called repeatedly while a batch runs (thumbnails already made are reused).
 *
 * @param meta start/end times and the stopped-early reason, as for report.json
 * @returns the path written
 * @example await writeReportHtml('/data/out', items, { startedAt, finishedAt: Date.now() });
 */
export function writeReportHtml(
  outDir: string,
  items: readonly Item[],
  meta: ReportMeta & { inputDir?: string; emulator?: boolean; now?: number },
): Promise<string> {
  const entries = heldEntries(items);
  return writeReportHtmlEntries(outDir, reportHead(entries, meta), entries, meta);
}
