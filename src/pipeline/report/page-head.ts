/**
 * The top of report.html, drawn from the report's head alone: the document's head (its
 * Content-Security-Policy lets only the page's own script run and nothing load from elsewhere), the
 * title, times, banners and totals; and the list's controls.
 */

import { plural } from '../../spec/plural.ts';
import type { ReportStatus } from '../events.ts';
import { formatDuration } from '../progress/format.ts';
import { esc } from './html-escape.ts';
import { ignoredReasonsText, type ReportIgnored } from './ignored.ts';
import { PAGE_SCRIPT_CSP } from './page-script.ts';
import { PAGE_CSS } from './page-style.ts';
import {
  journalCountsText,
  notLookedAtText,
  type ReportHead,
  type StoppedBy,
  watchStoppedLater,
} from './report-json.ts';

/** Seconds between reloads of the page while the batch runs (none once it finished). */
export const REPORT_REFRESH_SECONDS = 5;

/** The page's Content-Security-Policy. */
export const PAGE_CSP = `default-src 'none'; img-src 'self' data: file:; style-src 'unsafe-inline'; script-src ${PAGE_SCRIPT_CSP}`;

export const STATUS_LABEL: Record<ReportStatus, string> = {
  succeeded: 'succeeded',
  failed: 'failed',
  skipped: 'skipped',
  unprocessed: 'not processed',
  pending: 'in progress',
};

export function iso(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/** `<!doctype html>` to `</head>`. */
export function documentHead(report: ReportHead): string[] {
  const t = report.totals;
  const title = `genpipe report — ${plural(t.inputs, 'input')}, ${t.succeeded} succeeded, ${t.failed} failed`;
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}">`,
    // While the batch runs the page's script reloads it (location.reload keeps the view in the URL's
    // fragment, which a meta refresh drops or, given a fragment, never does); without script, a meta refresh.
    report.finished_at === null
      ? `<meta name="genpipe-refresh" content="${REPORT_REFRESH_SECONDS}"><noscript><meta http-equiv="refresh" content="${REPORT_REFRESH_SECONDS}"></noscript>`
      : '',
    `<title>${esc(title)}</title>`,
    `<style>${PAGE_CSS}</style>`,
    '</head>',
  ];
}

/**
 * The banner's words of a watch stopped as it normally ends (report.json `stopped`): it was stopped, and
 * the files it left are taken up by the next session.
 *
 * @example watchStoppedText({ reason: 'stopped by Ctrl-C / SIGINT', by: 'Ctrl-C / SIGINT' }, 1)
 * // 'The watch was stopped (Ctrl-C / SIGINT). 1 file was not processed; it is picked up when the watch starts again.'
 */
export function watchStoppedText(stopped: StoppedBy, unprocessed: number): string {
  const notLooked = notLookedAtText(stopped);
  const left =
    unprocessed === 0
      ? ''
      : ` ${plural(unprocessed, 'file was', 'files were')} not processed; ${watchStoppedLater(unprocessed)}${notLooked ? `; ${notLooked}` : ''}.`;
  return `The watch was stopped (${stopped.by}).${left}`;
}

