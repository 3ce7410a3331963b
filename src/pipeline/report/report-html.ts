/**
 * `<out>/report.html`: one page a person would rather look at than report.json, quick to open at
 * 100,000 files. Totals, failures grouped by reason, then every file as a card (input and output
 * thumbnails side by side, reason, earlier attempts, facts), time per stage and a timeline.
 *
 * The files are the page's data — one small JSON object per file (page-row.ts) in a
 * `<script type="application/json">` — and the page's own script (page-script.ts) draws one page of
 * cards at a time, filtered by status or failure reason, searched by name, sorted. The first page of
 * cards (failures first) is also drawn into the page by the writer, with the same function, so the page
 * reads without JavaScript: all of it when the batch has at most PAGE_SIZE files, the first PAGE_SIZE
 * cards and every failure reason otherwise. Nothing is loaded from elsewhere and nothing but that
 * script runs (a CSP with its hash); thumbnails live in `<out>/.thumbs/`, referenced relatively and
 * loaded lazily. Every user-supplied string (file names, prompts, reasons) is escaped, and the page
 * passes through the redactor.
 */

import { join } from 'node:path';
import type { ReportStatus } from '../events.ts';
import type { Item } from '../item.ts';
import { type Redact, redactDeep, redactShapes } from '../progress/redact.ts';
import { FailureGroups } from './failure-groups.ts';
import { heldBackSection } from './held-back.ts';
import { esc } from './html-escape.ts';
import { itemPlace } from './item-paths.ts';
import { REPORT_HTML_FILE } from './out-dir-names.ts';
import { documentHead, ignoredSection, iso, listControls, pageHeader } from './page-head.ts';
import { pageRow, scriptJson } from './page-row.ts';
import { PAGE_SCRIPT, PAGE_SIZE, pageScriptApi } from './page-script.ts';
import { heldEntries, type ReportEntry } from './report-entries.ts';
import {
  type BatchReport,
  entryStatus,
  type ReportHead,
  type ReportItem,
  type ReportMeta,
  reportHead,
  reportItem,
  uniqueItems,
} from './report-json.ts';
import { StageDurations } from './stage-durations.ts';
import { makeThumbnails, type Thumbnails } from './thumbnails.ts';
import { TimelineRows, timelineLegend } from './timeline-svg.ts';
import { AtomicFile } from './write-atomic.ts';

export { REPORT_HTML_FILE } from './out-dir-names.ts';
export { REPORT_REFRESH_SECONDS } from './page-head.ts';

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

/** A report line and the item it came from (undefined when the line has none). */
interface Read {
  line: ReportItem;
  item: Item | undefined;
}

/** The page's items, in report order: each one's status without reading it, its line and item on demand. */
interface PageRows {
  readonly count: number;
  status(i: number): ReportStatus;
  read(i: number): Read;
  /** Every item in report order, each read once (the writer writes its report.json line meanwhile). */
  all(): Iterable<Read>;
}

/**
 * Asked of the writer before the cards or rows of `items`: their thumbnails, in the page's `thumbs`;
 * with `imagesToo` false, the images a browser draws itself are not thumbnailed (MakeThumbnailsOptions).
 */
interface ThumbsWanted {
  thumbsFor: Item[];
  imagesToo: boolean;
}

/** A part of the page written as it is: not redacted (already done, or the page's own script). */
interface Verbatim {
  verbatim: string;
}

type Part = string | ThumbsWanted | Verbatim;

/** What the page is made from (see pageParts). */
interface PageInput {
  report: ReportHead;
  rows: PageRows;
  /** Source file (absolute) → thumbnail path relative to the out dir: at least those asked for last. */
  thumbs: Thumbnails;
  outDir: string;
  inputDir?: string;
  emulator?: boolean;
  now?: number;
  redact: Redact;
}

/** Items read between two asks for thumbnails. */
const ITEMS_PER_THUMBS = 64;

/** Statuses in the order of the list's default sort (failures first). */
const STATUS_ORDER: readonly ReportStatus[] = ['failed', 'unprocessed', 'pending', 'succeeded', 'skipped'];

/** Whether an item's timings count in this batch's figures (see pageParts). */
function timedHere(item: Item | undefined): item is Item {
  return item !== undefined && item.journal?.action !== 'done' && item.journal?.action !== 'fail';
}

/** The first PAGE_SIZE rows in the list's default order: by status (failures first), then report order. */
function firstPage(rows: PageRows): number[] {
  const first: number[] = [];
  for (const s of STATUS_ORDER) {
    for (let i = 0; i < rows.count && first.length < PAGE_SIZE; i++) if (rows.status(i) === s) first.push(i);
  }
  return first;
}

