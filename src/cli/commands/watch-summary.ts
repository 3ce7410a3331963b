/**
 * `genpipe watch`'s running summary line on stderr: on a terminal, one line rewritten in place (notes
 * and event lines are printed above it); elsewhere, the line is printed again whenever it changes.
 */
import {
  type HeldBackFile,
  type ProgressState,
  progressCounts,
  type WatcherStats,
} from '../../pipeline/index.ts';
import { printable } from '../../pipeline/progress/index.ts';
import { plural } from '../../spec/plural.ts';

/** Where the line goes (process.stderr, or a test's fake). */
export interface SummaryStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
}

/** The running summary line. */
export interface SummaryLine {
  /** The line's new text: redrawn in place on a terminal, printed when it changed elsewhere. */
  set(text: string): void;
  /** Prints a line of its own (a note) above the summary. */
  print(line: string): void;
  /** Runs `write` (to another stream of the same terminal) with the summary cleared, then redraws it. */
  above(write: () => void): void;
  /** Leaves the last summary as a plain line; later calls print nothing. */
  end(): void;
}

const CLEAR = '\r\x1b[2K';

/**
 * A summary line on `stream` (see the module comment).
 *
 * @param opts.enabled - false: set() shows nothing (notes still print)
 * @example const line = createSummaryLine(process.stderr, { enabled: true }); line.set('watching inbox: …');
 */
export function createSummaryLine(stream: SummaryStream, opts: { enabled: boolean }): SummaryLine {
  const tty = stream.isTTY === true;
  let text = '';
  let printed = '';
  let drawn = false;
  let ended = false;
  const clear = () => {
    if (tty && drawn) stream.write(CLEAR);
    drawn = false;
  };
  const draw = () => {
    if (!opts.enabled || ended || text === '') return;
    if (tty) {
      stream.write(`${CLEAR}${text}`);
      drawn = true;
    } else if (text !== printed) {
      stream.write(`${text}\n`);
      printed = text;
    }
  };
  return {
    set(next) {
      text = printable(next);
      draw();
    },
    print(line) {
      clear();
      stream.write(`${line}\n`);
      draw();
    },
    above(write) {
      clear();
      write();
      draw();
    },
    end() {
      if (ended) return;
      if (tty && drawn) stream.write('\n');
      drawn = false;
      ended = true;
    },
  };
}

/**
 * The summary's text, from the session's progress state (progress-state.ts: one entry per report
 * entry, so two versions of one file name that each have an out folder count twice, as in report.json
 * and the closing summary).
 *
 * @example summaryText('inbox', progress, watcher.stats(), null)
 * // 'watching inbox: 4 done (3 succeeded, 1 failed, 0 skipped) · 1 in progress · 2 settling'
 * // (with files held back: '… · 2 incomplete, held back: a.png, b.mp4')
 */
export function summaryText(
  dir: string,
  progress: ProgressState,
  stats: Pick<WatcherStats, 'pending' | 'checking' | 'held' | 'heldBack'>,
  paused: string | null,
): string {
  const c = progressCounts(progress);
  const parts = [
    `watching ${dir}: ${c.succeeded + c.failed + c.skipped} done (${c.succeeded} succeeded, ${c.failed} failed, ${c.skipped} skipped)`,
    `${c.total - c.done} in progress`,
    `${stats.pending + stats.checking} settling`,
  ];
  if (stats.held > 0) parts.push(`${stats.held} incomplete, held back: ${heldNames(stats.heldBack)}`);
  if (paused) parts.push(`PAUSED: ${paused}`);
  return parts.join(' · ');
}

/** Files held back named on the summary line; the rest are counted. */
export const SUMMARY_HELD_NAMED = 3;

/** Files held back listed one by one in the closing lines; the rest are counted. */
export const CLOSING_HELD_LISTED = 20;

/** The first SUMMARY_HELD_NAMED of the files held back, by name, and how many more. */
function heldNames(held: readonly HeldBackFile[]): string {
  const names = held.slice(0, SUMMARY_HELD_NAMED).map((h) => h.input);
  const more = held.length - names.length;
  return more > 0 ? `${names.join(', ')} and ${more} more` : names.join(', ');
}

/** When a file was held back, as the closing lines and `genpipe status` say it. */
export function heldSinceText(ms: number): string {
  return `${new Date(ms).toISOString().replace('T', ' ').slice(0, 19)} UTC`;
}

/**
 * The closing line about the watcher's completeness checks (full decodes, container checks), and the
 * files it took without one because the journal had finished them unchanged.
 *
 * @example checksText({ checks: 1, known: 200 })
 * // '1 completeness check; 200 files finished in an earlier session taken without one'
 */
export function checksText(stats: Pick<WatcherStats, 'checks' | 'known'>): string {
  const checks = plural(stats.checks, 'completeness check');
  if (stats.known === 0) return checks;
  const files = plural(stats.known, 'file');
  return `${checks}; ${files} finished in an earlier session taken without one`;
}

/**
 * The closing lines about the files the watch saw but never took, so the closing totals (which count
 * what the report lists) do not pass over them in silence: files still settling — being written, or
 * waiting out their quiet period or completeness check — and files held back as incomplete. None when
 * there are none.
 *
 * @example untakenText({ pending: 1, checking: 0, held: 0, heldBack: [] })
 * // ['1 file still settling (being written) when the watch stopped was not taken: the next session takes it once it is complete']
 */
export function untakenText(
  stats: Pick<WatcherStats, 'pending' | 'checking' | 'held' | 'heldBack'>,
): string[] {
  const lines: string[] = [];
  const settling = stats.pending + stats.checking;
  if (settling > 0) {
    lines.push(
      settling === 1
        ? '1 file still settling (being written) when the watch stopped was not taken: the next session takes it once it is complete'
        : `${settling} files still settling (being written) when the watch stopped were not taken: the next session takes them once they are complete`,
    );
  }
  if (stats.held > 0) {
    lines.push(
      stats.held === 1
        ? '1 file held back as incomplete (it does not parse) when the watch stopped was not taken: the next session checks it again'
        : `${stats.held} files held back as incomplete (they do not parse) when the watch stopped were not taken: the next session checks them again`,
    );
    for (const h of stats.heldBack.slice(0, CLOSING_HELD_LISTED)) {
      lines.push(`  ${h.input}: ${h.reason} (held back since ${heldSinceText(h.since)})`);
    }
    const more = stats.heldBack.length - CLOSING_HELD_LISTED;
    if (more > 0) lines.push(`  … and ${more} more (report.json lists them all)`);
  }
  return lines;
}
