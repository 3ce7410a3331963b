/**
 * The live progress display of a terminal: a few lines redrawn in place (at most ~10 times a second,
 * and once a second for the clock) with a bar, counts per stage and outcome, throughput and an ETA.
 * Failures and an early stop are printed above it as lines that stay.
 */
import type { PipelineEvent } from '../events.ts';
import { STAGE_NAMES } from '../item.ts';
import { ellipsize, formatDuration, printable } from './format.ts';
import {
  applyEvent,
  etaMs,
  newProgressState,
  type ProgressState,
  progressCounts,
  stoppingText,
  throughputPerMinute,
} from './progress-state.ts';
import { type Redact, redactShapes } from './redact.ts';
import type { ProgressDisplay, ProgressStream } from './types.ts';

/** Shortest time between two redraws. */
export const TTY_MIN_REDRAW_MS = 100;
/** Redraw period without events (elapsed time, ETA). */
export const TTY_TICK_MS = 1000;
/** Width used when neither the stream nor COLUMNS tells one. */
export const DEFAULT_COLUMNS = 80;

/**
 * The width to draw in: the terminal's columns when it tells some (a pseudo-terminal made by `script`
 * outside a terminal says 0), else `COLUMNS` when it is a positive whole number, else 80.
 *
 * @example terminalColumns({ columns: 0 }, { COLUMNS: '120' }) // 120
 */
export function terminalColumns(
  stream: Pick<ProgressStream, 'columns'>,
  env: NodeJS.ProcessEnv = process.env,
): number {
  if (stream.columns !== undefined && stream.columns > 0) return stream.columns;
  const given = env.COLUMNS?.trim() ?? '';
  return /^[1-9]\d*$/.test(given) ? Number(given) : DEFAULT_COLUMNS;
}

const ESC = '\u001b[';
/** Widest bar, and the room kept for the numbers after it. */
const BAR_MAX = 30;
const TAIL_RESERVE = 56;

function bar(done: number, total: number, width: number): string {
  const filled = total > 0 ? Math.round((done / total) * width) : 0;
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

/**
 * The display's lines for a state at `now`, each at most `columns - 1` characters (so the terminal
 * never wraps them and the redraw stays in place).
 *
 * @example renderTty(state, { columns: 80, now: Date.now() }).join('\n')
 */
export function renderTty(state: ProgressState, opts: { columns: number; now: number }): string[] {
  const width = Math.max(20, opts.columns) - 1;
  const c = progressCounts(state);
  const now = state.finished?.at ?? opts.now;
  const elapsed = state.startedAt === null ? 0 : now - state.startedAt;
  const pct = c.total > 0 ? Math.floor((c.done / c.total) * 100) : 0;
  const rate = throughputPerMinute(state, opts.now);
  const eta = state.finished ? null : etaMs(state, opts.now);
  const head = state.emulator ? 'genpipe [EMULATOR]' : 'genpipe';
  const stats = [
    `${c.done}/${c.total}`,
    `${pct}%`,
    state.finished ? `done in ${formatDuration(elapsed)}` : `elapsed ${formatDuration(elapsed)}`,
  ];
  if (!state.finished) stats.push(`ETA ${eta === null ? '—' : formatDuration(eta)}`);
  stats.push(rate === null ? '— items/min' : `${rate.toFixed(rate < 10 ? 1 : 0)} items/min`);
  const tail = stats.join('  ');
  // The bar's width depends on the terminal only, so it does not jump as the numbers change.
  const barWidth = Math.max(0, Math.min(BAR_MAX, width - head.length - 2 - TAIL_RESERVE));
  const first = barWidth >= 5 ? `${head} ${bar(c.done, c.total, barWidth)}  ${tail}` : `${head}  ${tail}`;
  const stages = `stages   ${STAGE_NAMES.map((s) => `${s} ${c.byStage[s]}`).join('  ')}`;
  const outcomes = [`succeeded ${c.succeeded}`, `failed ${c.failed}`, `skipped ${c.skipped}`];
  if (c.unprocessed > 0 || state.stopping) outcomes.push(`not processed ${c.unprocessed}`);
  const lines = [first, stages, `results  ${outcomes.join('  ')}`];
  if (state.stopping && !state.finished) lines.push(printable(state.stopping));
  return lines.map((l) => ellipsize(l, width));
}

/** A line printed above the live block for events worth keeping on screen; null for the others. */
export function ttyLogLine(event: PipelineEvent, redact: Redact): string | null {
  const text = (s: string) => printable(redact(s));
  if (event.type === 'item_state' && event.step_event === 'failed' && event.reason) {
    // A chain's step failed (its item goes on with its other branches): kept on screen, step named.
    return `✗ ${text(event.input)}: ${text(event.reason)}`;
  }
  if (event.type === 'item_state' && event.state === 'failed') {
    // Failed as an earlier run left it: the reason says so, and no stage of this run failed it.
    if (event.from_journal && event.reason) return `✗ ${text(event.input)}: ${text(event.reason)}`;
    return `✗ ${text(event.input)}: failed${event.stage ? ` at ${event.stage}` : ''}${event.reason ? `: ${text(event.reason)}` : ''}`;
  }
  if (event.type === 'batch_stopping') return `! ${text(stoppingText(event))}`;
  if (event.type === 'batch_started' && event.emulator) {
    return '! using the embedded emulator, not the real service';
  }
  return null;
}

export interface TtyOptions {
  /** Masks the secrets the runner knows (default: key- and bearer-shaped strings only). */
  redact?: Redact;
  /** Terminal width; default terminalColumns(stream). */
  columns?: number;
  /** Clock, for tests. */
  now?: () => number;
}

/**
 * A live display on a terminal stream. Events update the state at once; the block is redrawn at most
 * every TTY_MIN_REDRAW_MS, and every TTY_TICK_MS without events. close() draws the final block.
 *
 * @example const progress = createTtyProgress(process.stderr, { redact }); ... progress.close();
 */
export function createTtyProgress(stream: ProgressStream, opts: TtyOptions = {}): ProgressDisplay {
  const redact = opts.redact ?? redactShapes;
  const now = opts.now ?? Date.now;
  const state = newProgressState();
  const logs: string[] = [];
  let drawn = 0;
  let lastDraw = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const draw = () => {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    lastDraw = now();
    const columns = opts.columns ?? terminalColumns(stream);
    let out = drawn > 0 ? `\r${ESC}${drawn}A${ESC}0J` : '';
    for (const l of logs.splice(0)) out += `${l}\n`;
    const lines = renderTty(state, { columns, now: lastDraw });
    out += lines.map((l) => `${l}\n`).join('');
    drawn = lines.length;
    stream.write(out);
  };

  const schedule = () => {
    if (closed || timer) return;
    const wait = lastDraw + TTY_MIN_REDRAW_MS - now();
    if (wait <= 0) draw();
    else {
      timer = setTimeout(draw, wait);
      timer.unref?.();
    }
  };

  const ticker = setInterval(schedule, TTY_TICK_MS);
  ticker.unref?.();

  return {
    sink: (event) => {
      if (closed) return;
      applyEvent(state, event);
      const log = ttyLogLine(event, redact);
      if (log !== null) logs.push(log);
      schedule();
    },
    close: () => {
      if (closed) return;
      closed = true;
      clearInterval(ticker);
      draw();
    },
  };
}
