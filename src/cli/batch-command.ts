/**
 * The one body of the batch commands, `genpipe run` and `genpipe watch` (and `genpipe demo` through
 * run): resolve the options (resolveBatchOptions), connect the service, open the journal, wire
 * SIGINT / SIGTERM, start the batch, print the closing summary, tear everything down and pick the exit
 * code. What differs between the commands — how the input dir is checked, where the items come from,
 * what a signal prints, the lines of their summary, what counts as success — is the BatchCommand a
 * command hands in.
 *
 * SIGINT / SIGTERM once: no new work; what is already at the service gets SIGNAL_CHOICES.graceMs to
 * finish, then the rest is left to the journal and the command exits; twice: everything is cancelled at
 * once.
 */

import { isAbsolute, relative, resolve } from 'node:path';
import type { DashboardActions, DashboardBatch } from '../pipeline/dashboard/index.ts';
import {
  type Batch,
  type BatchResult,
  type BatchStop,
  createRedactor,
  type GenpipeMetrics,
  ignoredText,
  journalCountsText,
  journalDidAnything,
  journalErrorWords,
  type LogFile,
  LogFileOpenError,
  logFileRefusal,
  notLookedAtText,
  OVERLAP_WORDS,
  openLogFile,
  type PipelineEvent,
  type ProgressDisplay,
  REPORT_HTML_FILE,
  type Redact,
  type RunOptions,
  type Store,
  startBatch,
} from '../pipeline/index.ts';
import { printable } from '../pipeline/progress/index.ts';
import { secretsOf } from '../pipeline/store/postgres/index.ts';
import { plural } from '../spec/plural.ts';
import { type BatchDashboard, bothHooks, startBatchDashboard } from './batch-dashboard.ts';
import { type BatchMetrics, startBatchMetrics } from './batch-metrics.ts';
import { type BatchFlags, recordedFlags, resolveBatchOptions } from './batch-options.ts';
import {
  type BatchService,
  connectService,
  type JournalRunOptions,
  journalRunOptions,
  openRunJournal,
  SIGNAL_CHOICES,
  type SignalWatch,
  watchSignals,
} from './batch-setup.ts';
import {
  batchPrices,
  type DryRunIntake,
  type DryRunSession,
  executeDryRun,
  type IntakeSetup,
} from './dry-run-command.ts';
import { emulatorBanner } from './embedded-emulator.ts';
import { EXIT, signalExit } from './exit-codes.ts';
import { growHeapBeforeMarking } from './heap-growth.ts';
import { genpipeVersion } from './package-root.ts';
import { printError } from './print-error.ts';
import { RetryNotes } from './retry-notes.ts';
import { runOptionsOf } from './run-options.ts';
import { ENV } from './service-config.ts';
import { type StopSignal, signalName, signalStopReason } from './signal-words.ts';
import { snakeKeys } from './snake-keys.ts';
import { clientOptionsForStore, openRunStore, storeUrlOf } from './store-option.ts';
import { UsageError } from './usage-error.ts';

export type { StopSignal } from './signal-words.ts';

/** The runner options that wire the journal in (journalRunOptions). */
export type Journaling = JournalRunOptions;

export type { DryRunIntake, IntakeSetup };

/** What a command's hooks get once the service is connected and the store open. */
export interface BatchSetup extends IntakeSetup {
  service: BatchService;
  store: Store;
}

