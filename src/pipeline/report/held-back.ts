/**
 * The files a watch holds back as incomplete (stable, but they do not parse: a copy that stalled) —
 * not inputs yet, so not items: the reports list them apart, each with why and since when
 * (report.json `held_back`, a section of report.html), and `genpipe status` reads them from there.
 */
import { isoTime } from '../../spec/iso-time.ts';
import { esc } from './html-escape.ts';

/** A file held back, as the watcher knows it. */
export interface HeldBackFile {
  /** Path relative to the watched folder, '/' separated. */
  input: string;
  /** The completeness check's reason. */
  reason: string;
  /** When the check held it back, ms since the epoch (it has not changed since). */
  since: number;
}

/** A file held back, as report.json lists it. */
export interface ReportHeldBack {
  input: string;
  reason: string;
  /** ISO 8601. */
  since: string;
}

/**
 * report.json's `held_back`, by input path.
 *
 * @example heldBackJson([{ input: 'a.png', reason: 'image is incomplete: …', since: 0 }]) // [{ input: 'a.png', …, since: '1970-01-01T00:00:00.000Z' }]
 */
export function heldBackJson(files: readonly HeldBackFile[]): ReportHeldBack[] {
  return [...files]
    .sort((a, b) => (a.input < b.input ? -1 : a.input > b.input ? 1 : 0))
    .map((f) => ({ input: f.input, reason: f.reason, since: isoTime(f.since) }));
}

/** report.html's section of the files held back (none when there are none). */
export function* heldBackSection(held: readonly ReportHeldBack[]): Generator<string> {
  if (held.length === 0) return;
  yield `<section id="held-back"><h2>Held back as incomplete (${held.length})</h2>`;
  yield '<p class="muted">Files of the watched folder that stay unchanged but do not parse (a copy that stalled): not taken until they change, or until the give-up period hands them over to fail at check with this reason.</p>';
  yield '<table><thead><tr><th>file</th><th>why</th><th>held back since</th></tr></thead><tbody>';
  for (const h of held) {
    yield `<tr class="held-back"><td>${esc(h.input)}</td><td>${esc(h.reason)}</td><td>${esc(h.since.replace('T', ' ').replace(/\.\d+Z$/, ' UTC'))}</td></tr>`;
  }
  yield '</tbody></table></section>';
}