/** The title, times, input folder and banners. */
export function pageHeader(
  report: ReportHead,
  opts: { now: number; inputDir?: string; emulator?: boolean },
): string[] {
  const { now } = opts;
  const startedAt = Date.parse(report.started_at);
  const finishedAt = report.finished_at ? Date.parse(report.finished_at) : null;
  const t = report.totals;
  const when =
    finishedAt === null
      ? `Started ${esc(iso(startedAt))} · running for ${esc(formatDuration(now - startedAt))} · page refreshed ${esc(iso(now))}`
      : `Started ${esc(iso(startedAt))} · finished ${esc(iso(finishedAt))} · took ${esc(formatDuration(finishedAt - startedAt))}`;
  const out = ['<body>', '<main>', '<h1>genpipe report</h1>', `<p class="muted">${when}</p>`];
  if (opts.inputDir) out.push(`<p class="muted">Input folder: <code>${esc(opts.inputDir)}</code></p>`);
  if (opts.emulator) {
    out.push(
      '<div class="banner emulator">Ran against the embedded emulator, not the real service: the outputs are stand-ins.</div>',
    );
  }
  if (report.stopped_early) {
    const notLooked = notLookedAtText(report.stopped_early);
    out.push(
      `<div class="banner stopped" role="alert">The batch stopped early: ${esc(report.stopped_early.reason)}. ${plural(t.unprocessed, 'file was', 'files were')} not processed${notLooked ? `; ${esc(notLooked)}` : ''}.</div>`,
    );
  } else if (report.stopped) {
    out.push(`<div class="banner ended">${esc(watchStoppedText(report.stopped, t.unprocessed))}</div>`);
  } else if (finishedAt === null) {
    const discovering = report.discovering
      ? ` Files are still being discovered: ${t.inputs} found so far, the totals count only those.`
      : '';
    out.push(
      `<div class="banner running">The batch is still running; this page reloads every ${REPORT_REFRESH_SECONDS} s.${discovering}</div>`,
    );
  }
  if (report.journal) {
    const j = report.journal;
    out.push(
      `<div class="banner journal">Journal <code>${esc(j.file)}</code>: ${esc(journalCountsText(j))}. Crash policy: ${esc(j.unknown_submissions_note)}</div>`,
    );
  }
  out.push(totalsHtml(report));
  return out;
}

function totalsHtml(report: ReportHead): string {
  const t = report.totals;
  const cell = (key: string, label: string, n: number) =>
    `<div class="total ${key}${n > 0 ? ' some' : ''}"><b>${n}</b>${esc(label)}</div>`;
  const cells = [
    report.discovering
      ? `<div class="total inputs some"><b>≥ ${t.inputs}</b>inputs (discovering…)</div>`
      : cell('inputs', 'inputs', t.inputs),
    cell('succeeded', 'succeeded', t.succeeded),
    cell('failed', 'failed', t.failed),
    cell('skipped', 'skipped', t.skipped),
  ];
  if (t.unprocessed > 0 || report.stopped_early)
    cells.push(cell('unprocessed', 'not processed', t.unprocessed));
  if (t.pending > 0) cells.push(cell('pending', 'in progress', t.pending));
  return `<section class="totals" aria-label="Totals">${cells.join('')}</section>`;
}

/** The statuses the list can be filtered to, in the order of its default sort. */
const LIST_STATUSES: readonly ReportStatus[] = ['failed', 'unprocessed', 'pending', 'succeeded', 'skipped'];

/**
 * The list's heading and controls (hidden until the page's script shows them): a link per status with
 * its count, the search box, the sort, where the list is and its pages.
 */
export function listControls(report: ReportHead): string {
  const t = report.totals;
  const links = [`<a href="#" data-status="all">all (${t.inputs})</a>`];
  for (const s of LIST_STATUSES) {
    if (t[s] > 0) links.push(`<a href="#status=${s}" data-status="${s}">${STATUS_LABEL[s]} (${t[s]})</a>`);
  }
  return [
    `<h2>Files (${t.inputs})</h2>`,
    '<nav id="controls" hidden>',
    `<div class="statuses">${links.join('')}</div>`,
    '<input id="search" type="search" placeholder="Search by name" aria-label="Search by name">',
    '<label>Sort <select id="sort"><option value="status">failures first</option><option value="name">by name</option><option value="time">slowest first</option></select></label>',
    '<span id="shown"></span><span id="filter"></span><div class="pager"></div>',
    '</nav>',
  ].join('');
}

/** The entries of the input folder that are not inputs, each with why (the first 1,000; all counted). */
export function* ignoredSection(ignored: ReportIgnored): Generator<string> {
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