/** What one batch command does its own way; one per execution (it may hold the execution's state). */
export interface BatchCommand {
  /** The command's name: its words in refusals, and what the journal records. */
  readonly name: 'run' | 'watch';
  /** Prints a line of its own on stderr (watch: above its running summary line). */
  print(line: string): void;
  /** Ends the command's own display before an error is printed (called again: nothing). */
  endDisplay(): void;
  /**
   * A signal is how the command's batch normally ends (watch): its stop is told as `stopping: Ctrl-C /
   * SIGINT`, not as an early one.
   */
  readonly endsOnSignal?: boolean;
  /** The first signal: the reason the batch stops for, and the note printed then (null: none). */
  interruption(signal: StopSignal, started: boolean): { reason: string; note: string | null };
  /** Refuses an input dir the command cannot take (a UsageError). */
  checkInputDir(inputDir: string): Promise<void>;
  /** With the service connected, before the journal is opened: the command's own refusals. */
  checkFolders?(inputDir: string, outDir: string): Promise<void>;
  /** With the journal open, before the batch is recorded in it: the command's source of items starts. */
  open?(setup: IntakeSetup): Promise<void>;
  /**
   * `--dry-run`: starts the command's source of items (after its checks; the journal read only, or
   * null), when it has one of its own; without this hook the dry run discovers the input dir.
   */
  dryRunIntake?(setup: IntakeSetup): Promise<DryRunIntake>;
  /** The progress display of the batch's events (stdout). */
  /** @param verbose - plain lines for every state a file reaches, not only its outcome (-v) */
  createProgress(json: boolean, redact: Redact, verbose: boolean): ProgressDisplay;
  /**
   * The runner options that say where the items come from and what happens to them (processed here,
   * or handed to the store's workers), from those that wire the journal in; `metrics`: `--metrics-port`'s,
   * when served.
   */
  runOptions(
    setup: BatchSetup,
    journaling: Journaling,
    metrics: GenpipeMetrics | null,
  ): Partial<RunOptions> | Promise<Partial<RunOptions>>;
  /**
   * `--dashboard`'s retry of a failed input: takes it in again as the command takes a file (watch: as a
   * file it sees anew), for the store to decide; the answer in words. Absent: the command cannot.
   */
  retake?(input: string, batch: Batch): Promise<string>;
  /**
   * `--dashboard`'s actions this command cannot take, each with why (the page shows them disabled with
   * it): `retry`, `pause`.
   */
  readonly unavailable?: Partial<Record<'retry' | 'pause', string>>;
  /** `--dashboard`'s pause and resume of the intake: no new file is started meanwhile. */
  pauseIntake?(): Promise<string>;
  resumeIntake?(): Promise<string>;
  /**
   * True once for an input `retake` took in again: its admission retries its failure as --retry-failed
   * would (the store's own decision, with that flag for this file).
   */
  retryFailedOnce?(input: string): boolean;
  /** The files found and waiting for the intake now (watch's queue), for the dashboard. */
  intakeWaiting?(): number;
  /** Where an input is now when it left its place (watch's --on-done move), for the dashboard's thumbnails. */
  inputPath?(input: string): string | null;
  /** The files held back as incomplete now, with why and since when (watch's), for the dashboard. */
  heldBack?(): readonly { input: string; reason: string; since: number }[];
  /** The files settling and waiting for the intake now (watch's), for the dashboard. */
  waiting?(): NonNullable<DashboardBatch['waiting']>;
  /** Sees every event of the batch before the progress display. */
  observe?(event: PipelineEvent): void;
  /** Stops taking in new items (more calls: nothing): on the first signal, the batch's end, the teardown. */
  stopIntake?(): Promise<void>;
  /** The batch is over (finished or failed): the command's own timers stop, its intake too. */
  settle?(): Promise<void>;
  /** How the journal records the batch's end. */
  finishState(result: BatchResult): 'finished' | 'stopped';
  /** Ends the command's own display and gives the closing summary's lines between the totals and the report. */
  closingLines(result: BatchResult): string[];
  /** The exit code of a batch that ended (`aborted`: a second signal cut its wind-down short). */
  exitCode(result: BatchResult, aborted: boolean): number;
  /**
   * A PostgreSQL store opened for this command takes the out dir's runner lock (default true); false
   * for a run that hands its files to the workers and follows them (distributed mode: many may follow
   * one folder).
   */
  readonly storeLock?: boolean;
}

