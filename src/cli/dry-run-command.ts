/**
 * `--dry-run` of `genpipe run` and `genpipe watch`: the command's checks (out dir, recipe, service,
 * watch's folders), then every file through the pipeline's local steps and the journal's decision
 * (dryRun), each told on stdout — what would be sent, or why not — and a closing summary on stderr: the
 * files by outcome, the generations by type and their estimated cost, from `--price-list` or from the
 * emulator's configured costs (`GET /_emulator/costs`, asked without the key).
 *
 * Nothing is uploaded or submitted, and nothing is written: the embedded emulator is not started, the
 * out dir is neither created nor locked, the journal (when it exists) is read without its lock and
 * without a write, and no report is made.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { requestUrl, withoutUserinfo } from '../client/index.ts';
import {
  type AdmitDecision,
  createRedactor,
  DRY_RUN_TEXTS,
  type DryRunEntry,
  type DryRunOptions,
  type DryRunSummary,
  defaultJournalPath,
  dryRun,
  dryRunLine,
  dryRunSummaryLines,
  EMBEDDED_IDENTITY,
  formerServiceIdentities,
  type Item,
  ignoredText,
  type Journal,
  loadPriceList,
  newFileWork,
  type PriceList,
  PriceListError,
  pricesOfAnswer,
  type Redact,
  redoneOnEmbedded,
  runnerLockHeld,
  type Store,
  serviceIdentity,
} from '../pipeline/index.ts';
import { redactDeep } from '../pipeline/progress/index.ts';
import { type BatchFlags, type BatchOptions, resolveBatchOptions } from './batch-options.ts';
import { openRunJournal, planOptionsOf } from './batch-setup.ts';
import { embeddedEmulatorCosts } from './embedded-emulator.ts';
import { EXIT } from './exit-codes.ts';
import { makeClient } from './make-client.ts';
import { resolveServiceConfig } from './service-config.ts';
import { UsageError } from './usage-error.ts';

/** How long the emulator's costs are waited for. */
export const COSTS_TIMEOUT_MS = 5_000;

/** What a command's source of items needs: the options, the journal's finished files, notes. */
export interface IntakeSetup extends BatchOptions {
  /** The store (a dry run's is the journal read only, and null when there is none yet). */
  store: Pick<Store, 'finishedFiles'> | null;
  /** Prints a note on stderr, secrets masked (nothing with --quiet). */
  note(text: string): void;
}

/** Where a command's dry run takes its files from instead of discovery (watch: its watcher's). */
export interface DryRunIntake {
  /** The files, until a signal ends it (the dry run's normal end then). */
  source: AsyncIterable<Item>;
  /** A reason to fail a file at check instead of checking it. */
  failAtCheck: (item: Item) => string | null;
  /** The closing summary's lines of the command's own, between the totals and the last line. */
  closingLines?: () => string[];
}

/** What a dry run uses of a batch command (batch-command.ts's BatchCommand). */
export interface DryRunCommand {
  readonly name: 'run' | 'watch';
  checkInputDir(inputDir: string): Promise<void>;
  checkFolders?(inputDir: string, outDir: string): Promise<void>;
  /** The command's own source of files (watch); without it the input dir is discovered. */
  dryRunIntake?(setup: IntakeSetup): Promise<DryRunIntake>;
  stopIntake?(): Promise<void>;
  endDisplay(): void;
}

/** What the body of executeBatch hands a dry run. */
export interface DryRunSession {
  readonly cmd: DryRunCommand;
  readonly request: { inputDir: string; flags: BatchFlags };
  readonly json: boolean;
  readonly quiet: boolean;
  /** Aborted by the first signal. */
  readonly signal: AbortSignal;
  /** Prints a note on stderr (nothing with --quiet). */
  note(text: string): void;
  /** Keeps the secrets never to print; the journal, for the teardown to close. */
  opened(parts: { secrets?: string[]; journal?: Journal }): void;
}

/** The prices of a dry run and where they came from, or why there are none. */
export interface Prices {
  prices: PriceList | null;
  source: string | null;
  unknownWhy: string;
}

/** The service a dry run prices for: who the journal knows it as, and how to learn its prices. */
interface DryRunService {
  identity: string;
  /** Former identities of the same service (the URL with its credentials), never stored. */
  formerIdentities: string[];
  emulator: boolean;
  secrets: string[];
  prices(signal: AbortSignal): Promise<Prices>;
  /** The run's check of the emulator's media store (`media_url: emulator`); none for the embedded emulator. */
  confirmEmulatorMedia?: (signal: AbortSignal) => Promise<void>;
}

/**
 * The check a run makes before sending bytes under `media_url: emulator`, by a client of the flags as
 * the run's (the legacy base URL it would send the creates to); asked once, by the first file needing it.
 */
function emulatorMediaCheck(flags: BatchFlags): (signal: AbortSignal) => Promise<void> {
  let checked: Promise<void> | null = null;
  return (signal) => {
    checked ??= (async () => {
      const { client } = makeClient(flags);
      try {
        await client.emulatorMedia.confirm(signal);
      } finally {
        await client.close();
      }
    })();
    return checked;
  };
}

