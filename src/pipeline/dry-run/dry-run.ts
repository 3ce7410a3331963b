/**
 * A dry run: every file taken through the pipeline's local steps (LOCAL_STEPS: sniff, plan, check) and
 * the journal's decision, exactly as a run would take it, and stopped where its upload would begin.
 * Nothing talks to the service and nothing is written: no upload, no create, no journal row, no report,
 * nothing in the out dir. Each file's entry says what would be sent (the request, how its media would
 * travel) or why not (the reasons a run gives); the totals count the generations by type.
 *
 * Files with the same content and recipe (copies-in-run.ts): one another input of the out dir did, or
 * does now in another process, is reused from it (the journal's preview says so); of copies no run did,
 * the first told is sent and each later one reused from it, as a run's admit makes them wait for the
 * first and link its outputs.
 *
 * Files come from discovery (--include, --exclude, --max-files, the ignored entries counted) or from a
 * `source` (watch's settled files, until it ends). They are evaluated a few at a time (the machine's
 * parallelism) and told in the order they came.
 */
import { availableParallelism } from 'node:os';
import pLimit from 'p-limit';
import { CHOICES } from '../../spec/index.ts';
import { discover } from '../discover.ts';
import type { InputSelection } from '../input-selection.ts';
import type { Item, StageName } from '../item.ts';
import { EMULATOR_MEDIA_URL } from '../legacy-media-url.ts';
import { type Recipe, recipeFiles } from '../recipe.ts';
import { IgnoredEntries, type ReportIgnored } from '../report/index.ts';
import type { AdmitDecision } from '../runner/options.ts';
import { refusedAtCheck, withStepsTaken } from '../runner/step-policy.ts';
import { isAbort, reasonOf } from '../runner-errors.ts';
import type { StageContext } from '../stage.ts';
import { LOCAL_STEPS } from '../stage-list.ts';
import { LEGACY_SUBMIT_TEXTS, mediaUrlRule } from '../stages/legacy-submit.ts';
import { BASE64_MAX_BYTES } from '../stages/upload.ts';
import { stepsTaken, type WorkIdentity } from '../store/index.ts';
import { CopiesInRun } from './copies-in-run.ts';
import { type DryRunEntry, dryRunEntry, type MediaSettings, reusedByDecision } from './dry-run-entry.ts';
import { DRY_RUN_TEXTS } from './dry-run-texts.ts';
import { DryRunTotals } from './dry-run-totals.ts';

/** Options of a dry run. */
export interface DryRunOptions {
  inputDir: string;
  outDir: string;
  recipe: Recipe;
  /** The files to take among those discovered (--include, --exclude, --max-files). */
  select?: InputSelection;
  /** Where the files come from instead of discovering `inputDir` (watch); the dry run ends when it ends. */
  source?: AsyncIterable<Item>;
  /** The command dry-run (default `run`): the words its entries use for the copies among its files. */
  command?: 'run' | 'watch';
  /** Aborting it ends the dry run: files not evaluated yet are not told. */
  signal?: AbortSignal;
  /**
   * The journal's decision for a planned file, read only (Journal.preview): what a run would do with
   * it. Without it every file is new.
   */
  preview?: (item: Item, signal: AbortSignal) => Promise<AdmitDecision>;
  /**
   * Without a journal (no `preview`): the identity of a planned file's work (store's newFileWork), by
   * which copies in this dry run are told apart. Without either, every copy is sent.
   */
  identify?: (item: Item, signal: AbortSignal) => Promise<WorkIdentity>;
  /** A reason to fail a file at check instead of checking it (watch: a file that never became complete). */
  failAtCheck?: (item: Item) => string | null;
  /** Told every file's entry, in the order the files came. */
  onEntry?: (entry: DryRunEntry) => void;
  /** Files evaluated at once (default: the machine's parallelism, at least 2). */
  localConcurrency?: number;
  /** Largest file the client uploads inline in `auto` mode (default: the client's). */
  inlineMaxBytes?: number;
  /** Largest image sent as base64 under `upload: base64` (default: the runner's). */
  base64MaxBytes?: number;
  /**
   * The check a run makes before it sends a file's bytes under `media_url: emulator` (the client's
   * emulatorMedia.confirm: is the legacy surface's server the emulator?); throws why not. Without it
   * (the embedded emulator) such files would be sent.
   */
  confirmEmulatorMedia?: (signal: AbortSignal) => Promise<void>;
}

/** What a dry run ends with. */
export interface DryRunResult {
  totals: DryRunTotals;
  /** What discovery left out (null with a `source`). */
  ignored: ReportIgnored | null;
  /** The signal ended it before every file was evaluated. */
  interrupted: boolean;
}

/** What evaluate found of a file: its entry, and the identity of its work when known. */
interface Evaluated {
  entry: DryRunEntry;
  work: WorkIdentity | null;
}

/** Tells entries in the order their files came, whatever order they finish in. */
class InOrder {
  private next = 0;
  private told = 0;
  private readonly ready = new Map<number, Evaluated | null>();

  constructor(private readonly tell: (evaluated: Evaluated) => void) {}

  /** The turn of the next file. */
  take(): number {
    return this.next++;
  }

  /** The entry of turn `n` (null: nothing to tell), and every entry ready after it. */
  put(n: number, entry: Evaluated | null): void {
    this.ready.set(n, entry);
    while (this.ready.has(this.told)) {
      const e = this.ready.get(this.told);
      this.ready.delete(this.told);
      this.told++;
      if (e) this.tell(e);
    }
  }
}

/**
 * Runs a dry run to its end (see the module comment).
 *
 * @example const { totals } = await dryRun({ inputDir: 'in', outDir: 'out', recipe, onEntry: console.log });
 */