/** What executeBatch runs. */
export interface BatchRequest {
  inputDir: string;
  flags: BatchFlags;
  /** Printed last, after the report's path (demo's hint). */
  epilogue?: (result: BatchResult, outDir: string) => string[];
}

/** One execution's shared state: what the signal handlers, the body and the teardown all see. */
interface Session {
  readonly cmd: BatchCommand;
  readonly flags: BatchFlags;
  readonly json: boolean;
  readonly quiet: boolean;
  readonly controller: AbortController;
  /** Never printed: the key, once the service is connected its secrets. */
  secrets: string[];
  service: BatchService | null;
  store: Store | null;
  batch: Batch | null;
  /** Set by the first signal. */
  stopReason: string | null;
  /** `--log-file`, once open. */
  log: LogFile | null;
  /** Prints a note on stderr (not with --quiet) and writes it to the log file. */
  note(text: string): void;
  /** Writes a note to the log file only. */
  record(text: string): void;
  /** The client's retry notes, counted rather than each printed (not with -v or --json). */
  retryNotes: RetryNotes | null;
  /** `--metrics-port`: the batch's metrics and their server, once started. */
  metrics: BatchMetrics | null;
  /** `--dashboard`: the batch's dashboard, once started. */
  dashboard: BatchDashboard | null;
  /** Why the batch stopped early, once it ended (a journal failure is then said already). */
  stopCause: BatchStop['cause'] | null;
}

/** A display path: relative to the working directory when inside it. */
export function shown(path: string): string {
  // A store's location (a redacted URL) is no path.
  if (!isAbsolute(path)) return path;
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') ? rel : path;
}

/**
 * Runs a batch command and returns its exit code (errors are printed, never thrown).
 *
 * @example process.exitCode = await executeBatch(runCommand(), { inputDir: 'photos', flags: { out: 'out' } });
 */
export async function executeBatch(cmd: BatchCommand, request: BatchRequest): Promise<number> {
  growHeapBeforeMarking();
  const { flags } = request;
  const quiet = flags.quiet === true;
  const session: Session = {
    cmd,
    flags,
    json: flags.json === true,
    quiet,
    controller: new AbortController(),
    secrets: [flags.apiKey ?? ''].filter(Boolean),
    service: null,
    store: null,
    batch: null,
    stopReason: null,
    log: null,
    note: (text) => {
      session.record(text);
      if (!quiet) cmd.print(`genpipe: ${printable(createRedactor(session.secrets)(text))}`);
    },
    record: (text) => session.log?.line('note', text),
    retryNotes: null,
    metrics: null,
    dashboard: null,
    stopCause: null,
  };
  const signals = wireSignals(session);
  let code: number = EXIT.failed;
  try {
    if (flags.dryRun && storeUrlOf(flags) !== null) {
      throw new UsageError(
        `--dry-run does not read a PostgreSQL store yet (--store or ${ENV.store}): run the dry run without it`,
      );
    }
    code = flags.dryRun
      ? await executeDryRun(dryRunSession(session, request))
      : await runBatch(session, request);
  } catch (err) {
    cmd.endDisplay();
    logError(session, err);
    code = printError(err, { json: session.json, secrets: session.secrets });
  } finally {
    // A journal that could not be closed (its last writes refused) is a journal that can no longer be
    // written: exit 3, unless a signal or an earlier exit 2 / 3 said more.
    if (!(await tearDown(session, signals)) && (code === EXIT.ok || code === EXIT.failed)) {
      code = EXIT.stoppedEarly;
    }
  }
  return signalExit(code, signals.received);
}

/** What a dry run sees of the session. */
function dryRunSession(s: Session, request: BatchRequest): DryRunSession {
  return {
    cmd: s.cmd,
    request,
    json: s.json,
    quiet: s.quiet,
    signal: s.controller.signal,
    note: s.note,
    opened: ({ secrets, journal }) => {
      if (secrets) s.secrets = [...s.secrets, ...secrets];
      if (journal) s.store = journal;
    },
  };
}

