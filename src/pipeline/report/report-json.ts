/**
 * The batch report `<out>/report.json`: every input exactly once with its status, reason and outputs,
 * and the totals. An input is told apart by its place (its out folder): two versions of a file with the
 * same name that each have a folder of their own are two entries. Built from the items alone, so it can be rebuilt and rewritten at any moment of a
 * batch (issue 5 refreshes it as items finish); written atomically.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { isoTime } from '../../spec/iso-time.ts';
import { pluralNoun } from '../../spec/plural.ts';
import { isChain } from '../chain.ts';
import { itemStatus, type ReportStatus } from '../events.ts';
import { currentStep, type Item, type ItemAttempt, type StageName } from '../item.ts';
import { type Redact, redactDeep, redactShapes } from '../progress/redact.ts';
import { RUN_FLAGS } from '../run-flags.ts';
import { type HeldBackFile, heldBackJson, type ReportHeldBack } from './held-back.ts';
import type { ReportIgnored } from './ignored.ts';
import { itemPlace, RESULT_FILE } from './item-paths.ts';
import { REPORT_JSON_FILE } from './out-dir-names.ts';
import { heldEntries, type JournalCount, type ReportEntry } from './report-entries.ts';
import { earlierAttemptsJson, type StepJson, stepsJson } from './result-json.ts';
import { AtomicFile, writeFileAtomic } from './write-atomic.ts';

export { REPORT_JSON_FILE } from './out-dir-names.ts';

/** One input in report.json. Paths are relative to the out dir, '/' separated. */
export interface ReportItem {
  input: string;
  /**
   * The item's out folder, relative to the out dir: the input path, unless an earlier version of the
   * file (other bytes or recipe, or --force) left work of the service in that folder.
   */
  place: string;
  /** pending only while the batch runs; unprocessed when the batch stopped before the file was done. */
  status: ReportStatus;
  /** Why it was skipped, failed or left unprocessed; null when it succeeded (or is pending). */
  reason: string | null;
  generation_id: string | null;
  outputs: string[];
  /** composite.png of a layer stack, else null. */
  composite: string | null;
  /** The stage that failed it, when failed. */
  stage: StageName | null;
  /** The service's failure_code when the generation failed. */
  failure_code: string | null;
  /** The item's result.json, when the item got one (it did not when left unprocessed or pending). */
  result: string | null;
  /**
   * The generations (or creates) the item had before `generation_id`, oldest first, each with its
   * failure: those that failed and were tried again (see ResultJson.earlier_attempts). Empty when none.
   */
  earlier_attempts: ItemAttempt[];
  /**
   * With a journal: what it decided for the item in this run, in words ("resumed: waiting for
   * generation …", "already done in an earlier run", "the file changed since the last run: processed
   * again", "retried: generation_failed in the earlier run (retryable)"); null for a file processed
   * for the first time. Absent without a journal.
   */
  journal?: string | null;
  /** A chain's steps, parents first, each with its state (see ResultJson.steps); absent for one request. */
  steps?: StepJson[];
}

/** What the journal did in a batch (report.json `journal`). */
export interface ReportJournal {
  /** The journal file. */
  file: string;
  /**
   * Items continued from where an earlier run left them (polled, downloaded or submitted, not redone),
   * and items an earlier run stopped or died before finishing, continued from the start ("continued: …").
   */
  resumed: number;
  /**
   * Items an earlier run finished successfully, reported as they were (nothing sent again): "already
   * done in an earlier run".
   */
  reused: number;
  /**
   * Items another input with the same content and recipe stood for (a rename, a copy, a symlink): its
   * outputs linked into their folders, or its generation collected; nothing sent for them.
   */
  same_content: number;
  /**
   * Items that failed in an earlier run for a reason of the file's own, reported failed again as they
   * were (nothing sent): "failed in an earlier run (…), not retried". Counted among the failed.
   */
  not_retried: number;
  /** Items processed again because their file or recipe changed, or --force. */
  redone: number;
  /**
   * Items that failed in an earlier run and were tried again: their failure may pass now (a retryable
   * failure_code, a 5xx, 429s, the network), or --retry-failed. Their `journal` reason says which.
   */
  retried: number;
  /**
   * Items failed in this run by the crash policy: a create of an earlier run may have reached the
   * service, but its answer was never recorded (counted among the failed, never among the reused).
   */
  unknown_outcome: number;
  /**
   * What happens to an item whose create may have reached the service without its answer being
   * recorded (a kill mid-create): `fail` (default: never pay twice) or `resubmit` (--resubmit-unknown).
   */
  unknown_submissions_policy: 'fail' | 'resubmit';
  /** That policy in words. */
  unknown_submissions_note: string;
}

