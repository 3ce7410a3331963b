/**
 * The polling and pacing flags — how many jobs are in flight, how often a job is read, how fast the
 * service is asked, how often a failure is retried — and their one resolve step (pollingSettings): the
 * seconds turned into ms, the "at least 1 s against the service" rule checked, nothing defaulted. What
 * a flag leaves unset is defaulted by the part that applies it: the runner's options module
 * (pipeline/runner/options.ts), the client (its poll settings, its rate window), the distributed worker.
 */
import { type Command, Option } from 'commander';
import { DEFAULT_POLL_SETTINGS, type PollScheduleName } from '../../client/poll-schedule.ts';
import { WORKER_DEFAULTS } from '../../pipeline/distributed/worker-defaults.ts';
import { POLL_DEFAULTS } from '../../pipeline/poller.ts';
import { RUN_DEFAULTS } from '../../pipeline/runner/run-defaults.ts';
import { UsageError } from '../usage-error.ts';
import { FlagGroup } from './group.ts';
import { intArg, positiveSeconds } from './parsers.ts';

/** The longest --poll-interval taken, seconds (an hour between two reads of one job). */
export const MAX_POLL_INTERVAL_S = 3600;

/** The longest --rate-window taken, seconds (24 h, the longest window the client paces by). */
export const MAX_RATE_WINDOW_S = 86_400;

/** --concurrency, --files-at-once, --poll-interval, --max-reads, --rate-window, --retries. */
export const POLLING = new FlagGroup('Polling and pacing flags:', [
  () =>
    new Option(
      '--concurrency <n>',
      `jobs in flight at the service at most, from submit until the job ends (default ${RUN_DEFAULTS.concurrency}; the service's own ceiling also applies)`,
    ).argParser(intArg(1)),
  () =>
    new Option(
      '--files-at-once <n>',
      `files a worker holds at once in distributed mode: a \`genpipe worker\`, or the share a run or watch with --store works on itself (default ${WORKER_DEFAULTS.filesAtOnce}); their jobs at the service are bounded by --concurrency`,
    ).argParser(intArg(1)),
  () =>
    new Option(
      '--poll-interval <seconds>',
      `longest time between two status reads of a job or file; reads start sooner and grow to it (default ${POLL_DEFAULTS.intervalMs / 1000} in a batch, ${DEFAULT_POLL_SETTINGS.maxIntervalMs / 1000} for a single command's wait; at least 1 against the service, any positive value with --emulator; at most ${MAX_POLL_INTERVAL_S})`,
    ).argParser(positiveSeconds(MAX_POLL_INTERVAL_S)),
  () =>
    new Option(
      '--poll-schedule <schedule>',
      'adaptive (default), or fixed: every --poll-interval from submission (bench baseline)',
    )
      .choices(['adaptive', 'fixed'])
      .hideHelp(),
  () =>
    new Option(
      '--max-reads <n>',
      `status reads per second at most, across all jobs (default ${POLL_DEFAULTS.maxGetsPerSecond}); raise it only when your service's abuse ceiling allows: one read frees a job's slot, so it bounds jobs finished per second`,
    ).argParser(intArg(1)),
  () =>
    new Option(
      '--rate-window <seconds>',
      `the service's request window, when you know it (at most ${MAX_RATE_WINDOW_S}: 24 h; default: learned from its X-RateLimit-Reset)`,
    ).argParser(positiveSeconds(MAX_RATE_WINDOW_S)),
  () =>
    new Option(
      '--retries <n>',
      `resubmissions of a generation that failed with a retryable failure_code, in each run (default ${RUN_DEFAULTS.maxResubmits})`,
    ).argParser(intArg(0)),
]);

/** The polling and pacing flags as commander gives them. */
export interface PollingFlags {
  /** Jobs in flight at the service at most. */
  concurrency?: number;
  /** Files a worker holds at once. */
  filesAtOnce?: number;
  /** Seconds between two reads of one job at most. */
  pollInterval?: number;
  pollSchedule?: PollScheduleName;
  /** Status reads per second at most, across all jobs. */
  maxReads?: number;
  /** The service's request window in seconds. */
  rateWindow?: number;
  /** Resubmissions of a retryably failed generation. */
  retries?: number;
  /** The embedded emulator: any positive poll interval is accepted. */
  emulator?: boolean;
}

