/**
 * Plain progress for logs and pipes: one line per file event (`[12:00:01] photo.jpg: submitted`, or the
 * event's reason when it says what happened instead of the state's name), failures and skips with their
 * reason, and a line when the batch starts (`run:` or `watch:`), stops early and finishes. A chain's
 * steps: a line when each starts, is done or fails (in one-line-per-outcome mode too), and each other
 * line of a step names it (`photo.jpg: step 'animate': completed`).
 */

import { plural } from '../../spec/plural.ts';
import type { PipelineEvent } from '../events.ts';
import { clockTime, formatBytes, printable } from './format.ts';
import { stoppingText } from './progress-state.ts';
import { type Redact, redactShapes } from './redact.ts';
import type { ProgressDisplay, ProgressStream } from './types.ts';

const NOT_PROCESSED = 'not processed';

export interface PlainOptions {
  /** Masks the secrets the runner knows (default: key- and bearer-shaped strings only). */
  redact?: Redact;
  /** Show times in UTC instead of local time. */
  utc?: boolean;
  /** Show the full ISO 8601 time (UTC, with the date and ms) instead of the time of day (the log file). */
  iso?: boolean;
  /** The command the first line names (default `run`). */
  command?: 'run' | 'watch';
  /**
   * A line for every state a file reaches (default). false: one line per file outcome (succeeded,
   * failed, skipped, not processed, or processed again because it changed) and the batch's own lines.
   */
  verbose?: boolean;
  /** Name the generation and the create's request id on a file's submitted and failed lines (the log file). */
  ids?: boolean;
}

/** A reported file's word in one-line-per-outcome mode is `succeeded`; otherwise the state's name. */
function outcomeWord(state: string, opts: PlainOptions): string {
  return opts.verbose === false && state === 'reported' ? 'succeeded' : state;
}

/** States a file ends a batch in: the lines that stay when `verbose` is false. */
const OUTCOME_STATES: ReadonlySet<string> = new Set([
  'reported',
  'failed',
  'skipped',
  'stopped',
  'discovered',
]);

/**
 * The plain line of one event (without a newline), or null for an event that gets none.
 *
 * @example plainLine({ type: 'item_state', at, input: 'photo.jpg', state: 'submitted', stage: 'submit', reason: null })
 * // → '[12:00:01] photo.jpg: submitted'
 */
export function plainLine(event: PipelineEvent, opts: PlainOptions = {}): string | null {
  const redact = opts.redact ?? redactShapes;
  const text = (s: string) => printable(redact(s));
  const at = `[${opts.iso ? new Date(event.at).toISOString() : clockTime(event.at, { utc: opts.utc })}]`;
  switch (event.type) {
    case 'batch_started':
      return `${at} ${opts.command ?? 'run'}: ${text(event.input_dir)} -> ${text(event.out_dir)}${event.emulator ? ' (EMULATOR: not the real service)' : ''}`;
    case 'item_discovered':
      return opts.verbose === false
        ? null
        : `${at} ${text(event.input)}: discovered (${formatBytes(event.size)})`;
    case 'item_state': {
      if (event.step_event && event.reason) return stepLine(event, at, text, opts);
      if (opts.verbose === false && !OUTCOME_STATES.has(event.state)) return null;
      if (opts.verbose === false && event.state === 'discovered' && !event.reason) return null;
      const name = text(event.input);
      // The log names the generation and the request of a submitted or failed file (what support asks
      // for), unless its reason already says which generation.
      const named =
        opts.ids === true && !(event.generation_id && event.reason?.includes(event.generation_id));
      const ids = named
        ? [
            ...(event.generation_id ? [`generation ${text(event.generation_id)}`] : []),
            ...(event.request_id ? [`request id ${text(event.request_id)}`] : []),
          ]
        : [];
      const idsNote = ids.length > 0 ? ` (${ids.join(', ')})` : '';
      const why = `${event.reason ? `: ${text(event.reason)}` : ''}${idsNote}`;
      // Reported as an earlier run left it: its reason says so ("failed in an earlier run (…), not
      // retried: …", "already done in an earlier run"); nothing failed or ran at a stage in this run.
      if (event.from_journal && event.reason) return `${at} ${name}${why}`;
      // A chain's item between its steps: which step the line is about (sibling steps run at once).
      const step =
        event.step !== undefined && !OUTCOME_STATES.has(event.state) ? `step '${text(event.step)}': ` : '';
      switch (event.state) {
        case 'failed':
          return `${at} ${name}: failed${event.stage ? ` at ${event.stage}` : ''}${why}`;
        case 'skipped':
          return `${at} ${name}: skipped${why}`;
        case 'stopped':
          // The runner's reasons for these already start with "not processed".
          return `${at} ${name}: ${event.reason?.startsWith(NOT_PROCESSED) ? text(event.reason) : `${NOT_PROCESSED}${why}`}`;
        case 'discovered':
          // An item goes back to `discovered` only when its file changed while it was processed.
          return `${at} ${name}: ${event.reason ? text(event.reason) : 'discovered'}`;
        default:
          // The state's name, unless the event says what happened instead: an item resumed from the
          // journal (`resumed: downloading the outputs of generation … again`, not "submitted"), one sent
          // back to submit, one whose step did other than the name says (`prompt ready: …`, not "uploaded").
          return `${at} ${name}: ${step}${event.reason ? text(event.reason) : outcomeWord(event.state, opts)}${idsNote}`;
      }
    }
    case 'batch_stopping':
      return `${at} ${text(stoppingText(event))}`;
    case 'batch_finished': {
      const t = event.totals;
      const parts = [
        plural(t.inputs, 'input'),
        `${t.succeeded} succeeded`,
        `${t.failed} failed`,
        `${t.skipped} skipped`,
      ];
      if (t.unprocessed > 0) parts.push(`${t.unprocessed} not processed`);
      if (t.ignored) parts.push(`${t.ignored} ignored`);
      return `${at} finished: ${parts.join(', ')}`;
    }
  }
}

/**
 * The line of a chain step's own moment (`a.png: step 'animate' started`, `… done`, `… failed: <why>`),
 * printed in both modes; the log names the step's generation and request id.
 */
function stepLine(
  event: Extract<PipelineEvent, { type: 'item_state' }>,
  at: string,
  text: (s: string) => string,
  opts: PlainOptions,
): string {
  const ids =
    opts.ids === true && event.step_event !== 'done'
      ? [
          ...(event.generation_id ? [`generation ${text(event.generation_id)}`] : []),
          ...(event.request_id ? [`request id ${text(event.request_id)}`] : []),
        ]
      : [];
  return `${at} ${text(event.input)}: ${text(event.reason ?? '')}${ids.length > 0 ? ` (${ids.join(', ')})` : ''}`;
}

/**
 * A display writing one plain line per event to `stream`.
 *
 * @example const progress = createPlainProgress(process.stdout, { redact }); runner.on(progress.sink);
 */
export function createPlainProgress(stream: ProgressStream, opts: PlainOptions = {}): ProgressDisplay {
  let closed = false;
  return {
    sink: (event) => {
      if (closed) return;
      const line = plainLine(event, opts);
      if (line !== null) stream.write(`${line}\n`);
    },
    close: () => {
      closed = true;
    },
  };
}