/** The two-step answer to SIGINT / SIGTERM (watchSignals). */
function wireSignals(s: Session): SignalWatch {
  return watchSignals({
    first: (signal) => {
      // A dry run has nothing at the service to wind down: it stops evaluating files.
      const { reason, note } = s.flags.dryRun
        ? { reason: signalStopReason(signal), note: null }
        : s.cmd.interruption(signal, s.batch !== null);
      stopBatch(s, reason, note, s.cmd.endsOnSignal ? signalName(signal) : undefined);
    },
    second: () => {
      s.note('stopping at once; the journal keeps how far each file got');
      s.controller.abort(new DOMException('interrupted', 'AbortError'));
    },
    windingUp: () => s.batch?.windingUp === true,
    // The journal's close is done when called (its promise only reports it): nothing is lost by the exit.
    beforeHardExit: () => {
      s.log?.flush();
      void s.store?.close();
    },
  });
}

/**
 * The first stop, by a signal or the dashboard's stop: no new work, what is at the service winds down.
 * `end`: the stop is how the batch normally ends (a watch's), in those words.
 */
function stopBatch(s: Session, reason: string, note: string | null, end: string | undefined): void {
  s.stopReason = reason;
  s.metrics?.metrics.health.stopping(reason);
  if (note !== null) s.note(note);
  if (!s.batch) s.controller.abort(new DOMException('interrupted', 'AbortError'));
  s.batch?.stop(reason, end);
  void s.cmd.stopIntake?.();
}

/** What the dashboard's buttons do: each what the CLI would do (a signal, a file seen anew). */
function dashboardActions(s: Session): DashboardActions {
  const { cmd } = s;
  const retake = cmd.retake?.bind(cmd);
  const pause = cmd.pauseIntake?.bind(cmd);
  const resume = cmd.resumeIntake?.bind(cmd);
  const intake = (paused: boolean, act: () => Promise<string>) => async () => {
    const said = await act();
    if (s.dashboard) s.dashboard.model.batch.intakePaused = paused;
    s.note(said);
    return said;
  };
  // A retry from the page is said on stderr and in the log, as a pause or a stop is; a refusal too.
  const noted = async (act: () => Promise<string>) => {
    try {
      const said = await act();
      s.note(`retry from the dashboard: ${said}`);
      return said;
    } catch (err) {
      s.note(`retry from the dashboard refused: ${(err as Error).message}`);
      throw err;
    }
  };
  return {
    ...(pause && resume ? { pause: intake(true, pause), resume: intake(false, resume) } : {}),
    stop: async () => {
      if (s.stopReason !== null) return 'already stopping';
      stopBatch(
        s,
        DASHBOARD_STOP_REASON,
        `${DASHBOARD_STOP_REASON}: ${DASHBOARD_STOP_NOTE}`,
        cmd.endsOnSignal ? 'the dashboard' : undefined,
      );
      return 'stopping: no new work; work already at the service winds down';
    },
    ...(cmd.unavailable ? { unavailable: cmd.unavailable } : {}),
    ...(retake
      ? {
          retry: (input: string) => noted(() => retake(input, started(s))),
          retryAll: () =>
            noted(async () => {
              const failed = s.dashboard?.model.failedInputs() ?? [];
              // Each file on its own: one that cannot be taken again (gone) says why, the others go on.
              const refused: string[] = [];
              for (const input of failed) {
                await retake(input, started(s)).catch((err: Error) => refused.push(err.message));
              }
              if (failed.length === 0) return 'no failed file to retry';
              const taken = `taken again: ${plural(failed.length - refused.length, 'failed file')}`;
              return refused.length === 0 ? taken : `${taken}; not taken: ${refused.join('; ')}`;
            }),
        }
      : {}),
  };
}

/** The batch, once started (an action asked before: refused in words). */
function started(s: Session): Batch {
  if (!s.batch) throw new Error('the batch has not started yet: try again in a moment');
  return s.batch;
}

