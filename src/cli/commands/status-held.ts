/**
 * What `genpipe status` says of the files a watch holds back as incomplete (stable, but they do not
 * parse): not inputs yet, so not in the journal. They are read from the head of the out dir's last
 * report.json (`held_back`), which the watch rewrites while it runs and once more when it stops.
 */
import { type ReportHeldBack, readReportHead } from '../../pipeline/index.ts';
import { heldSinceText } from './watch-summary.ts';

/** Files held back listed one by one; the rest are counted. */
export const STATUS_HELD_LISTED = 50;

/** The files held back as the last report.json lists them, and when that watch stopped (null: not yet). */
export interface StatusHeldBack {
  files: ReportHeldBack[];
  /** report.json's `finished_at`: null while the watch runs (or when it was killed). */
  stoppedAt: string | null;
}

/** The files held back in `<out>/report.json`, or null when it lists none (or there is none). */
export function statusHeldBack(outDir: string): StatusHeldBack | null {
  const head = readReportHead(outDir);
  if (!head?.held_back || head.held_back.length === 0) return null;
  return { files: head.held_back, stoppedAt: head.finished_at };
}

/**
 * The lines `genpipe status` prints of them.
 *
 * @example heldBackLines({ files: [{ input: 'half.png', reason: '…', since: '…' }], stoppedAt: null })
 */
export function heldBackLines(held: StatusHeldBack): string[] {
  const n = held.files.length;
  const lines = [
    held.stoppedAt === null
      ? `held back as incomplete by the watch (they do not parse; report.json as it last wrote it): ${n}`
      : `held back as incomplete when the watch stopped at ${heldSinceText(Date.parse(held.stoppedAt))} (they do not parse; the next watch checks them again): ${n}`,
  ];
  for (const f of held.files.slice(0, STATUS_HELD_LISTED)) {
    lines.push(`  ${f.input}: ${f.reason} (held back since ${heldSinceText(Date.parse(f.since))})`);
  }
  if (n > STATUS_HELD_LISTED)
    lines.push(`  … and ${n - STATUS_HELD_LISTED} more (report.json lists them all)`);
  return lines;
}