/**
 * The service of the flags, without connecting to it: the embedded emulator (not started: its costs
 * are its configuration's), or the configured service, whose prices only genpipe serve tells.
 *
 * @throws UsageError when no service is configured, as a run says
 */
function dryRunService(flags: BatchFlags): DryRunService {
  if (flags.emulator) {
    return {
      identity: EMBEDDED_IDENTITY,
      formerIdentities: [],
      emulator: true,
      secrets: [],
      prices: async () => ({
        prices: embeddedEmulatorCosts(),
        source: "the embedded emulator's costs",
        unknownWhy: '',
      }),
    };
  }
  let config: ReturnType<typeof resolveServiceConfig>;
  try {
    config = resolveServiceConfig(flags);
  } catch (err) {
    if (err instanceof UsageError && /no service configured/.test(err.message)) {
      throw new UsageError(`${err.message}; or pass --emulator to run against the embedded emulator`);
    }
    throw err;
  }
  const baseUrl = config.baseUrl.replace(/\/+$/, '');
  return {
    identity: serviceIdentity(config.baseUrl),
    formerIdentities: formerServiceIdentities(config.baseUrl),
    emulator: false,
    secrets: [config.apiKey, config.legacyToken ?? ''].filter(Boolean),
    prices: (signal) => emulatorPrices(baseUrl, signal),
    confirmEmulatorMedia: emulatorMediaCheck(flags),
  };
}

/**
 * The costs a genpipe emulator at `baseUrl` is configured with (`GET /_emulator/costs`, no key sent);
 * none from another service.
 */
async function emulatorPrices(baseUrl: string, signal: AbortSignal): Promise<Prices> {
  let url = `${baseUrl}/_emulator/costs`;
  try {
    // As every request: to the URL without its user and password (request-url.ts).
    url = requestUrl(url);
    const res = await fetch(url, {
      signal: AbortSignal.any([signal, AbortSignal.timeout(COSTS_TIMEOUT_MS)]),
    });
    const body: unknown = res.ok ? await res.json().catch(() => null) : null;
    const prices = pricesOfAnswer(body);
    if (prices) return { prices, source: `the emulator's configured costs (${url})`, unknownWhy: '' };
    return {
      prices: null,
      source: null,
      unknownWhy: `the service at ${withoutUserinfo(baseUrl)} does not tell its prices`,
    };
  } catch (err) {
    const why = failureWords(err);
    return { prices: null, source: null, unknownWhy: `could not ask ${url} for prices: ${why}` };
  }
}

/** Why fetch failed, in a word or two: the system's code (ECONNREFUSED, ENOTFOUND), else its message. */
function failureWords(err: unknown): string {
  const e = err as {
    name?: string;
    message?: string;
    cause?: { code?: string; message?: string; errors?: Array<{ code?: string }> };
  };
  if (e.name === 'TimeoutError') return `no answer within ${COSTS_TIMEOUT_MS / 1000} s`;
  return e.cause?.code ?? e.cause?.errors?.[0]?.code ?? e.cause?.message ?? e.message ?? String(err);
}

/**
 * The prices a batch's generations are counted at (the dashboard's credits), as a dry run prices
 * them: `--price-list`, else what the service tells (the emulator's costs); null prices when it tells
 * none.
 *
 * @throws UsageError for a price list that cannot be used
 */
export function batchPrices(flags: BatchFlags, signal: AbortSignal): Promise<Prices> {
  return pricesOf(flags, dryRunService(flags), signal);
}

/** The price list of `--price-list`, or the service's; problems of the file are usage errors (exit 2). */
async function pricesOf(flags: BatchFlags, service: DryRunService, signal: AbortSignal): Promise<Prices> {
  if (flags.priceList === undefined) return service.prices(signal);
  return priceListPrices(flags.priceList);
}

/**
 * The prices of a `--price-list` file (as given on the command line).
 *
 * @throws UsageError naming the file's problems
 */
export async function priceListPrices(file: string): Promise<Prices> {
  try {
    const prices = await loadPriceList(resolve(file), file);
    return { prices, source: `the price list ${file}`, unknownWhy: '' };
  } catch (err) {
    if (err instanceof PriceListError) throw new UsageError(err.lines);
    throw err;
  }
}

/**
 * The journal of the out dir, opened to be read (its lock not taken, nothing written), or null when
 * there is none yet (nothing is created).
 */
function readJournal(outDir: string, path: string | undefined): Journal | null {
  const file = path ? resolve(path) : defaultJournalPath(outDir);
  if (!existsSync(file)) return null;
  return openRunJournal({ outDir, path: file, readOnly: true });
}

/**
 * A file the crash policy would fail, seen beside a live batch: that batch is submitting it (it recorded
 * the intent, and has no answer yet), so it is shown in progress at the service, nothing created again.
 */