/** Reads (i, Read) in runs of ITEMS_PER_THUMBS, asking for each run's thumbnails before it is given. */
function* withThumbs(
  reads: Iterable<[number, Read]>,
  imagesToo: boolean,
): Generator<ThumbsWanted | [number, Read][]> {
  let run: [number, Read][] = [];
  const flush = function* (): Generator<ThumbsWanted | [number, Read][]> {
    const items = run.flatMap(([, r]) => (r.item ? [r.item] : []));
    if (items.length > 0) yield { thumbsFor: items, imagesToo };
    yield run;
    run = [];
  };
  for (const r of reads) {
    run.push(r);
    if (run.length >= ITEMS_PER_THUMBS) yield* flush();
  }
  if (run.length > 0) yield* flush();
}

function* indexed<T>(items: Iterable<T>): Generator<[number, T]> {
  let i = 0;
  for (const item of items) yield [i++, item];
}

/** The failures grouped by reason (reading each failed item). */
function failureGroups(rows: PageRows): FailureGroups {
  const groups = new FailureGroups();
  for (let i = 0; i < rows.count; i++) if (rows.status(i) === 'failed') groups.add(rows.read(i).line);
  return groups;
}

/**
 * The parts of report.html, one after another ('' for none). Reads each failed item for the failure
 * groups, the first page's items for the cards drawn without JavaScript, then every item once for the
 * page's data (and the figures of time per stage and the timeline).
 */
function* pageParts(input: PageInput): Generator<Part> {
  const { report, rows, outDir, thumbs, redact } = input;
  const now = input.now ?? Date.now();
  const t = report.totals;
  const api = pageScriptApi();
  const rowOf = (r: Read, groups: FailureGroups) =>
    pageRow(
      r.line,
      r.item,
      thumbs,
      outDir,
      redact,
      r.line.status === 'failed' ? groups.of(r.line) : undefined,
    );

  yield* documentHead(report);
  yield* pageHeader(report, { now, inputDir: input.inputDir, emulator: input.emulator });
  const groups = failureGroups(rows);
  yield groups.html(t.failed);

  yield `<section id="items">${listControls(report)}`;
  if (t.inputs > PAGE_SIZE) {
    yield `<p class="muted" id="static-note">The first ${PAGE_SIZE} of ${t.inputs} files, failures first. With JavaScript this list holds them all (filter, search, sort, pages); report.json lists every one.</p>`;
  }
  yield '<div class="cards" id="cards">';
  const first = firstPage(rows);
  // The first page's cards (drawn without JavaScript too) get thumbnails; further down the list an
  // image a browser draws itself is shown as it is, unless its thumbnail was made already.
  for (const part of withThumbs(
    first.map((i) => [i, rows.read(i)]),
    true,
  )) {
    if ('thumbsFor' in part) yield part;
    else for (const [i, r] of part) yield { verbatim: api.card(rowOf(r, groups), i) };
  }
  yield '</div><div class="pager"></div></section>';
  if (report.held_back) yield* heldBackSection(report.held_back);
  if (report.ignored && report.ignored.total > 0) yield* ignoredSection(report.ignored);

  // Items finished by an earlier run (or failed from its record by the crash policy) keep that run's
  // timings: they are left out of this batch's figures.
  const stages = new StageDurations();
  const timeline = new TimelineRows();
  yield `<script type="application/json" id="report-data">{"groups":${scriptJson(groups.groups)},"rows":[`;
  for (const part of withThumbs(indexed(rows.all()), false)) {
    if ('thumbsFor' in part) {
      yield part;
      continue;
    }
    for (const [i, r] of part) {
      if (timedHere(r.item)) {
        stages.add(r.item);
        timeline.add(r.item, r.line.status === 'failed');
      }
      yield { verbatim: `${scriptJson(rowOf(r, groups))}${i < rows.count - 1 ? ',' : ''}` };
    }
  }
  yield ']}</script>';
  yield* figuresParts(report, stages, timeline, now, redact);
  yield { verbatim: `<script>${PAGE_SCRIPT}(document);</script>` };
  yield* ['</main>', '</body>', '</html>'];
}

/**
 * Time per stage, the timeline and the footer. The timeline holds nothing but the files' names (cut
 * ones too), times and stage names: only the known secrets are masked in it, never a name for its shape.
 */
