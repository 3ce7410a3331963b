/**
 * The batch timeline of report.html as inline SVG: one row per item, one horizontal bar per stage from
 * the item's timings, on a shared time axis from the batch's start. No scripts: each bar's `<title>`
 * is its tooltip.
 */

import { plural } from '../../spec/plural.ts';
import { type Item, STAGE_NAMES, type StageName } from '../item.ts';
import { ellipsize, formatDuration } from '../progress/format.ts';
import { esc } from './html-escape.ts';
import { itemPlace } from './item-paths.ts';

/** Bar colour per stage (`wait` is the service's own time). */
export const STAGE_COLORS: Record<StageName, string> = {
  sniff: '#8e9aaf',
  check: '#5b8cc9',
  plan: '#9673a6',
  upload: '#e0a030',
  submit: '#c8553d',
  wait: '#6aa84f',
  download: '#2f7bbf',
  report: '#a0a0a0',
};

/** Most rows drawn; the rest are counted below the chart. */
export const TIMELINE_MAX_ROWS = 2000;

const LABEL_W = 210;
const CHART_W = 760;
const ROW_H = 16;
const BAR_H = 11;
const AXIS_H = 22;

const TICK_STEPS_MS = [
  10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000,
  900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 43_200_000, 86_400_000,
];

function tickStep(spanMs: number): number {
  return TICK_STEPS_MS.find((s) => spanMs / s <= 8) ?? TICK_STEPS_MS.at(-1)!;
}

function tickLabel(ms: number, step: number): string {
  if (step < 1000) return `${(ms / 1000).toFixed(step < 100 ? 2 : 1)}s`;
  if (step < 60_000) return `${Math.round(ms / 1000)}s`;
  if (step < 3_600_000) return `${Math.round(ms / 60_000)}m`;
  return `${Math.round(ms / 3_600_000)}h`;
}

function firstStart(item: Item): number {
  let t = Number.POSITIVE_INFINITY;
  for (const s of STAGE_NAMES) {
    const st = item.timings[s]?.started_at;
    if (st !== undefined && st < t) t = st;
  }
  return t;
}

/** A row of the timeline: what is drawn of an item. */
interface TimelineRow {
  first: number;
  input: string;
  timings: Item['timings'];
  failed: boolean;
  /** Where the item came among those added (ties of start and input keep it). */
  order: number;
}

function compareRows(a: TimelineRow, b: TimelineRow): number {
  return a.first - b.first || (a.input < b.input ? -1 : a.input > b.input ? 1 : a.order - b.order);
}

/**
 * The timeline's rows, added one item at a time: only the TIMELINE_MAX_ROWS that started first are
 * kept (and counted, with the latest time any stage reached), so a batch of any size is drawn from
 * bounded memory.
 */
export class TimelineRows {
  private rows: TimelineRow[] = [];
  private added = 0;
  private latest = Number.NEGATIVE_INFINITY;

  /** Adds the item (one without timings is left out); `failed` draws its label in red. */
  add(item: Item, failed: boolean): void {
    const first = firstStart(item);
    if (!Number.isFinite(first)) return;
    for (const s of STAGE_NAMES) {
      const t = item.timings[s];
      if (t) this.latest = Math.max(this.latest, t.finished_at ?? t.started_at);
    }
    this.rows.push({ first, input: item.input, timings: item.timings, failed, order: this.added++ });
    if (this.rows.length >= 2 * TIMELINE_MAX_ROWS) this.trim();
  }

  private trim(): void {
    this.rows.sort(compareRows);
    this.rows.length = Math.min(this.rows.length, TIMELINE_MAX_ROWS);
  }

  /**
   * The timeline as an `<svg>` element (a string), or a short paragraph when no item has timings yet.
   *
   * @param t0 the batch's start (ms since the epoch)
   * @param t1 the end of the axis: the batch's end, or now while it runs
   */
  svg(t0: number, t1: number): string {
    this.trim();
    const shown = this.rows;
    if (shown.length === 0) return '<p class="muted">No stage has run yet.</p>';
    const end = Math.max(t1, this.latest);
    const span = Math.max(1, end - t0);
    const x = (t: number) => LABEL_W + ((Math.min(Math.max(t, t0), end) - t0) / span) * CHART_W;
    const height = AXIS_H + shown.length * ROW_H + 4;
    const width = LABEL_W + CHART_W + 20;
    const parts: string[] = [];
    parts.push(
      `<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="Timeline of the batch: one row per file, one bar per stage">`,
    );
    // Axis with grid lines.
    const step = tickStep(span);
    for (let t = 0; t <= span; t += step) {
      const gx = x(t0 + t).toFixed(1);
      parts.push(
        `<line x1="${gx}" y1="${AXIS_H - 4}" x2="${gx}" y2="${height}" class="grid"/>`,
        `<text x="${gx}" y="${AXIS_H - 8}" class="tick">${esc(tickLabel(t, step))}</text>`,
      );
    }
    for (const [i, row] of shown.entries()) {
      const y = AXIS_H + i * ROW_H;
      const cls = row.failed ? 'label failed' : 'label';
      parts.push(
        `<text x="${LABEL_W - 8}" y="${y + BAR_H}" class="${cls}"><title>${esc(row.input)}</title>${esc(ellipsize(row.input, 30))}</text>`,
      );
      for (const s of STAGE_NAMES) {
        const t = row.timings[s];
        if (!t) continue;
        const x0 = x(t.started_at);
        const running = t.finished_at === undefined;
        const x1 = x(t.finished_at ?? end);
        const w = Math.max(1.5, x1 - x0);
        const dur = running ? 'still running' : formatDuration(t.finished_at! - t.started_at);
        parts.push(
          `<rect x="${x0.toFixed(1)}" y="${y + 2}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${STAGE_COLORS[s]}"${running ? ' class="running"' : ''}><title>${esc(`${row.input} — ${s}: ${dur}`)}</title></rect>`,
        );
      }
    }
    parts.push('</svg>');
    if (this.added > shown.length) {
      parts.push(
        `<p class="muted">… and ${plural(this.added - shown.length, 'more file', 'more files')} not drawn (the ${shown.length} that started first are).</p>`,
      );
    }
    return parts.join('\n');
  }
}

/**
 * The timeline as an `<svg>` element (a string), or a short paragraph when no item has timings yet.
 *
 * @param items the batch's items (those without timings are left out), any order
 * @param t0 the batch's start (ms since the epoch)
 * @param t1 the end of the axis: the batch's end, or now while it runs
 * @param failed places (see itemPlace) of failed items, whose labels are drawn in red
 */
export function timelineSvg(
  items: readonly Item[],
  t0: number,
  t1: number,
  failed: ReadonlySet<string> = new Set(),
): string {
  const rows = new TimelineRows();
  for (const item of items) rows.add(item, failed.has(itemPlace(item)));
  return rows.svg(t0, t1);
}

/** The legend of the timeline's colours, as HTML. */
export function timelineLegend(): string {
  return `<ul class="legend">${STAGE_NAMES.map(
    (s) =>
      `<li><span class="swatch" style="background:${STAGE_COLORS[s]}"></span>${s}${s === 'wait' ? ' (service)' : ''}</li>`,
  ).join('')}</ul>`;
}
