/** Choosing the progress display: --json lines, a live TTY display, or plain lines. */
import { createJsonLinesProgress } from './json-lines.ts';
import { createPlainProgress } from './plain.ts';
import type { Redact } from './redact.ts';
import { createTtyProgress } from './tty.ts';
import type { ProgressDisplay, ProgressStream } from './types.ts';

export interface ProgressOptions {
  /** `--json`: one JSON object per event (wins over a TTY). */
  json: boolean;
  /** Whether the stream is a terminal (default: `stream.isTTY`). */
  isTTY?: boolean;
  /** Where to write (default process.stdout). */
  stream?: ProgressStream;
  /** Masks the secrets the runner knows; build it with createRedactor([apiKey]). */
  redact?: Redact;
  /** TTY width override. */
  columns?: number;
  /** Plain lines in UTC instead of local time. */
  utc?: boolean;
  /** The command the plain lines' first line names (default `run`). */
  command?: 'run' | 'watch';
  /** Plain lines for every state a file reaches (default), or false: one per file outcome. */
  verbose?: boolean;
}

/**
 * The progress display for a run: JSON lines with `json`, else a live display on a TTY, else one
 * plain line per file event.
 *
 * @example
 * const progress = createProgress({ json: opts.json, isTTY: process.stdout.isTTY, redact });
 * await runBatch({ onEvent: progress.sink }); progress.close();
 */
export function createProgress(opts: ProgressOptions): ProgressDisplay {
  const stream = opts.stream ?? process.stdout;
  if (opts.json) return createJsonLinesProgress(stream, { redact: opts.redact });
  if (opts.isTTY ?? stream.isTTY ?? false) {
    return createTtyProgress(stream, { redact: opts.redact, columns: opts.columns });
  }
  return createPlainProgress(stream, {
    redact: opts.redact,
    utc: opts.utc,
    command: opts.command,
    ...(opts.verbose !== undefined ? { verbose: opts.verbose } : {}),
  });
}
