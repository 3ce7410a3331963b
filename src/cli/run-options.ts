/**
 * The runner's options of a batch, built in one place for every process that runs one: `genpipe run`
 * and `genpipe watch` (batch-command.ts, their files processed here or handed to the workers) and each
 * session of `genpipe worker` (distributed.ts). What a process's flags say of how its batches poll and
 * retry is read and checked once, as the command starts (the polling group's pollingSettings): a poll
 * interval the interface does not accept is refused whichever command was given it. Nothing is
 * defaulted here: what no flag says, the runner's options module does.
 */
import type { GenpipeClient } from '../client/index.ts';
import type { EventSink, Recipe, Redact, RunOptions } from '../pipeline/index.ts';
import { type RunSettings, runnerPacing } from './flag-groups/polling.ts';

export type { RunSettings } from './flag-groups/polling.ts';

/** The service a batch talks to, as its options need it (batch-setup.ts BatchService). */
export interface RunService {
  client: GenpipeClient;
  /** The embedded emulator, when the batch runs against it. */
  emulator: unknown;
  /** The embedded emulator's own poll interval (on loopback: fast), used when --poll-interval is not given. */
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
    ...(service.pollIntervalMs !== undefined ? { pollIntervalMs: service.pollIntervalMs } : {}),
    ...(service.filePollIntervalMs !== undefined ? { filePollIntervalMs: service.filePollIntervalMs } : {}),
    // The flags' settings over the service's own; what neither says, the runner's options module defaults.
    ...runnerPacing(settings),
    redact: base.redact,
    emulator: service.emulator !== null,
    ...(base.onEvent ? { onEvent: base.onEvent } : {}),
    ...(base.signal ? { signal: base.signal } : {}),
    ...more,
  };
}
