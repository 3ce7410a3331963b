/**
 * report.html's failures grouped by reason: the failed items counted by what failed them (stage,
 * failure_code and reason), most frequent first, each group a link that filters the page's list to it.
 * Bounded: at most FAILURE_GROUPS_MAX groups are told apart; failures of any further reason are counted
 * together as "other reasons".
 */
import { esc } from './html-escape.ts';
import type { ReportItem } from './report-json.ts';

/** Groups told apart (the last one, when reached, holds every further reason). */
export const FAILURE_GROUPS_MAX = 500;
/** Groups shown in the table; the rest are behind a "more" fold. */
export const FAILURE_GROUPS_SHOWN = 15;

/** A group as the page's data carries it. */
export interface FailureGroup {
  /** failures counted */
  n: number;
  stage: string | null;
  code: string | null;
  /** the reason; null for the group of other reasons */
  reason: string | null;
}

type Failure = Pick<ReportItem, 'stage' | 'failure_code' | 'reason'>;

function keyOf(f: Failure): string {
  return `${f.stage ?? ''}\0${f.failure_code ?? ''}\0${f.reason ?? ''}`;
}

export class FailureGroups {
  private readonly ids = new Map<string, number>();
  readonly groups: FailureGroup[] = [];
  private other = -1;

  /** Counts a failure; returns its group. */
  add(f: Failure): number {
    const key = keyOf(f);
    let id = this.ids.get(key);
    if (id === undefined) {
      if (this.groups.length < FAILURE_GROUPS_MAX - 1) {
        id =
          this.groups.push({ n: 0, stage: f.stage, code: f.failure_code, reason: f.reason ?? 'failed' }) - 1;
        this.ids.set(key, id);
      } else {
        if (this.other < 0)
          this.other = this.groups.push({ n: 0, stage: null, code: null, reason: null }) - 1;
        id = this.other;
      }
    }
    this.groups[id]!.n++;
    return id;
  }

  /** The group of a failure already counted (the same one add gave it). */
  of(f: Failure): number {
    return this.ids.get(keyOf(f)) ?? this.other;
  }

  /** The section: a table of the groups, most failures first; '' when nothing failed. */
  html(failed: number): string {
    if (this.groups.length === 0) return '';
    const order = this.groups.map((_, i) => i).sort((a, b) => this.groups[b]!.n - this.groups[a]!.n || a - b);
    const row = (id: number) => {
      const g = this.groups[id]!;
      const reason = g.reason === null ? '<i>other reasons</i>' : esc(g.reason);
      const code = g.code ? ` <span class="mono muted">(${esc(g.code)})</span>` : '';
      return `<tr class="failed" data-group="${id}"><td class="n">${g.n}</td><td>${esc(g.stage ?? '')}</td><td class="reason"><a href="#status=failed&amp;group=${id}">${reason}</a>${code}</td></tr>`;
    };
    const head = '<thead><tr><th>files</th><th>stage</th><th>reason</th></tr></thead>';
    const shown = order.slice(0, FAILURE_GROUPS_SHOWN).map(row).join('');
    const rest = order.slice(FAILURE_GROUPS_SHOWN);
    const more =
      rest.length > 0
        ? `<details><summary>${rest.length} more reasons</summary><table class="failures">${head}<tbody>${rest.map(row).join('')}</tbody></table></details>`
        : '';
    return [
      `<section id="failures"><h2>Failed (${failed})</h2>`,
      `<p class="muted">By reason, the most frequent first: select one to list its files.</p>`,
      `<table class="failures">${head}<tbody>${shown}</tbody></table>${more}</section>`,
    ].join('');
  }
}