function* figuresParts(
  report: ReportHead,
  stages: StageDurations,
  timeline: TimelineRows,
  now: number,
  redact: Redact,
): Generator<Part> {
  const startedAt = Date.parse(report.started_at);
  const finishedAt = report.finished_at ? Date.parse(report.finished_at) : null;
  const table = stages.table();
  if (table) yield* ['<section id="stages"><h2>Time per stage</h2>', table, '</section>'];
  const names = redact.exact ?? redact;
  yield* [
    '<section id="timeline"><h2>Timeline</h2>',
    timelineLegend(),
    { verbatim: names(`<div class="timeline-wrap">${timeline.svg(startedAt, finishedAt ?? now)}</div>`) },
    '</section>',
    `<footer>Written by genpipe at ${esc(iso(now))}. Details of each file are in its result.json; the same data as JSON is in <a href="report.json">report.json</a>.</footer>`,
  ];
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
  const read = (line: ReportItem): Read => ({ line, item: byPlace.get(line.place) });
  const rows: PageRows = {
    count: lines.length,
    status: (i) => lines[i]!.status,
    read: (i) => read(lines[i]!),
    all: () => lines.map(read),
  };
  const redact = input.redact ?? redactShapes;
  const out: string[] = [];
  for (const part of pageParts({ ...input, report: head, rows, redact })) {
    if (typeof part === 'string') {
      if (part !== '') out.push(redact(part));
    } else if ('verbatim' in part) out.push(part.verbatim);
  }
  return out.join('\n');
}

/** Where the lines read for the page go besides it (writeReportFiles: report.json, in the same pass). */
export interface LineSink {
  /** Takes the next line in report order (every line once, in order). */
  add(line: ReportItem): void;
  /** Called between parts of the page: may write what it gathered. */
  drain(): Promise<void>;
}

/** What the reports are written with besides their items. */
export type ReportFilesMeta = ReportMeta & {
  inputDir?: string;
  emulator?: boolean;
  now?: number;
  /**
   * Told how long the writing waited for thumbnails being made, ms (MakeThumbnailsOptions.madeIn):
   * work done once per file, which the running report's refresher leaves out of the rewrite time it
   * spaces its rewrites by.
   */
  thumbnailsTook?: (ms: number) => void;
};

/**
 * Writes `<out>/report.html` atomically from the report's head and its entries (see reportEntries),
 * reading one entry's item at a time and making the thumbnails of a few items at a time, so the page of
 * a batch of any size is written from bounded memory. Each entry's report line goes to `sink` as it is
 * read (writeReportFiles writes report.json so, in the same pass). Can be called repeatedly while a
 * batch runs (thumbnails already made are reused).
 *
 * @returns the page's file, written but not yet in place: `commit` renames it onto report.html
 */
export async function writeReportHtmlEntries(
  outDir: string,
  head: ReportHead,
  entries: readonly ReportEntry[],
  meta: ReportFilesMeta,
  sink?: LineSink,
): Promise<AtomicFile> {
  const redact = meta.redact ?? redactShapes;
  const read = (e: ReportEntry): Read => {
    const item = e.item();
    return { line: redactDeep(reportItem(item, meta), redact), item };
  };
  const rows: PageRows = {
    count: entries.length,
    status: (i) => entryStatus(entries[i]!, meta),
    read: (i) => read(entries[i]!),
    all: function* () {
      for (const e of entries) {
        const r = read(e);
        sink?.add(r.line);
        yield r;
      }
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
    redact,
  });
  const file = await AtomicFile.open(join(outDir, REPORT_HTML_FILE));
  try {
    let first = true;
    for (const part of parts) {
      if (typeof part !== 'string' && 'thumbsFor' in part) {
        thumbs.clear();
        const made = await makeThumbnails(part.thumbsFor, outDir, {
          imagesToo: part.imagesToo,
          ...(meta.thumbnailsTook ? { madeIn: meta.thumbnailsTook } : {}),
        });
        for (const [src, thumb] of made) thumbs.set(src, thumb);
        continue;
      }
      const text = typeof part === 'string' ? (part === '' ? '' : redact(part)) : part.verbatim;
      if (text === '') continue;
      file.add(first ? text : `\n${text}`);
      first = false;
      await file.drain();
      await sink?.drain();
    }
  } catch (err) {
    await file.abort();
    throw err;
  }
  return file;
}

/**
 * Builds the batch report from the items, makes the thumbnails and writes `<out>/report.html`
 * atomically. Can be called repeatedly while a batch runs (thumbnails already made are reused).
 *
 * @param meta start/end times and the stopped-early reason, as for report.json
 * @returns the path written
 * @example await writeReportHtml('/data/out', items, { startedAt, finishedAt: Date.now() });
 */
export async function writeReportHtml(
  outDir: string,
  items: readonly Item[],
  meta: ReportMeta & { inputDir?: string; emulator?: boolean; now?: number },
): Promise<string> {
  const entries = heldEntries(items);
  const file = await writeReportHtmlEntries(outDir, reportHead(entries, meta), entries, meta);
  await file.commit();
  return file.path;
}
