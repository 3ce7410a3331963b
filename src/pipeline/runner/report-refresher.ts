/**
 * The report refresher: rewrites report.json and report.html every `intervalMs` while items change
 * (one write at a time; a failed write waits for the next tick), and writes them a last time at the end
 * (when the out dir refuses that write, the batch's answer says why instead of failing).
 * A rewrite takes longer as the batch grows; the next one waits at least REWRITE_SHARE_INVERSE - 1 times
 * as long as the last took, so rewriting never takes more than about a fortieth of the batch's time (a
 * tenth below SMALL_REPORT_FILES files).
 * Every file costs each rewrite a little (read back, redacted, rendered twice), so this share is what
 * the running reports cost per file: at a tenth, 6,000 files with real outputs spent 3.3 ms of CPU
 * per file on them (20 s of the run's 70 s), at a fortieth under 1 ms. The thumbnails a rewrite makes
 * for files new on the page's first cards are left out of the time it took: they are made once per
 * file.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { LocalWriteError } from '../../client/index.ts';
import { plural } from '../../spec/plural.ts';
import type { Item } from '../item.ts';
import type { Redact } from '../progress/redact.ts';
import {
  entryStatus,
  type HeldBackFile,
  REPORT_HTML_FILE,
  REPORT_JSON_FILE,
  type ReportFilesMeta,
  type ReportHead,
  type ReportIgnored,
  type ReportJournalMeta,
  reportHead,
  writeReportFiles,
} from '../report/index.ts';
import { reasonOf } from '../runner-errors.ts';
import { holdsServiceWork } from '../store/resume-decision.ts';
import type { BatchItems } from './batch-items.ts';

/** What every report of the batch says besides its items. */
export interface ReportMeta {
  startedAt: number;
  redact: Redact;
  inputDir: string;
  emulator: boolean;
  journal: ReportJournalMeta | null;
  /**
   * What discovery leaves out of the input folder: as it goes (`run`), or as the last complete look at
   * it found (`watch`'s rescans); null when nobody tells.
   */
  ignoredEntries: { section(): ReportIgnored | null } | null;
  /** The files the source holds back as incomplete now (watch's); null when it holds none back ever (run). */
  heldBack?: (() => readonly HeldBackFile[]) | null;
}

/** A rewrite while running takes at most 1 / REWRITE_SHARE_INVERSE of the time (see the module comment). */
export const REWRITE_SHARE_INVERSE = 40;

/**
 * Below this many files, a rewrite takes at most 1 / SMALL_REWRITE_SHARE_INVERSE of the time: on a
 * loaded machine a small report's rewrite still takes a few hundred ms, which the fortieth would turn
 * into a wait of about 10 s before the next (a watch's report that far behind its files).
 */
export const SMALL_REPORT_FILES = 1_000;
export const SMALL_REWRITE_SHARE_INVERSE = 10;

/**
 * The earliest time of the next running rewrite after one of `files` files that ran from `started` to
 * `ended` (ms since the epoch), `thumbnailsMs` of it waiting for thumbnails being made: rewriting then
 * takes at most 1 / REWRITE_SHARE_INVERSE of the time, thumbnails aside (1 / SMALL_REWRITE_SHARE_INVERSE
 * below SMALL_REPORT_FILES files).
 *
 * @example nextRewriteAt(0, 1_000, 5_000) // 40_000: a rewrite of 1 s, then 39 s without one
 */
export function nextRewriteAt(started: number, ended: number, files: number, thumbnailsMs = 0): number {
  const share = files < SMALL_REPORT_FILES ? SMALL_REWRITE_SHARE_INVERSE : REWRITE_SHARE_INVERSE;
  return ended + (share - 1) * Math.max(0, ended - started - thumbnailsMs);
}

export class ReportRefresher {
  private writing: Promise<unknown> | null = null;
  /** Whether the walk of the input folder goes on (the running reports say so). */
  private discovering: boolean;
  /** No rewrite while running before this time (ms since the epoch). */
  private notBefore = 0;
  private readonly timer: NodeJS.Timeout | null;
  /** The files held back at the last look (see heldBackChanged). */
  private heldBackKey = '';