function inRunningBatch(d: AdmitDecision, pid: number | null): AdmitDecision {
  const reason = DRY_RUN_TEXTS.inRunningBatch(pid);
  return { action: 'resume', item: { ...d.item, state: 'submitted', failedAt: null, reason: null }, reason };
}

/** Where the lines of a dry run go: entries on stdout, the summary on stderr. */
function writers(s: DryRunSession, redact: Redact) {
  return {
    entry: (entry: DryRunEntry) => {
      if (s.json) {
        process.stdout.write(`${JSON.stringify(redactDeep({ type: 'dry_run_item', ...entry }, redact))}\n`);
      } else if (!s.quiet) process.stdout.write(`${dryRunLine(entry, redact)}\n`);
    },
    finished: (summary: DryRunSummary, extra: Record<string, unknown>) => {
      if (!s.json) return;
      process.stdout.write(
        `${JSON.stringify(redactDeep({ type: 'dry_run_finished', ...summary, ...extra }, redact))}\n`,
      );
    },
    closing: (lines: string[]) => {
      for (const line of lines) process.stderr.write(`genpipe: ${redact(line)}\n`);
    },
  };
}

/**
 * Runs the dry run of `s.cmd` and returns its exit code: 0 when no file would fail, 1 when some would
 * (locally, or reported failed again from the journal), 130 when a signal interrupted `run`'s (a
 * signal is watch's normal end). Usage problems throw UsageError (exit 2), as a run's.
 */
export async function executeDryRun(s: DryRunSession): Promise<number> {
  const { cmd, request } = s;
  const { flags } = request;
  const options = await resolveBatchOptions(request.inputDir, flags, cmd.name, (dir) =>
    cmd.checkInputDir(dir),
  );
  const service = dryRunService(flags);
  s.opened({ secrets: service.secrets });
  await cmd.checkFolders?.(options.inputDir, options.outDir);
  const prices = await pricesOf(flags, service, s.signal);
  const journal = readJournal(options.outDir, flags.journal);
  if (journal) s.opened({ journal });
  if (journal?.readNote) s.note(journal.readNote);
  const setup: IntakeSetup = { ...options, store: journal, note: s.note };
  const intake = (await cmd.dryRunIntake?.(setup)) ?? null;
  const redact = createRedactor(service.secrets);
  const out = writers(s, redact);
  if (!s.json && !s.quiet) {
    process.stdout.write(
      `${DRY_RUN_TEXTS.head(cmd.name, request.inputDir, flags.out ?? options.outDir, service.emulator)}\n`,
    );
  }
  // Beside a live batch (its lock held), a create whose intent it recorded is on its way, not of unknown outcome.
  const live = journal && runnerLockHeld(options.outDir) === true ? await journal.lockHolder() : undefined;
  if (live !== undefined) s.note(DRY_RUN_TEXTS.runningBatch(live?.pid ?? null));
  const plan = { ...planOptionsOf(flags), service: service.identity };
  const preview: DryRunOptions['preview'] = journal
    ? async (item, signal) => {
        const d = await journal.preview(item, options.recipe, {
          ...plan,
          formerServices: service.formerIdentities,
          signal,
        });
        if (live !== undefined && d.action === 'fail') return inRunningBatch(d, live?.pid ?? null);
        return service.emulator ? redoneOnEmbedded(item, d) : d;
      }
    : undefined;
  // No journal yet: every file is new, and copies among them are told apart by their content alone.
  const identify: DryRunOptions['identify'] = (item, signal) =>
    newFileWork(item, options.recipe, { ...plan, signal });
  const result = await dryRun({
    inputDir: options.inputDir,
    outDir: options.outDir,
    recipe: options.recipe,
    select: options.select,
    command: cmd.name,
    signal: s.signal,
    onEntry: out.entry,
    ...(preview ? { preview } : { identify }),
    ...(service.confirmEmulatorMedia ? { confirmEmulatorMedia: service.confirmEmulatorMedia } : {}),
    ...(intake ? { source: intake.source, failAtCheck: intake.failAtCheck } : {}),
  });
  await cmd.stopIntake?.();
  cmd.endDisplay();
  const summary = result.totals.summary(prices.prices, prices.source);
  // A source (watch) ends on a signal: that is its normal end, not an interruption.
  const interrupted = result.interrupted && intake === null;
  out.finished(summary, {
    ...(result.ignored ? { ignored: result.ignored.total } : {}),
    interrupted,
  });
  out.closing([
    ...dryRunSummaryLines(
      summary,
      prices.prices,
      result.ignored ? ignoredText(result.ignored) : null,
      prices.unknownWhy,
    ),
    ...(intake?.closingLines?.() ?? []),
    ...(interrupted ? [DRY_RUN_TEXTS.interrupted] : []),
    DRY_RUN_TEXTS.nothingSent,
  ]);
  if (interrupted) return EXIT.interrupted;
  return result.totals.anyFailed ? EXIT.failed : EXIT.ok;
}
