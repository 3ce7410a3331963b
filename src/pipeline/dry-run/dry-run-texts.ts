/**
 * A dry run in words: one line per file on stdout (the same reasons a real run prints), and the closing
 * summary — files by outcome (those reused from another file with the same content among them),
 * generations by type, the estimated cost and where its prices came from.
 */
import { GENERATION_TYPES, type GenerationType } from '../../spec/index.ts';
import { plural } from '../../spec/plural.ts';
import { formatBytes, printable } from '../progress/format.ts';
import { type Redact, redactShapes } from '../progress/redact.ts';
import type { DryRunEntry, DryRunMedia } from './dry-run-entry.ts';
import type { DryRunSummary } from './dry-run-totals.ts';
import type { PriceList } from './price-list.ts';

/** The texts of a dry run, in one place. */
export const DRY_RUN_TEXTS = {
  /** The first line (stdout, not with --json). */
  head: (command: string, inputDir: string, outDir: string, emulator: boolean) =>
    `dry run of ${command}: ${inputDir} -> ${outDir}${emulator ? ' (EMULATOR)' : ''}: nothing is uploaded or submitted`,
  /** The closing summary's last line. */
  nothingSent: 'nothing was uploaded or submitted, and nothing was written to the out dir or the journal',
  /** Without a price list. */
  costUnknown: (why: string) =>
    `estimated cost: unknown (${why}); give --price-list <file> with the credits of each generation type, as { image: 1, video: 10 }`,
  /** A file whose create a batch running in the out dir has sent (its intent recorded, no answer yet). */
  inRunningBatch: (pid: number | null) =>
    `in progress in the batch running in this out dir${pid !== null ? ` (pid ${pid})` : ''}: its create is on its way`,
  /** The head's note when a runner holds the out dir. */
  runningBatch: (pid: number | null) =>
    `a batch is running in this out dir${pid !== null ? ` (pid ${pid})` : ''}: a run now would be refused until it ends; the files it is submitting are shown in progress`,
  /** After a signal. */
  interrupted: 'the dry run was interrupted: files not evaluated yet are not counted',
  /**
   * Where a copy's twin is sent, in the command's words: a run's files, or what a watch takes in its
   * session (as its other messages say: "finished in an earlier session").
   */
  within: { run: 'in this run', watch: 'in this session' },
  /** A copy of a file this dry run would send: a run sends the first, and links its outputs here. */
  reusedInRun: (first: string, within: string) => `reused: same content as ${first} (${within})`,
  /** A chain's steps another file of this dry run sends for the same bytes: taken from it, not sent. */
  stepsInRun: (names: readonly string[], first: string, within: string) =>
    `${names.length === 1 ? 'step' : 'steps'} ${names.map((n) => `'${n}'`).join(', ')} taken from ${first}, which sends ${names.length === 1 ? 'it' : 'them'} for the same content (${within})`,
  /** A file with the same content as one another process is working on now: its outputs reused once done. */
  sameContentElsewhere: (input: string) =>
    `reused once done: same content as ${input}, which another process is working on now`,
} as const;

/** How the file's own media would travel, in words. */
function mediaWords(media: DryRunMedia | null, bytes: number): string {
  switch (media) {
    case 'inline':
    case 'presigned':
      return `the file uploaded ${media} (${formatBytes(bytes)})`;
    case 'base64':
      return `the image as base64 in the request (${formatBytes(bytes)})`;
    case 'prompt':
      return 'the text as the prompt';
    case 'reused':
      return 'the upload of an earlier run reused';
    case 'url':
      return `the file by URL (${formatBytes(bytes)})`;
    default:
      return 'nothing of its own to upload';
  }
}

/**
 * The plain line of one file (without a newline): what would be sent, or why not, in a real run's
 * words.
 *
 * @example dryRunLine(entry) // 'a.txt: would send image (uni-1), the text as the prompt: {"type":"image",…}'
 */
export function dryRunLine(entry: DryRunEntry, redact: Redact = redactShapes): string {
  const text = (s: string) => printable(redact(s));
  const name = text(entry.input);
  const why = entry.reason ? text(entry.reason) : '';
  switch (entry.outcome) {
    case 'send': {
      if (entry.steps) return chainLines(entry, text).join('\n');
      const model = entry.model ? ` (${text(entry.model)})` : '';
      const journal = entry.reason ? ` [${why}]` : '';
      return `${name}: would send ${entry.generation_type}${model}, ${mediaWords(entry.media, entry.bytes)}${journal}: ${text(JSON.stringify(entry.request))}`;
    }
    case 'fail':
      if (entry.from_journal) return `${name}: ${why}`;
      return `${name}: would fail${entry.stage ? ` at ${entry.stage}` : ''}: ${why}`;
    case 'skip':
      return `${name}: skipped: ${why}`;
    case 'done':
      return `${name}: ${why || 'already done in an earlier run'}: nothing is sent`;
    case 'reuse':
      return `${name}: ${why}: nothing is sent`;
    case 'collect':
      if (entry.steps) return chainLines(entry, text).join('\n');
      return `${name}: ${why}: nothing is created again`;
  }
}

