/**
 * report.html's failures grouped by cause: the failed items counted by what failed them — stage,
 * failure_code and the shape of the reason (reason-shape.ts: the reason without the details that differ
 * from file to file, such as sizes, durations, ids, names and paths) — most frequent first, each group a
 * link that filters the page's list to it. A group shows the reason of its first file, the details that
 * differ between its files marked. Bounded: at most FAILURE_GROUPS_MAX groups are told apart; failures
 * of any further cause are counted together as "other reasons".
 */

import { plural } from '../../spec/plural.ts';
import { esc } from './html-escape.ts';
import { reasonShape } from './reason-shape.ts';
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
  /** the reason of the group's first file; null for the group of other reasons */
  reason: string | null;
  /** the reason with the details that differ between the group's files as `…`; absent when none differ */
  shape?: string;
}

type Failure = Pick<ReportItem, 'stage' | 'failure_code' | 'reason'>;

/** What a group's reason is made of: its first reason's fixed text and details, and which details differ. */
interface Example {
  literals: string[];
  details: string[];
  differs: boolean[];
}

function shapeOf(f: Failure): { key: string; literals: string[]; details: string[] } {
  const shape = reasonShape(f.reason ?? 'failed');
  return { ...shape, key: `${f.stage ?? ''}\0${f.failure_code ?? ''}\0${shape.key}` };
}

/** The reason with its differing details replaced by `…` (mark: one detail, as text or HTML). */
function joined(e: Example, detail: (text: string, differs: boolean) => string, text: (s: string) => string) {
  let out = text(e.literals[0]!);
  for (let k = 0; k < e.details.length; k++)
    out += detail(e.details[k]!, e.differs[k]!) + text(e.literals[k + 1]!);
  return out;
}

/** A differing detail in a shape: `…`, in its quotes when quoted. */
function elided(detail: string): string {
  return /^['"‘“]/.test(detail) ? `${detail[0]}…${detail.at(-1)}` : '…';
}

export class FailureGroups {
  private readonly ids = new Map<string, number>();
  private readonly examples: Example[] = [];
  readonly groups: FailureGroup[] = [];
  private other = -1;

  /** Counts a failure; returns its group. */
  add(f: Failure): number {
    const shape = shapeOf(f);
    let id = this.ids.get(shape.key);
    if (id === undefined) {
      if (this.groups.length < FAILURE_GROUPS_MAX - 1) {
        id =
          this.groups.push({ n: 0, stage: f.stage, code: f.failure_code, reason: f.reason ?? 'failed' }) - 1;
        this.examples[id] = { ...shape, differs: shape.details.map(() => false) };
        this.ids.set(shape.key, id);
      } else {
        if (this.other < 0)
          this.other = this.groups.push({ n: 0, stage: null, code: null, reason: null }) - 1;
        id = this.other;
      }
    } else this.compare(id, shape.details);
    this.groups[id]!.n++;
    return id;
  }

  /** Marks the details of group `id`'s reason that `details` (of a reason of its shape) differs in. */
  private compare(id: number, details: string[]): void {
    const e = this.examples[id]!;
    let changed = false;
    for (let k = 0; k < details.length; k++) {
      if (!e.differs[k] && details[k] !== e.details[k]) changed = e.differs[k] = true;
    }
    if (changed)
      this.groups[id]!.shape = joined(
        e,
        (d, differs) => (differs ? elided(d) : d),
        (s) => s,
      );
  }

  /** The group of a failure already counted (the same one add gave it). */
  of(f: Failure): number {
    return this.ids.get(shapeOf(f).key) ?? this.other;
  }

  /** The section: a table of the groups, most failures first; '' when nothing failed. */
  html(failed: number): string {
    if (this.groups.length === 0) return '';
    const order = this.groups.map((_, i) => i).sort((a, b) => this.groups[b]!.n - this.groups[a]!.n || a - b);
    const marked = (d: string, differs: boolean) =>
      differs ? `<var title="differs between these files">${esc(d)}</var>` : esc(d);
    const row = (id: number) => {
      const g = this.groups[id]!;
      const e = this.examples[id];
      const reason = g.reason === null || !e ? '<i>other reasons</i>' : joined(e, marked, esc);
      const code = g.code ? ` <span class="mono muted">(${esc(g.code)})</span>` : '';
      return `<tr class="failed" data-group="${id}"><td class="n">${g.n}</td><td>${esc(g.stage ?? '')}</td><td class="reason"><a href="#status=failed&amp;group=${id}">${reason}</a>${code}</td></tr>`;
    };
    const head = '<thead><tr><th>files</th><th>stage</th><th>reason</th></tr></thead>';
    const shown = order.slice(0, FAILURE_GROUPS_SHOWN).map(row).join('');
    const rest = order.slice(FAILURE_GROUPS_SHOWN);
    const more =
      rest.length > 0
        ? `<details><summary>${plural(rest.length, 'more reason', 'more reasons')}</summary><table class="failures">${head}<tbody>${rest.map(row).join('')}</tbody></table></details>`
        : '';
    return [
      `<section id="failures"><h2>Failed (${failed})</h2>`,
      `<p class="muted">By reason, the most frequent first: select one to list its files. Reasons that differ only in details of each file (sizes, durations, ids, names) count as one, shown by the first file's reason with the <var>details that differ</var> marked.</p>`,
      `<table class="failures">${head}<tbody>${shown}</tbody></table>${more}</section>`,
    ].join('');
  }
}