/** The journal facts a batch gives its report (the counts are taken from the items). */
export interface ReportJournalMeta {
  file: string;
  policy: ReportJournal['unknown_submissions_policy'];
  note: string;
}

/** Counts by status; `inputs` is their sum. */
export interface ReportTotals {
  inputs: number;
  succeeded: number;
  failed: number;
  skipped: number;
  unprocessed: number;
  pending: number;
}

/** The shape of report.json. */
export interface BatchReport {
  /** ISO 8601. */
  started_at: string;
  /** ISO 8601; null while the batch runs. */
  finished_at: string | null;
  /**
   * Set when the batch stopped early (authentication, suspended client, no balance, service unreachable,
   * a signal). `not_looked_at`: the files discovery found after the stop, counted only (none of them is in
   * `items`; present when there were some); `not_looked_at_partial`: the count was cut short (a second
   * signal), so there are at least that many.
   */
  stopped_early: StoppedEarly | null;
  /**
   * Set when the batch ended the normal way by being stopped — a watch, by a signal — instead of stopping
   * early (`stopped_early` is then null): `reason`, `by` (`Ctrl-C / SIGINT`, `SIGTERM`), and
   * `not_looked_at` as in `stopped_early`. Absent otherwise.
   */
  stopped?: StoppedBy;
  /**
   * Present (true) while the batch runs and its walk of the input folder has not ended: `totals.inputs`
   * counts the files found so far, there are at least that many.
   */
  discovering?: true;
  totals: ReportTotals;
  /**
   * The entries of the input folder that are not inputs (what discovery left out), each with why: the
   * first 1,000 listed, all counted. Present when the batch walked its input folder (`run`), absent
   * for `watch`.
   */
  ignored?: ReportIgnored;
  /**
   * The files a watch holds back as incomplete (held-back.ts), each with why and since when, by input
   * path: not inputs yet, so neither in `items` nor in the totals. Present for `watch`, absent for `run`.
   */
  held_back?: ReportHeldBack[];
  /**
   * Every input exactly once (told apart by place), sorted by input path; the versions of one input
   * path in the order of their folders (`scan.png`, `scan-1.png`, `scan-2.png`, …).
   */
  items: ReportItem[];
  /** With a journal: what it did in this batch, and the crash policy in force. Absent without one. */
  journal?: ReportJournal;
}

/** Why a batch stopped early, and how many files it then never looked at (see BatchReport). */
export interface StoppedEarly {
  reason: string;
  not_looked_at?: number;
  not_looked_at_partial?: true;
}

/** A batch stopped as it normally ends (a watch, by a signal): see BatchReport.stopped. */
export interface StoppedBy extends StoppedEarly {
  by: string;
}

/**
 * How a stop is told in the reports (`reason`; `end` when the stop is the batch's normal end, as
 * runner/stop-control.ts's BatchStop has it): `stopped_early`, or `stopped` for a normal end.
 */
export function reportStop(
  stop: { reason: string; end?: string } | null,
  notLookedAt: Omit<StoppedEarly, 'reason'> = {},
): Pick<ReportMeta, 'stoppedEarly' | 'stopped'> {
  if (!stop) return { stoppedEarly: null };
  const told = { reason: stop.reason, ...notLookedAt };
  return stop.end === undefined
    ? { stoppedEarly: told }
    : { stoppedEarly: null, stopped: { ...told, by: stop.end } };
}

/** "N more files were not looked at" of a stop, or '' when none. */
export function notLookedAtText(stop: StoppedEarly | null | undefined): string {
  const n = stop?.not_looked_at ?? 0;
  if (n === 0) return '';
  const count = stop?.not_looked_at_partial ? `at least ${n}` : String(n);
  const words = pluralNoun(stop?.not_looked_at_partial ? 2 : n, 'more file was', 'more files were');
  return `${count} ${words} not looked at (found after the stop)`;
}

