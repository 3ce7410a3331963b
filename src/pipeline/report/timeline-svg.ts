/**
 * The batch timeline of report.html as inline SVG: one row per item, one horizontal bar per stage from
 * the item's timings, on a shared time axis from the batch's start. No scripts: each bar's `<title>`
 * is its tooltip.
 */
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
  const rows = items
    .filter((i) => Number.isFinite(firstStart(i)))
    .sort((a, b) => firstStart(a) - firstStart(b) || (a.input < b.input ? -1 : 1));
  if (rows.length === 0) return '<p class="muted">No stage has run yet.</p>';
  let end = t1;
  for (const item of rows) {
    for (const s of STAGE_NAMES) {
      const t = item.timings[s];
      if (t) end = Math.max(end, t.finished_at ?? t.started_at);
    }
  }
  const span = Math.max(1, end - t0);
  const shown = rows.slice(0, TIMELINE_MAX_ROWS);
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
  for (const [i, item] of shown.entries()) {
    const y = AXIS_H + i * ROW_H;
    const cls = failed.has(itemPlace(item)) ? 'label failed' : 'label';
    parts.push(
      `<text x="${LABEL_W - 8}" y="${y + BAR_H}" class="${cls}"><title>${esc(item.input)}</title>${esc(ellipsize(item.input, 30))}</text>`,
    );
    for (const s of STAGE_NAMES) {
      const t = item.timings[s];
      if (!t) continue;
      const x0 = x(t.started_at);
      const running = t.finished_at === undefined;
      const x1 = x(t.finished_at ?? end);
      const w = Math.max(1.5, x1 - x0);
      const dur = running ? 'still running' : formatDuration(t.finished_at! - t.started_at);
      parts.push(
        `<rect x="${x0.toFixed(1)}" y="${y + 2}" width="${w.toFixed(1)}" height="${BAR_H}" fill="${STAGE_COLORS[s]}"${running ? ' class="running"' : ''}><title>${esc(`${item.input} — ${s}: ${dur}`)}</title></rect>`,
      );
    }
  }
  parts.push('</svg>');
  if (rows.length > shown.length) {
    parts.push(`<p class="muted">… and ${rows.length - shown.length} more files not drawn.</p>`);
  }
  return parts.join('\n');
}

/** The legend of the timeline's colours, as HTML. */
export function timelineLegend(): string {
  return `<ul class="legend">${STAGE_NAMES.map(
    (s) =>
      `<li><span class="swatch" style="background:${STAGE_COLORS[s]}"></span>${s}${s === 'wait' ? ' (service)' : ''}</li>`,
  ).join('')}</ul>`;
}
