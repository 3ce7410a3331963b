/**
 * The runner's options of a batch, built in one place for every process that runs one: `genpipe run`
 * and `genpipe watch` (batch-command.ts, their files processed here or handed to the workers) and each
 * session of `genpipe worker` (distributed.ts). What a process's flags say of how its batches poll and
 * retry is read and checked once, as the command starts (runSettings): a poll interval the interface
 * does not accept is refused whichever command was given it.
 */
import type { GenpipeClient, PollScheduleName } from '../client/index.ts';
import {
  type EventSink,
  POLL_DEFAULTS,
  type Recipe,
  type Redact,
  type RunOptions,
} from '../pipeline/index.ts';
import { UsageError } from './usage-error.ts';

/** The flags runSettings reads. */
export interface RunSettingFlags {
  /** Seconds between two reads of one job at most. */
  pollInterval?: number;
  pollSchedule?: PollScheduleName;
  /** Status reads per second at most, across all jobs. */
  maxReads?: number;
  /** Resubmissions of a retryably failed generation. */
  retries?: number;
  /** The embedded emulator: any positive poll interval is accepted. */
  emulator?: boolean;
}

/** How a process's batches poll and retry, from its flags (unset: the runner's default). */
export interface RunSettings {
  pollSchedule?: PollScheduleName;
  maxGetsPerSecond?: number;
  maxResubmits?: number;
}

/**
 * The settings of a process's batches from its flags, checked.
 *
 * @param command - whose help a refusal points to
 * @throws UsageError for a poll interval under 1 s against the service
 */
export function runSettings(flags: RunSettingFlags, command: string): RunSettings {
  if (flags.pollInterval !== undefined && flags.pollInterval < 1 && !flags.emulator) {
    throw new UsageError(
      '--poll-interval must be at least 1 second against the service (the interface accepts 1 to 5 s)',
      { helpOf: `genpipe ${command}` },
    );
  }
  return {
    ...(flags.pollSchedule ? { pollSchedule: flags.pollSchedule } : {}),
    ...(flags.maxReads !== undefined ? { maxGetsPerSecond: flags.maxReads } : {}),
    ...(flags.retries !== undefined ? { maxResubmits: flags.retries } : {}),
  };
}

/** The service a batch talks to, as its options need it (batch-setup.ts BatchService). */
export interface RunService {
  client: GenpipeClient;
  /** The embedded emulator, when the batch runs against it. */
  emulator: unknown;
  /** From --poll-interval (the embedded emulator's own when not given). */
  pollIntervalMs: number | undefined;
  filePollIntervalMs: number | undefined;
}

/** What every batch's options are made of. */
export interface BatchBase {
  service: RunService;
  settings: RunSettings;
  inputDir: string;
  outDir: string;
  recipe: Recipe;
  /** Jobs in flight at most (unset: the runner's default). */
  concurrency?: number;
  redact: Redact;
  onEvent?: EventSink;
  signal?: AbortSignal;
}

/**
 * A batch's runner options: its base, then what the command or the session adds (the store's hooks,
 * the source of items, the delegate).
 */
export function runOptionsOf(base: BatchBase, more: Partial<RunOptions>): RunOptions {
  const { service, settings } = base;
  return {
    inputDir: base.inputDir,
    outDir: base.outDir,
    recipe: base.recipe,
    client: service.client,
    ...(base.concurrency !== undefined ? { concurrency: base.concurrency } : {}),
    pollIntervalMs: service.pollIntervalMs ?? POLL_DEFAULTS.intervalMs,
    ...(service.filePollIntervalMs !== undefined ? { filePollIntervalMs: service.filePollIntervalMs } : {}),
    ...settings,
    redact: base.redact,
    emulator: service.emulator !== null,
    ...(base.onEvent ? { onEvent: base.onEvent } : {}),
    ...(base.signal ? { signal: base.signal } : {}),
    ...more,
  };
}