/** When the batch started and ended, and why it stopped early if it did. */
export interface ReportMeta {
  /** ms since the epoch. */
  startedAt: number;
  /** ms since the epoch; null/absent while the batch runs. */
  finishedAt?: number | null;
  /** The reason the batch stopped early (the `batch_stopping` event's reason). */
  stoppedEarly?: StoppedEarly | null;
  /** How the batch was stopped when that is its normal end (report.json `stopped`; see reportStop). */
  stopped?: StoppedBy | null;
  /** The batch runs and its walk of the input folder goes on (report.json `discovering`). */
  discovering?: boolean;
  /** Masks the secrets the runner knows (default: key- and bearer-shaped strings only). */
  redact?: Redact;
  /** The batch ran with a journal: its file and crash policy (report.json `journal`). */
  journal?: ReportJournalMeta | null;
  /** What discovery left out of the input folder so far (report.json `ignored`; watch: at its last complete rescan). */
  ignored?: ReportIgnored | null;
  /** The files a watch holds back as incomplete now (report.json `held_back`); absent for `run`. */
  heldBack?: readonly HeldBackFile[] | null;
}

/**
 * The stop reason in brief, for the files it left: its words before the first `: `, `. ` or ` (`
 * ("insufficient balance", "authentication failed"); the whole reason is the batch's own line.
 */