const DASHBOARD_STOP_REASON = 'stopped from the dashboard';
const DASHBOARD_STOP_NOTE =
  'no new work; work already at the service gets its grace period, then the journal keeps the rest';

/**
 * `--log-file`, opened before anything else (a file that cannot be opened is a usage error), with the
 * run's separator line and its options (never the key or the token).
 *
 * @throws UsageError
 */
function openBatchLog(s: Session): LogFile | null {
  const path = s.flags.logFile;
  if (path === undefined) return null;
  try {
    return openLogFile(
      resolve(path),
      {
        version: genpipeVersion(),
        command: s.cmd.name,
        // As status --json shows the batch's options: by the flags' names in snake_case.
        options: snakeKeys(recordedFlags(s.cmd.name, s.flags)),
      },
      {
        redact: createRedactor([s.flags.apiKey, s.flags.legacyToken]),
        onWriteError: (err) => {
          if (!s.quiet) s.cmd.print(`genpipe: the log file cannot be written any more: ${err.message}`);
        },
      },
    );
  } catch (err) {
    if (err instanceof LogFileOpenError) {
      throw new UsageError([`--log-file ${err.message}`, `Run 'genpipe ${s.cmd.name} --help' for usage.`]);
    }
    throw err;
  }
}

/** The error a batch command ended with, in the log file too (as printed, secrets masked). */
function logError(s: Session, err: unknown): void {
  const log = s.log;
  if (!log) return;
  printError(err, {
    secrets: s.secrets,
    prefix: 'error',
    stream: {
      write: (text) => {
        for (const l of text.replace(/\n$/, '').split('\n')) log.line('genpipe', l);
      },
    },
  });
}

/** The options resolved, the service connected, the journal open. */
async function setUp(s: Session, inputDirArg: string): Promise<BatchSetup> {
  const { cmd, flags } = s;
  if (flags.logFile !== undefined) {
    const refusal = await logFileRefusal({
      inputDir: inputDirArg,
      logFile: flags.logFile,
      words: OVERLAP_WORDS[cmd.name],
    });
    if (refusal !== null) throw new UsageError(refusal);
  }
  s.log = openBatchLog(s);
  const storeUrl = storeUrlOf(flags);
  if (storeUrl !== null) {
    s.secrets = [...s.secrets, ...secretsOf(storeUrl)];
    s.log?.setRedact(createRedactor(s.secrets));
  }
  const options = await resolveBatchOptions(inputDirArg, flags, cmd.name, (dir) => cmd.checkInputDir(dir));
  // The client's notes (retries, 429 waits) on stderr unless --json, retries counted unless -v (see
  // retry-notes.ts); in the log file always.
  const notes = s.json || flags.verbose ? null : new RetryNotes({ note: s.note, record: s.record });
  s.retryNotes = notes;
  s.metrics = await startBatchMetrics(flags, cmd.name, (line) => {
    cmd.print(line);
    s.record(line);
  });
  s.dashboard = await startBatchDashboard({
    address: flags.dashboard,
    command: cmd.name,
    inputDir: options.inputDir,
    outDir: options.outDir,
    title: shown(options.inputDir),
    actions: dashboardActions(s),
    ...(cmd.heldBack ? { heldBack: cmd.heldBack.bind(cmd) } : {}),
    ...(cmd.intakeWaiting ? { intakeWaiting: cmd.intakeWaiting.bind(cmd) } : {}),
    ...(cmd.inputPath ? { inputPath: cmd.inputPath.bind(cmd) } : {}),
    ...(cmd.waiting ? { waiting: cmd.waiting.bind(cmd) } : {}),
    print: (line) => cmd.print(line),
    record: s.record,
  });
  if (s.dashboard) s.secrets = [...s.secrets, s.dashboard.server.token];
  const clientHooks = bothHooks(s.metrics?.metrics.clientHooks, s.dashboard?.quota.hooks);
  const clientNote = (text: string) => (s.json ? s.record(text) : notes ? notes.note(text) : s.note(text));
  let store: Store;
  let service: BatchService;
  if (storeUrl !== null) {
    // The store first: the client shares the API key's quota with every process on it.
    await cmd.checkFolders?.(options.inputDir, options.outDir);
    store = await openRunStore({ url: storeUrl, outDir: options.outDir, lock: cmd.storeLock !== false });
    s.store = store;
    service = await connectService(flags, options.settings, clientNote, clientHooks, (connection) =>
      clientOptionsForStore(store, connection),
    );
    s.service = service;
    s.secrets = [...s.secrets, ...service.secrets];
    s.log?.setRedact(createRedactor(s.secrets));
  } else {
    service = await connectService(flags, options.settings, clientNote, clientHooks);
    s.service = service;
    s.secrets = [...s.secrets, ...service.secrets];
    s.log?.setRedact(createRedactor(s.secrets));
    await cmd.checkFolders?.(options.inputDir, options.outDir);
    store = openRunJournal({
      outDir: options.outDir,
      ...(flags.journal ? { path: flags.journal } : {}),
    });
    s.store = store;
  }
  s.metrics?.metrics.watchClient(service.client);
  s.dashboard?.quota.watch(service.client);
  if (s.dashboard) {
    // The credits on the page are counted at the prices a dry run would use.
    const { prices, source } = await batchPrices(flags, s.controller.signal);
    s.dashboard.model.setPrices(prices, source);
  }
  const setup: BatchSetup = { ...options, service, store, note: s.note };
  await cmd.open?.(setup);
  // Said loudly, and only now: a usage error (a refused journal, watch's refusals) comes before anything else.
  if (service.emulator) {
    process.stderr.write(`${emulatorBanner(service.emulator.url)}\n`);
    s.record('using the embedded emulator, not the real service');
  }
  return setup;
}