  /**
   * @param intervalMs - 0: only the final write
   * @param writes - false: no file is written (finish only counts)
   */
  constructor(
    private readonly outDir: string,
    private readonly meta: ReportMeta,
    private readonly items: BatchItems,
    intervalMs: number,
    discovering = false,
    private readonly writes = true,
  ) {
    this.discovering = discovering;
    this.timer = intervalMs > 0 && writes ? setInterval(() => this.refresh(), intervalMs) : null;
    this.timer?.unref();
  }

  /** Rewrites the reports unless a write is running or nothing changed. */
  refresh(): void {
    const started = Date.now();
    if (this.writing || started < this.notBefore) return;
    const heldBackChanged = this.heldBackChanged();
    if (!this.items.takeStale() && !heldBackChanged) return;
    let thumbnailsMs = 0;
    const thumbnailsTook = (ms: number) => {
      thumbnailsMs += ms;
    };
    this.writing = this.write({ now: started, thumbnailsTook })
      .catch(() => undefined)
      .finally(() => {
        this.notBefore = nextRewriteAt(started, Date.now(), this.items.size, thumbnailsMs);
        this.writing = null;
      });
  }

  /** True when the files held back changed since the last look (a file held, taken, or changed). */
  private heldBackChanged(): boolean {
    const held = this.meta.heldBack?.() ?? [];
    const key = held.map((h) => `${h.input}\u0000${h.since}`).join('\n');
    if (key === this.heldBackKey) return false;
    this.heldBackKey = key;
    return true;
  }

  /** The walk of the input folder ended: the running reports count every input from now on. */
  discovered(): void {
    this.discovering = false;
  }

