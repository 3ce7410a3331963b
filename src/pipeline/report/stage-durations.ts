/** report.html's table of time per stage: each stage's durations, added one item at a time. */
import { type Item, STAGE_NAMES, type StageName } from '../item.ts';
import { formatDuration } from '../progress/format.ts';
import { esc } from './html-escape.ts';
import { STAGE_COLORS } from './timeline-svg.ts';

/** The median of values sorted ascending. */
function median(v: ArrayLike<number>): number {
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

/** The p-th percentile of values sorted ascending. */
function percentile(v: ArrayLike<number>, p: number): number {
  return v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)]!;
}

/** A growing list of numbers kept as doubles (8 bytes each, however many). */
class Durations {
  private values = new Float64Array(256);
  length = 0;

  push(v: number): void {
    if (this.length === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.length++] = v;
  }

  sorted(): Float64Array {
    return this.values.subarray(0, this.length).sort();
  }
}

export class StageDurations {
  private readonly durations = new Map<StageName, Durations>();

  add(item: Item): void {
    for (const s of STAGE_NAMES) {
      const t = item.timings[s];
      if (t?.finished_at === undefined) continue;
      let ds = this.durations.get(s);
      if (!ds) {
        ds = new Durations();
        this.durations.set(s, ds);
      }
      ds.push(t.finished_at - t.started_at);
    }
  }

  /** The table (median, p90, max per stage); '' when no stage has finished. */
  table(): string {
    const rows: string[] = [];
    for (const s of STAGE_NAMES) {
      const d = this.durations.get(s);
      if (!d) continue;
      const ds = d.sorted();
      rows.push(
        `<tr><td><span class="swatch" style="background:${STAGE_COLORS[s]}"></span>${s}</td><td>${ds.length}</td><td>${esc(formatDuration(median(ds)))}</td><td>${esc(formatDuration(percentile(ds, 90)))}</td><td>${esc(formatDuration(ds[ds.length - 1]!))}</td></tr>`,
      );
    }
    if (rows.length === 0) return '';
    return `<table class="stages"><thead><tr><th>stage</th><th>files</th><th>median</th><th>p90</th><th>max</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
  }
}