/** What becomes of a chain's step, in words. */
const STEP_OUTCOME_WORDS = {
  collect: 'its generation exists: collected, not created again',
  done: 'done in an earlier run: nothing is sent',
  fail: 'failed in an earlier run: not run again',
} as const;

/**
 * A chain's lines: the input's (how many steps, how its own media would travel), then one per step,
 * parents first, with the request it would send.
 */
function chainLines(entry: DryRunEntry, text: (s: string) => string): string[] {
  const name = text(entry.input);
  const steps = entry.steps ?? [];
  const sent = steps.filter((s) => s.outcome === 'send').length;
  const journal = entry.reason ? ` [${text(entry.reason)}]` : '';
  const head =
    sent === steps.length
      ? `would send a chain of ${plural(steps.length, 'step')}`
      : `would send ${sent} of its chain's ${plural(steps.length, 'step')}`;
  return [
    `${name}: ${head}, ${mediaWords(entry.media, entry.bytes)}${journal}`,
    ...steps.map((s) => {
      const after = s.after.length > 0 ? ` (after ${s.after.map(text).join(', ')})` : '';
      const at = `${name}: step '${text(s.name)}'${after}`;
      if (s.outcome !== 'send') return `${at}: ${STEP_OUTCOME_WORDS[s.outcome]}`;
      const model = s.model ? ` (${text(s.model)})` : '';
      return `${at}: would send ${s.generation_type}${model}: ${text(JSON.stringify(s.request))}`;
    }),
  ];
}

/** `2 image, 1 video` in the order of the types. */
function byType(counts: Partial<Record<GenerationType, number>>): string {
  return GENERATION_TYPES.filter((t) => counts[t])
    .map((t) => `${counts[t]} ${t}`)
    .join(', ');
}

/** The summary's cost line. */
function costLine(summary: DryRunSummary, prices: PriceList | null, unknownWhy: string): string {
  const { cost, generations } = summary;
  if (cost.credits === null || prices === null) return DRY_RUN_TEXTS.costUnknown(unknownWhy);
  if (Object.keys(generations).length === 0) return 'estimated cost: 0 credits (no generation)';
  const priced = GENERATION_TYPES.filter((t) => generations[t] && cost.unpriced[t] === undefined);
  const unpriced = Object.keys(cost.unpriced).length > 0;
  const parts = priced.map((t) => `${generations[t]} ${t} × ${prices[t]}`).join(', ');
  const credits = plural(cost.credits, 'credit');
  let line = `estimated cost: ${unpriced ? 'at least ' : ''}${credits}${parts ? ` (${parts})` : ''}, from ${cost.source}`;
  if (unpriced) line += `; no price there for ${byType(cost.unpriced)}`;
  return line;
}

/**
 * The closing summary's lines (without the `genpipe: ` prefix).
 *
 * @param prices - the prices the cost was estimated with (null: none)
 * @param ignored - the ignored entries in words (`4 ignored: …`), or null (watch)
 * @param unknownWhy - why the cost is unknown, when it is
 */
export function dryRunSummaryLines(
  summary: DryRunSummary,
  prices: PriceList | null,
  ignored: string | null,
  unknownWhy: string,
): string[] {
  const o = summary.outcomes;
  const files = [
    `${o.send} would be sent`,
    ...(o.reuse > 0 ? [`${o.reuse} would be reused from the same content under another name`] : []),
    `${o.fail} would fail`,
    `${o.skip} skipped`,
    ...(o.done > 0 ? [`${o.done} already done in an earlier run`] : []),
    ...(o.collect > 0 ? [`${o.collect} already at the service (collected, not created again)`] : []),
  ];
  const total = Object.values(summary.generations).reduce((a, b) => a + (b ?? 0), 0);
  const lines = [
    `dry run: ${plural(summary.files, 'file')}: ${files.join(', ')}${ignored ? `; ${ignored}` : ''}`,
    total > 0 ? `generations: ${byType(summary.generations)} (${total} in all)` : 'generations: none',
    costLine(summary, prices, unknownWhy),
  ];
  if (summary.references.length > 0) {
    lines.push(
      `shared references (each uploaded once, or an earlier run's upload reused): ${summary.references.join(', ')}`,
    );
  }
  return lines;
}