export async function dryRun(options: DryRunOptions): Promise<DryRunResult> {
  const signal = options.signal ?? new AbortController().signal;
  const totals = new DryRunTotals();
  const ignored = options.source ? null : new IgnoredEntries();
  const concurrency = Math.max(1, options.localConcurrency ?? Math.max(2, availableParallelism()));
  const limit = pLimit(concurrency);
  const settings: MediaSettings = {
    recipe: options.recipe,
    base64MaxBytes: options.base64MaxBytes ?? BASE64_MAX_BYTES,
    inlineMaxBytes: options.inlineMaxBytes ?? CHOICES.inlineUploadMaxBytes,
  };
  const ctx: StageContext = {
    inputDir: options.inputDir,
    outDir: options.outDir,
    recipe: options.recipe,
    signal,
  };
  // In the order the files came, so that which of the copies is sent does not depend on timing.
  const copies = new CopiesInRun(DRY_RUN_TEXTS.within[options.command ?? 'run']);
  const order = new InOrder(({ entry, work }) => {
    const told = copies.told(entry, work);
    totals.add(told);
    options.onEntry?.(told);
  });
  const walk =
    options.source ??
    discover(options.inputDir, {
      outDir: options.outDir,
      skipFiles: recipeFiles(options.recipe),
      onSkip: (input, reason) => ignored?.add(input, reason),
      signal,
      ...(options.select ? { select: options.select } : {}),
    });
  const pending = new Set<Promise<void>>();
  try {
    for await (const found of walk) {
      if (signal.aborted) break;
      const turn = order.take();
      const p = limit(() => evaluate(found, ctx, options, settings)).then(
        (entry) => order.put(turn, entry),
        () => order.put(turn, null),
      );
      pending.add(p);
      void p.finally(() => pending.delete(p));
      // Bounded: a folder of a million files is not read ahead of its checks.
      if (pending.size >= concurrency * 2) await Promise.race(pending);
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
  await Promise.all(pending);
  return { totals, ignored: ignored?.section() ?? null, interrupted: signal.aborted };
}

/**
 * One file through the local steps, the journal's decision after plan (where a run admits it), and
 * check unless `failAtCheck` fails it first (or the decision reuses another input's work): its entry
 * and the identity of its work, or null when the dry run was interrupted.
 */
async function evaluate(
  found: Item,
  ctx: StageContext,
  options: DryRunOptions,
  settings: MediaSettings,
): Promise<Evaluated | null> {
  let item = found;
  let decision: AdmitDecision | null = null;
  let work: WorkIdentity | null = null;
  let at: StageName | null = null;
  try {
    for (const step of LOCAL_STEPS) {
      if (item.state !== step.takes) continue;
      at = step.name;
      if (step.name === 'check') {
        const refused = refusedAtCheck(item, options.failAtCheck);
        if (refused) {
          item = refused;
          break;
        }
      }
      item = await step.run(item, ctx);
      if (step.name !== 'plan' || item.state !== 'planned') continue;
      if (options.preview) {
        decision = inDryRunTerms(await options.preview(item, ctx.signal));
        work = decision.work ?? null;
        item = { ...decision.item, journal: { action: decision.action, reason: decision.reason } };
        // Another input's outputs would be linked here: a run checks nothing more of the file.
        if (reusedByDecision(decision)) break;
      } else if (options.identify) work = await options.identify(item, ctx.signal);
    }
  } catch (err) {
    if (isAbort(err, ctx.signal) || ctx.signal.aborted) return null;
    // As the runner says of a file it cannot read any more, or of a problem that is not the file's.
    const code = (err as NodeJS.ErrnoException).code;
    const why = err instanceof Error ? err.message : String(err);
    const reason =
      code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR'
        ? 'file not found or not readable'
        : `internal error: ${why}`;
    item = { ...item, state: 'failed', failedAt: at, reason };
  }
  const entry = dryRunEntry(item, decision, settings);
  if (entry?.outcome === 'send' && mediaUrlRule(item, ctx.recipe) === EMULATOR_MEDIA_URL) {
    const refused = await emulatorMediaRefused(item, ctx.signal, options.confirmEmulatorMedia);
    if (refused) return { entry: dryRunEntry(refused, decision, settings) ?? entry, work };
  }
  return entry ? { entry, work } : null;
}

/** The item failed at submit as a run would fail it when the emulator's media store is not there; else null. */
async function emulatorMediaRefused(
  item: Item,
  signal: AbortSignal,
  confirm: DryRunOptions['confirmEmulatorMedia'],
): Promise<Item | null> {
  if (!confirm) return null;
  try {
    await confirm(signal);
    return null;
  } catch (err) {
    if (isAbort(err, signal)) throw err;
    return {
      ...item,
      state: 'failed',
      failedAt: 'submit',
      reason: LEGACY_SUBMIT_TEXTS.notSent(reasonOf(err)),
    };
  }
}

/**
 * A `wait` (another process works on the same content now: a run waits for it, then reuses its
 * outputs) in a dry run's words; a chain's steps taken from another file's work as a run goes on with
 * them (the others to send, priced); any other decision as it is.
 */
function inDryRunTerms(decision: AdmitDecision): AdmitDecision {
  const from = decision.sameContent;
  if (decision.action === 'reuse' && from?.steps) {
    return withStepsTaken(decision, stepsTaken(decision.item, [...from.steps], from.item.media));
  }
  if (decision.action !== 'wait') return decision;
  return { ...decision, reason: DRY_RUN_TEXTS.sameContentElsewhere(from?.input ?? '') };
}