/** Runs the batch to its end, prints the closing summary, and returns the command's exit code. */
async function runBatch(s: Session, request: BatchRequest): Promise<number> {
  const { cmd, flags } = s;
  const setup = await setUp(s, request.inputDir);
  const { service, store } = setup;
  const journaling = await journalRunOptions(
    store,
    setup.recipe,
    flags,
    {
      inputDir: setup.inputDir,
      service: service.identity,
      formerServices: service.formerIdentities,
      options: recordedFlags(cmd.name, flags),
      embedded: service.emulator !== null,
    },
    cmd.retryFailedOnce?.bind(cmd),
  );
  const metrics = s.metrics?.metrics;
  // The poll loop's duration model tells the metrics how late each job's end was noticed.
  if (metrics && journaling.jobDurations) {
    journaling.jobDurations = metrics.observeDurations(journaling.jobDurations);
  }
  const redact = createRedactor(s.secrets);
  const progress = cmd.createProgress(s.json, redact, s.flags.verbose === true);
  const display = s.quiet && !s.json ? null : progress;
  const onEvent = batchSink(s, display);
  let result: BatchResult;
  try {
    // The command's own options inside: what they start (distributed mode's queue and worker) is
    // settled below whatever becomes of the batch.
    const own = await cmd.runOptions(setup, journaling, metrics ?? null);
    s.batch = startBatch(
      runOptionsOf(
        {
          service,
          settings: setup.settings,
          inputDir: setup.inputDir,
          outDir: setup.outDir,
          recipe: setup.recipe,
          redact,
          onEvent,
          signal: s.controller.signal,
        },
        {
          stopGraceMs: SIGNAL_CHOICES.graceMs,
          select: setup.select,
          ...(s.dashboard ? { onFoundAll: () => s.dashboard?.model.foundAll() } : {}),
          ...own,
        },
      ),
    );
    if (s.stopReason !== null) s.batch.stop(s.stopReason);
    result = await s.batch.done;
  } finally {
    progress.close();
    s.retryNotes?.close();
    await cmd.settle?.();
  }
  // The batch's end not recorded (the store went away) loses a line of status, not the batch's answer.
  await store.finishBatch(cmd.finishState(result)).catch((err: unknown) => {
    if (result.stop?.cause !== 'journal') {
      s.note(`the journal could not record the batch's end: ${journalErrorWords(err, store.location)}`);
    }
  });
  s.stopCause = result.stop?.cause ?? null;
  printClosing(s, setup, result, redact, request.epilogue);
  return cmd.exitCode(result, s.controller.signal.aborted);
}