/** What the runner takes of the polling and pacing flags (unset: the runner's default). */
export interface RunnerPacing {
  concurrency?: number;
  pollIntervalMs?: number;
  pollSchedule?: PollScheduleName;
  maxGetsPerSecond?: number;
  maxResubmits?: number;
}

/** The polling and pacing flags as settings: the runner's, the client's, the worker's; unset: theirs. */
export interface RunSettings extends RunnerPacing {
  /** The client's request window (ms). */
  rateWindowMs?: number;
  /** A distributed worker's files held at once. */
  filesAtOnce?: number;
}

/**
 * --poll-interval in ms, checked: under 1 s only against the embedded emulator (the interface accepts
 * polling every 1 to 5 s).
 *
 * @param helpOf - the command whose help a refusal points to
 * @throws UsageError `--poll-interval must be at least 1 second against the service (…)`
 */
export function pollIntervalMsOf(
  flags: Pick<PollingFlags, 'pollInterval' | 'emulator'>,
  helpOf: { helpOf?: string } = {},
): number | undefined {
  if (flags.pollInterval === undefined) return undefined;
  if (flags.pollInterval < 1 && !flags.emulator) {
    throw new UsageError(
      '--poll-interval must be at least 1 second against the service (the interface accepts 1 to 5 s)',
      helpOf,
    );
  }
  return Math.round(flags.pollInterval * 1000);
}

/**
 * The polling group's rule, checked for every command before it runs (a hook of the program), whichever
 * command was given the flag: --poll-interval under 1 s only against the embedded emulator.
 *
 * @throws UsageError pointing to the command's help
 */
export function checkPollingFlags(cmd: Command): void {
  const words: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) words.unshift(c.name());
  pollIntervalMsOf(cmd.opts(), { helpOf: `genpipe ${words.join(' ')}` });
}

/**
 * The settings of the polling and pacing flags, checked, for the command named (run, watch, worker):
 * seconds as ms, what is not given left out.
 *
 * @throws UsageError for a poll interval under 1 s against the service
 */
export function pollingSettings(flags: PollingFlags, command: string): RunSettings {
  const pollIntervalMs = pollIntervalMsOf(flags, { helpOf: `genpipe ${command}` });
  return {
    ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
    ...(pollIntervalMs !== undefined ? { pollIntervalMs } : {}),
    ...(flags.pollSchedule ? { pollSchedule: flags.pollSchedule } : {}),
    ...(flags.maxReads !== undefined ? { maxGetsPerSecond: flags.maxReads } : {}),
    ...(flags.retries !== undefined ? { maxResubmits: flags.retries } : {}),
    ...(flags.rateWindow !== undefined ? { rateWindowMs: Math.round(flags.rateWindow * 1000) } : {}),
    ...(flags.filesAtOnce !== undefined ? { filesAtOnce: flags.filesAtOnce } : {}),
  };
}

/**
 * --files-at-once sets the files a worker holds: a command with no worker of its own (no store, or
 * --no-work, --detach, --no-distribute, --emulator, --dry-run) would take it and do nothing with it.
 *
 * @param command - whose help the refusal points to (`run`, `watch`)
 * @throws UsageError `--files-at-once sets the files a worker holds: …`
 */
export function checkFilesAtOnce(
  flags: Pick<PollingFlags, 'filesAtOnce'>,
  ownWorker: boolean,
  command: string,
): void {
  if (flags.filesAtOnce !== undefined && !ownWorker) {
    throw new UsageError(
      '--files-at-once sets the files a worker holds: it needs distributed mode with a share worked on here (--store, without --no-work, --detach, --no-distribute, --emulator or --dry-run)',
      { helpOf: `genpipe ${command}` },
    );
  }
}

/** The runner's part of the settings (RunOptions' keys). */
export function runnerPacing(settings: RunSettings): RunnerPacing {
  const { rateWindowMs: _window, filesAtOnce: _files, ...runner } = settings;
  return runner;
}