  /** No more rewrites while running (the batch's work ended). */
  halt(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * The final reports, after a running rewrite settled; returns their head, and with `keepItems` the
   * items reported (read back).
   */
  async finish(
    finishedAt: number,
    stop: Pick<ReportFilesMeta, 'stoppedEarly' | 'stopped'>,
    keepItems = false,
  ): Promise<{ report: ReportHead; items: Item[]; notWritten: string | null }> {
    this.halt();
    if (this.writing) await this.writing;
    const at = { finishedAt, now: finishedAt, ...stop };
    let report: ReportHead;
    let notWritten: string | null = null;
    try {
      report = await this.write(at);
    } catch (err) {
      // The out dir refuses the reports (full, read-only): the batch's answer is still given, and says so.
      const why = LocalWriteError.from(err, this.outDir)?.message ?? reasonOf(err);
      const stale = await this.dropStale();
      report = await this.write(at, false);
      const where = whereResultsAre(report.totals, this.leftWorkAtService(at));
      notWritten = [why, stale, where].filter((t) => t !== '').join('; ');
    }
    return { report, items: keepItems ? this.items.reportItems() : [], notWritten };
  }

  /**
   * The files left not processed that hold work at the service (an upload, a create answered): the
   * journal keeps them; and those whose create was cut before its answer (a request id, no generation).
   */
  private leftWorkAtService(at: Pick<ReportFilesMeta, 'finishedAt'>): LeftAtService {
    const snapshot = this.items.reportEntries();
    const left: LeftAtService = { kept: 0, cut: 0 };
    try {
      for (const e of snapshot.entries) {
        if (entryStatus(e, at) !== 'unprocessed') continue;
        const item = e.item();
        if (item.steps.some((s) => s.requestId && !s.generationId)) left.cut++;
        else if (holdsServiceWork(item)) left.kept++;
      }
      return left;
    } finally {
      snapshot.release();
    }
  }

  /**
   * Removes the reports a running rewrite left, which no longer match the result.json files (a full
   * disk still allows it); says what became of them.
   */
  private async dropStale(): Promise<string> {
    const stale = [REPORT_JSON_FILE, REPORT_HTML_FILE].map((f) => join(this.outDir, f));
    const fates = await Promise.all(
      stale.map((p) =>
        rm(p).then(
          () => 'removed',
          (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? 'none' : 'left'),
        ),
      ),
    );
    if (fates.includes('left')) return 'the report.json and report.html there are out of date';
    if (fates.includes('removed')) return 'the out-of-date report.json and report.html were removed';
    return '';
  }

  /** Writes both reports from a snapshot of the batch's entries and of what discovery left out. */
  private async write(
    at: Pick<ReportFilesMeta, 'now' | 'finishedAt' | 'stoppedEarly' | 'stopped' | 'thumbnailsTook'>,
    files = this.writes,
  ): Promise<ReportHead> {
    const { ignoredEntries, heldBack, ...fixed } = this.meta;
    const meta: ReportFilesMeta = {
      ...fixed,
      ...at,
      discovering: this.discovering,
      ignored: ignoredEntries?.section() ?? null,
      heldBack: heldBack?.() ?? null,
    };
    const snapshot = this.items.reportEntries();
    try {
      if (!files) return reportHead(snapshot.entries, meta);
      return await writeReportFiles(this.outDir, snapshot.entries, meta);
    } finally {
      snapshot.release();
    }
  }
}

/** Of the files left not processed: `kept` hold work at the service, `cut` a create cut before its answer. */
interface LeftAtService {
  kept: number;
  cut: number;
}

/**
 * Where a batch's results are when its reports could not be written: the result.json of each file that
 * ended (succeeded, failed, skipped), and for the files not processed the journal — counting those for
 * which something was sent to the service (holdsServiceWork), which the next run collects, those whose
 * create was cut before its answer, which the next run calls of unknown outcome, apart from those for
 * which nothing was, which it processes.
 *
 * @example whereResultsAre({ succeeded: 3, failed: 0, skipped: 0, unprocessed: 26 }, { kept: 4, cut: 0 }) // '…; of the 26 files not processed, 4 are at the service and the journal keeps them (the next run collects them); 22 were not sent (the next run processes them)'
 */
function whereResultsAre(
  t: Pick<ReportHead['totals'], 'succeeded' | 'failed' | 'skipped' | 'unprocessed'>,
  left: LeftAtService,
): string {
  const ended = t.succeeded + t.failed + t.skipped;
  if (ended > 0 && t.unprocessed === 0) return "each file's result.json holds what it got";
  const rest = leftWords(t.unprocessed, left, ended === 0);
  return ended === 0 ? rest : `the result.json of each file that ended holds what it got; ${rest}`;
}

/** What whereResultsAre says of the `count` files not processed. */
function leftWords(count: number, left: LeftAtService, alone: boolean): string {
  const files = `the ${plural(count, 'file')} not processed`;
  const kept = Math.min(left.kept, count);
  const cut = Math.min(left.cut, count - kept);
  if (kept === 0 && cut === 0) {
    return alone
      ? 'nothing was sent to the service; the next run processes the files'
      : `for ${files}, nothing was sent to the service for them; the next run processes them`;
  }
  if (kept === count) {
    const keeps = 'the journal keeps what was generated; the next run collects it';
    return alone ? keeps : `for ${files}, ${keeps}`;
  }
  const them = (n: number) => (n === 1 ? 'it' : 'them');
  const was = (n: number) => (n === 1 ? 'was' : 'were');
  const notSent = count - kept - cut;
  const parts = [
    kept > 0
      ? `${kept} ${kept === 1 ? 'is' : 'are'} at the service and the journal keeps ${them(kept)} ` +
        `(the next run collects ${them(kept)})`
      : '',
    cut > 0
      ? `${cut} may have reached the service, the stop cut ${cut === 1 ? 'its create' : 'their creates'} ` +
        `before the answer (the next run calls ${cut === 1 ? 'its' : 'their'} outcome unknown; ` +
        `--resubmit-unknown sends ${them(cut)} again)`
      : '',
    notSent > 0 ? `${notSent} ${was(notSent)} not sent (the next run processes ${them(notSent)})` : '',
  ];
  return `of ${files}, ${parts.filter((p) => p !== '').join('; ')}`;
}