/**
 * The closing summary on stderr, printed even with --quiet (it is the command's answer): the totals,
 * the command's own lines, the report, the emulator's reminder, the epilogue.
 */
function printClosing(
  s: Session,
  setup: BatchSetup,
  result: BatchResult,
  redact: Redact,
  epilogue: BatchRequest['epilogue'],
): void {
  const t = result.report.totals;
  const ignored = result.report.ignored;
  const notLooked = notLookedAtText(result.report.stopped_early);
  const j = result.report.journal;
  const lines = [
    `${plural(t.inputs, 'file')}: ${t.succeeded} succeeded, ${t.failed} failed, ${t.skipped} skipped` +
      (t.unprocessed > 0 ? `, ${t.unprocessed} not processed` : '') +
      (notLooked ? `; ${notLooked}` : '') +
      (ignored && ignored.total > 0 ? `; ${ignoredText(ignored)}` : ''),
    // What the journal did (run, watch, a distributed run alike): earlier work reused, resumed, retried.
    ...(j && journalDidAnything(j) ? [`journal: ${journalCountsText(j)} (${shown(j.file)})`] : []),
    ...s.cmd.closingLines(result),
    result.reportNotWritten === null
      ? `report: ${shown(resolve(setup.outDir, REPORT_HTML_FILE))}`
      : `report not written: ${result.reportNotWritten}`,
  ];
  if (setup.service.emulator) {
    lines.push('(these outputs came from the embedded EMULATOR, not the real service)');
  }
  for (const line of [...lines, ...(epilogue?.(result, setup.outDir) ?? [])]) {
    process.stderr.write(`genpipe: ${printable(redact(line))}\n`);
    s.log?.line('genpipe', line);
  }
}

/**
 * Every event to the metrics and the log file first (whatever stdout shows), then the command, then the
 * display.
 */
function batchSink(s: Session, display: ProgressDisplay | null): RunOptions['onEvent'] {
  const model = s.dashboard?.model;
  const sinks = [
    s.metrics?.metrics.sink,
    model ? (e: PipelineEvent) => model.apply(e) : undefined,
    s.log?.sink,
    s.cmd.observe?.bind(s.cmd),
    display?.sink,
  ].filter((f): f is (event: PipelineEvent) => void => f !== undefined);
  if (sinks.length === 0) return undefined;
  if (sinks.length === 1) return sinks[0];
  return (event) => {
    for (const sink of sinks) sink(event);
  };
}

/**
 * Closes the metrics server, stops the intake, closes the journal, the client and the embedded emulator
 * — each of them whatever became of the journal. A journal that cannot be closed (its disk full: its
 * last writes refused) is said once, naming it, unless the batch already stopped for it; returns false
 * then.
 */
async function tearDown(s: Session, signals: SignalWatch): Promise<boolean> {
  signals.dispose();
  await s.metrics?.server.close();
  await s.dashboard?.server.close();
  s.retryNotes?.close();
  await s.cmd.stopIntake?.();
  let closed = true;
  const store = s.store;
  await store?.close().catch((err: unknown) => {
    closed = false;
    if (s.stopCause === 'journal') return; // the stop's own reason, said already
    const text = `the journal could not be written as it was closed (${journalErrorWords(err, store.location)})`;
    s.record(text);
    process.stderr.write(`genpipe: ${printable(createRedactor(s.secrets)(text))}\n`);
  });
  await s.service?.client.close();
  await s.service?.emulator?.close();
  s.log?.close();
  return closed;
}
