/**
 * The output side of a batch that needs no network: per-item result.json, the batch report.json and
 * report.html (with thumbnails and a timeline). Every writer is atomic and can be called again at any
 * moment of a batch.
 */
import type { Item } from '../item.ts';
import { heldEntries, type ReportEntry } from './report-entries.ts';
import { type ReportFilesMeta, writeReportHtmlEntries } from './report-html.ts';
import {
  type BatchReport,
  entryLine,
  type ReportHead,
  ReportJsonSink,
  type ReportMeta,
  reportHead,
} from './report-json.ts';
import type { AtomicFile } from './write-atomic.ts';

export { FAILURE_GROUPS_MAX, type FailureGroup, FailureGroups } from './failure-groups.ts';
export { type HeldBackFile, heldBackJson, type ReportHeldBack } from './held-back.ts';
export { esc, relUrl } from './html-escape.ts';
export {
  IGNORED_LISTED_MAX,
  IgnoredEntries,
  type IgnoredEntry,
  ignoredText,
  type ReportIgnored,
} from './ignored.ts';
export { itemFolder, itemOutDir, itemPlace, RESULT_FILE, suffixedName } from './item-paths.ts';
export { type PageRow, pageRow, scriptJson } from './page-row.ts';
export { PAGE_SCRIPT, PAGE_SIZE, type PageScriptApi, type PageView, pageScriptApi } from './page-script.ts';
export {
  compareEntries,
  HeldEntry,
  heldEntries,
  type JournalCount,
  journalCountOf,
  type ReportEntry,
  reportEntries,
} from './report-entries.ts';
export {
  type LineSink,
  REPORT_HTML_FILE,
  REPORT_REFRESH_SECONDS,
  type ReportFilesMeta,
  type ReportHtmlInput,
  renderReportHtml,
  writeReportHtml,
  writeReportHtmlEntries,
} from './report-html.ts';
export {
  type BatchReport,
  buildReport,
  entryLine,
  entryStatus,
  journalCountsText,
  journalDidAnything,
  notLookedAtText,
  REPORT_JSON_FILE,
  type ReportHead,
  type ReportItem,
  type ReportJournal,
  type ReportJournalMeta,
  ReportJsonSink,
  type ReportMeta,
  type ReportTotals,
  readReportHead,
  reportHead,
  reportItem,
  reportJsonPieces,
  reportJsonText,
  reportStop,
  type StoppedBy,
  type StoppedEarly,
  uniqueItems,
  unprocessedReason,
  watchStoppedLater,
  writeReportJson,
  writeReportJsonEntries,
} from './report-json.ts';
export { REPORT_PROMPT_CHARS, reportView } from './report-view.ts';
export {
  buildResultJson,
  elideInlineData,
  type InputFactsJson,
  inputFactsJson,
  type ResultJson,
  type StageTimingJson,
  timingsJson,
  writeResultJson,
} from './result-json.ts';
export {
  makeThumbnail,
  makeThumbnails,
  THUMB_MAX_SIDE,
  THUMBS_DIR,
  type Thumbnails,
  thumbnailCounts,
} from './thumbnails.ts';
export { timelineSvg } from './timeline-svg.ts';
export { AtomicFile, writeFileAtomic } from './write-atomic.ts';

/**
 * Writes `<out>/report.json` and `<out>/report.html` (both atomically) from the report's entries, one
 * per place in report order (see reportEntries), in one pass: each entry's item is read once for both
 * files (a failed one, and those of the page's first cards, once more), and each file gathers only
 * about 64 KiB before writing it, so the reports of a batch of any size are written from bounded
 * memory. report.json is put in place first, then report.html. Returns the report's head.
 *
 * @example const head = await writeReportFiles(outDir, batch.reportEntries(), { startedAt, redact });
 */
export async function writeReportFiles(
  outDir: string,
  entries: readonly ReportEntry[],
  meta: ReportFilesMeta,
): Promise<ReportHead> {
  const head = reportHead(entries, meta);
  const json = await ReportJsonSink.open(outDir, head, entries.length);
  let html: AtomicFile | null = null;
  try {
    html = await writeReportHtmlEntries(outDir, head, entries, meta, json);
    await json.finish();
    await json.file.commit();
  } catch (err) {
    await json.file.abort();
    await html?.abort();
    throw err;
  }
  await html.commit();
  return head;
}

/**
 * Writes `<out>/report.json` and `<out>/report.html` from the batch's items (both atomically) and
 * returns the report (writeReportFiles of items held in memory). Call it when the batch ends, and as
 * often as wanted while it runs.
 *
 * @param meta start/end times, the stopped-early reason, the redactor; inputDir and emulator for the page
 * @example const report = await writeReports(outDir, items, { startedAt, finishedAt: Date.now(), redact });
 */
export async function writeReports(
  outDir: string,
  items: Iterable<Item>,
  meta: ReportFilesMeta,
): Promise<BatchReport> {
  const entries = heldEntries(items);
  const head = await writeReportFiles(outDir, entries, meta);
  return { ...head, items: entries.map((e) => entryLine(e, meta)) };
}