export function briefStopReason(reason: string): string {
  const cut = /: |\. | \(/.exec(reason);
  const brief = cut ? reason.slice(0, cut.index) : reason;
  return brief.charAt(0).toLowerCase() + brief.slice(1);
}

/** What becomes of the `files` a watch stopped as it normally ends left: the next session takes them. */
export function watchStoppedLater(files = 1): string {
  return `${files === 1 ? 'it is' : 'they are'} picked up when the watch starts again`;
}

/**
 * Reason of an item left unprocessed without one of its own, following the stop's cause: a watch
 * stopped by a signal (`by`: its normal end) was stopped; any other stop ended the batch early.
 */
export function unprocessedReason(stop: { reason: string; by?: string } | null | undefined): string {
  if (!stop) return 'not processed: the batch ended before this file was done';
  if (stop.by !== undefined)
    return `not processed: the watch was stopped (${stop.by}); ${watchStoppedLater()}`;
  return `not processed: the batch stopped early (${briefStopReason(stop.reason)})`;
}

/**
 * The items to report: one per place (a later item in the same out folder replaces an earlier one),
 * sorted by input path, the versions of one input path in the order of their folders.
 */
export function uniqueItems(items: Iterable<Item>): Item[] {
  return heldEntries(items).map((e) => e.item());
}

/** The status an entry is reported with: once the batch has finished, `pending` is `unprocessed`. */
export function entryStatus(
  entry: Pick<ReportEntry, 'status'>,
  meta: Pick<ReportMeta, 'finishedAt'>,
): ReportStatus {
  return entry.status === 'pending' && meta.finishedAt != null ? 'unprocessed' : entry.status;
}

/**
 * An item's line in the report. Once the batch has finished, an item that never reached a final
 * state is reported as unprocessed.
 */
export function reportItem(
  item: Item,
  meta: Pick<ReportMeta, 'finishedAt' | 'stoppedEarly' | 'stopped'>,
): ReportItem {
  const step = currentStep(item);
  let status = itemStatus(item);
  if (status === 'pending' && meta.finishedAt != null) status = 'unprocessed';
  let reason: string | null = null;
  if (status === 'failed') reason = item.reason ?? step?.generation?.failure_reason ?? 'failed';
  else if (status === 'skipped') reason = item.reason ?? 'skipped';
  else if (status === 'unprocessed')
    reason = item.reason ?? unprocessedReason(meta.stoppedEarly ?? meta.stopped);
  const hasResult = status === 'succeeded' || status === 'failed' || status === 'skipped';
  const place = itemPlace(item);
  const line: ReportItem = {
    input: item.input,
    place,
    status,
    reason,
    generation_id: step?.generationId ?? null,
    outputs: [...(step?.outputs ?? [])],
    composite: step?.composite ?? null,
    stage: status === 'failed' ? item.failedAt : null,
    failure_code: step?.generation?.failure_code ?? null,
    result: hasResult ? `${place}/${RESULT_FILE}` : null,
    earlier_attempts: earlierAttemptsJson(item),
  };
  if (item.journal) line.journal = item.journal.reason;
  if (isChain(item)) {
    line.steps = stepsJson(item);
    line.outputs = item.steps.flatMap((s) => s.outputs);
  }
  return line;
}

/** The report's journal section: the meta plus counts of the items' journal decisions. */
function journalSection(entries: readonly ReportEntry[], meta: ReportJournalMeta): ReportJournal {
  const counts: Record<JournalCount, number> = {
    resumed: 0,
    reused: 0,
    same_content: 0,
    not_retried: 0,
    redone: 0,
    retried: 0,
    unknown_outcome: 0,
  };
  for (const e of entries) if (e.journalCount) counts[e.journalCount]++;
  return {
    file: meta.file,
    ...counts,
    unknown_submissions_policy: meta.policy,
    unknown_submissions_note: meta.note,
  };
}

/**
 * What the journal did in a batch, in words: the one account the closing summary of `genpipe run` and
 * report.html's banner both print (so they never disagree with each other or with report.json). The
 * rarer counts (not retried, unknown outcome) are named only when there are some.
 *
 * @example journalCountsText(report.journal)
 * // '6 already done in an earlier run, 0 resumed, 0 redone, 6 retried, 2 failed in an earlier run and not retried'
 */
export function journalCountsText(j: ReportJournal): string {
  const parts = [
    `${j.reused} already done in an earlier run`,
    `${j.resumed} resumed`,
    `${j.redone} redone`,
    `${j.retried} retried`,
  ];
  if (j.same_content > 0) parts.push(`${j.same_content} reused from the same content under another name`);
  if (j.not_retried > 0) parts.push(`${j.not_retried} failed in an earlier run and not retried`);
  if (j.unknown_outcome > 0) {
    parts.push(
      `${j.unknown_outcome} failed with an unknown submission outcome (${RUN_FLAGS.resubmitUnknownFlag} submits again)`,
    );
  }
  return parts.join(', ');
}

/** True when the journal did anything worth a line: some item's decision came from an earlier run. */
export function journalDidAnything(j: ReportJournal): boolean {
  return j.reused + j.same_content + j.not_retried + j.resumed + j.redone + j.retried + j.unknown_outcome > 0;
}

/** report.json without its items: what it says of the batch as a whole. */
export type ReportHead = Omit<BatchReport, 'items'>;

/**
 * The report's head (pure): times, stopped-early reason, the journal section and the totals of the
 * entries, redacted. The entries are not read, only counted.
 *
 * @param entries one per place (see reportEntries)
 */
export function reportHead(entries: readonly ReportEntry[], meta: ReportMeta): ReportHead {
  const totals: ReportTotals = {
    inputs: entries.length,
    succeeded: 0,
    failed: 0,
    skipped: 0,
    unprocessed: 0,
    pending: 0,
  };
  for (const e of entries) totals[entryStatus(e, meta)]++;
  const head: ReportHead = {
    started_at: isoTime(meta.startedAt),
    finished_at: meta.finishedAt == null ? null : isoTime(meta.finishedAt),
    stopped_early: meta.stoppedEarly ? { ...meta.stoppedEarly } : null,
    ...(meta.stopped ? { stopped: { ...meta.stopped } } : {}),
    ...(meta.discovering && meta.finishedAt == null ? { discovering: true as const } : {}),
    ...(meta.journal ? { journal: journalSection(entries, meta.journal) } : {}),
    totals,
    ...(meta.ignored ? { ignored: meta.ignored } : {}),
    ...(meta.heldBack ? { held_back: heldBackJson(meta.heldBack) } : {}),
  };
  return redactDeep(head, meta.redact ?? redactShapes);
}

/** An entry's line in report.json, redacted (the entry's item is read). */
export function entryLine(entry: ReportEntry, meta: ReportMeta): ReportItem {
  return redactDeep(reportItem(entry.item(), meta), meta.redact ?? redactShapes);
}

/**
 * The batch report (pure): every input exactly once, with totals by status. Can be called at any
 * moment of a batch; items still in flight are `pending` until `meta.finishedAt` is set.
 *
 * @param items every item of the batch, in any order
 * @example const report = buildReport(items, { startedAt, finishedAt: Date.now() });
 */
export function buildReport(items: Iterable<Item>, meta: ReportMeta): BatchReport {
  const entries = heldEntries(items);
  return { ...reportHead(entries, meta), items: entries.map((e) => entryLine(e, meta)) };
}

/**
 * Writes `<out>/report.json` atomically (tmp file + rename) and returns its path.
 *
 * @example await writeReportJson('/data/out', buildReport(items, meta));
 */
export async function writeReportJson(outDir: string, report: BatchReport): Promise<string> {
  const path = join(outDir, REPORT_JSON_FILE);
  await writeFileAtomic(path, reportJsonText(report));
  return path;
}

/**
 * Writes `<out>/report.json` from the report's head and its entries, reading one entry's item at a
 * time (see reportJsonPieces); returns its path.
 */
export async function writeReportJsonEntries(
  outDir: string,
  head: ReportHead,
  entries: readonly ReportEntry[],
  meta: ReportMeta,
): Promise<string> {
  const path = join(outDir, REPORT_JSON_FILE);
  await writeFileAtomic(path, reportJsonPieces(head, lines(entries, meta), entries.length));
  return path;
}

function* lines(entries: readonly ReportEntry[], meta: ReportMeta): Generator<ReportItem> {
  for (const e of entries) yield entryLine(e, meta);
}

/**
 * The text of report.json — `JSON.stringify(report, null, 2)` and a newline, exactly — in pieces, one
 * per item, so a report of 100,000 items is never one string in memory.
 *
 * @example [...reportJsonText(report)].join('') === `${JSON.stringify(report, null, 2)}\n`
 */
export function reportJsonText(report: BatchReport): Generator<string> {
  const { items, ...head } = report;
  return reportJsonPieces(head, items, items.length);
}

/** The text of report.json up to its first item (or the whole text when it has none). */
function jsonHeadText(head: ReportHead, count: number): string {
  const whole = JSON.stringify({ ...head, items: [] }, null, 2);
  return count === 0 ? `${whole}\n` : `${whole.slice(0, whole.length - '[]\n}'.length)}[\n`;
}

/** An item's text in report.json (`last`: no comma after it). */
function jsonItemText(line: ReportItem, last: boolean): string {
  return `    ${JSON.stringify(line, null, 2).replaceAll('\n', '\n    ')}${last ? '' : ','}\n`;
}

const JSON_TAIL = '  ]\n}\n';

/**
 * reportJsonText of the report made of `head` and the `count` items of `items` (`items` is the
 * report's last key: everything before it is the head of the text).
 */
export function* reportJsonPieces(
  head: ReportHead,
  items: Iterable<ReportItem>,
  count: number,
): Generator<string> {
  yield jsonHeadText(head, count);
  if (count === 0) return;
  let i = 0;
  for (const line of items) yield jsonItemText(line, ++i >= count);
  yield JSON_TAIL;
}

/** Where the head of report.json's text ends (see jsonHeadText): its items follow. */
const ITEMS_KEY = ',\n  "items": [';

/**
 * The head of `<out>/report.json` (everything but its items), read without reading the items: what
 * `genpipe status` tells of the last report. Null when there is no report.json, or it is not one.
 *
 * @example readReportHead('/data/out')?.held_back // [{ input: 'half.png', reason: '…', since: '…' }]
 */
export function readReportHead(outDir: string): ReportHead | null {
  let fd: number;
  try {
    fd = openSync(join(outDir, REPORT_JSON_FILE), 'r');
  } catch {
    return null;
  }
  try {
    const chunk = Buffer.alloc(64 * 1024);
    const utf8 = new StringDecoder('utf8');
    let text = '';
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      text += utf8.write(chunk.subarray(0, n));
      const at = text.indexOf(ITEMS_KEY);
      if (at >= 0) return JSON.parse(`${text.slice(0, at)}\n}`) as ReportHead;
      if (n === 0) return null;
    }
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * report.json written line by line into an atomic file as the lines come (the page's writer hands
 * them over as it reads each item: see writeReportFiles): reportJsonText, exactly, once all `count`
 * lines were added.
 */
export class ReportJsonSink {
  private added = 0;

  private constructor(
    readonly file: AtomicFile,
    private readonly count: number,
  ) {}

  /** Opens `<out>/report.json`'s scratch file and writes the head. */
  static async open(outDir: string, head: ReportHead, count: number): Promise<ReportJsonSink> {
    const sink = new ReportJsonSink(await AtomicFile.open(join(outDir, REPORT_JSON_FILE)), count);
    sink.file.add(jsonHeadText(head, count));
    return sink;
  }

  add(line: ReportItem): void {
    this.file.add(jsonItemText(line, ++this.added >= this.count));
  }

  drain(): Promise<void> {
    return this.file.drain();
  }

  /** Writes the end; throws unless every line was added (the file is then not put in place). */
  async finish(): Promise<void> {
    if (this.added !== this.count) {
      throw new Error(`report.json: ${this.added} of ${this.count} items were written`);
    }
    if (this.count > 0) this.file.add(JSON_TAIL);
  }
}
