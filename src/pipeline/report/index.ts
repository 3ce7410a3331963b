/**
 * The output side of a batch that needs no network: per-item result.json, the batch report.json and
 * report.html (with thumbnails and a timeline). Every writer is atomic and can be called again at any
 * moment of a batch.
 */
import type { Item } from '../item.ts';
import { writeReportHtml } from './report-html.ts';
import { type BatchReport, buildReport, type ReportMeta, writeReportJson } from './report-json.ts';

export { esc, relUrl } from './html-escape.ts';
export { itemFolder, itemOutDir, itemPlace, RESULT_FILE, suffixedName } from './item-paths.ts';
export {
  REPORT_HTML_FILE,
  REPORT_REFRESH_SECONDS,
  type ReportHtmlInput,
  renderReportHtml,
  writeReportHtml,
} from './report-html.ts';
export {
  type BatchReport,
  buildReport,
  journalCountsText,
  journalDidAnything,
  REPORT_JSON_FILE,
  type ReportItem,
  type ReportJournal,
  type ReportJournalMeta,
  type ReportMeta,
  type ReportTotals,
  reportItem,
  reportJsonText,
  uniqueItems,
  unprocessedReason,
  writeReportJson,
} from './report-json.ts';
export { REPORT_PROMPT_CHARS, reportView } from './report-view.ts';
export {
  buildResultJson,
  elideInlineData,
  type ResultJson,
  type StageTimingJson,
  timingsJson,
  writeResultJson,
} from './result-json.ts';
export { makeThumbnail, makeThumbnails, THUMB_MAX_SIDE, THUMBS_DIR, type Thumbnails } from './thumbnails.ts';
export { timelineSvg } from './timeline-svg.ts';
export { writeFileAtomic } from './write-atomic.ts';

/**
 * Writes `<out>/report.json` and `<out>/report.html` from the batch's items (both atomically) and
 * returns the report. Call it when the batch ends, and as often as wanted while it runs.
 *
 * @param meta start/end times, the stopped-early reason, the redactor; inputDir and emulator for the page
 * @example const report = await writeReports(outDir, items, { startedAt, finishedAt: Date.now(), redact });
 */
export async function writeReports(
  outDir: string,
  items: readonly Item[],
  meta: ReportMeta & { inputDir?: string; emulator?: boolean; now?: number },
): Promise<BatchReport> {
  const report = buildReport(items, meta);
  await writeReportJson(outDir, report);
  await writeReportHtml(outDir, items, meta);
  return report;
}
