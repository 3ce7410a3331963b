/**
 * The reports of a large batch: report.json is written in pieces that make exactly the text of the
 * whole report, and a finished item kept only as its report view (what the batch keeps of it) gives
 * the same report.json and report.html as the full item.
 */
import { describe, expect, it } from 'vitest';
import type { Item } from '../../src/pipeline/item.ts';
import { createRedactor } from '../../src/pipeline/progress/redact.ts';
import {
  buildReport,
  renderReportHtml,
  reportJsonText,
  reportView,
} from '../../src/pipeline/report/index.ts';
import { BatchItems } from '../../src/pipeline/runner/batch-items.ts';
import { patchItem } from '../helpers/item-patch.ts';
import { batchItems, SECRET, T0 } from './report-fixtures.ts';

const META = {
  startedAt: T0,
  finishedAt: T0 + 60_000,
  redact: createRedactor([SECRET]),
  journal: { file: '/out/.genpipe/journal.db', policy: 'fail' as const, note: 'never pay twice' },
};

/** The fixtures plus a prompt file with a prompt longer than the page shows. */
function items(): Item[] {
  const all = batchItems();
  const long = patchItem(
    { ...all[0]!, input: 'prompts/long.txt', absPath: '/in/prompts/long.txt', place: undefined },
    { inputAs: 'prompt', request: { type: 'image', model: 'uni-1', prompt: 'p'.repeat(1000) } },
  );
  return [...all, long];
}

describe('report.json in pieces', () => {
  it('is exactly JSON.stringify of the report, with and without items', () => {
    for (const list of [items(), []]) {
      const report = buildReport(list, META);
      expect([...reportJsonText(report)].join('')).toBe(`${JSON.stringify(report, null, 2)}\n`);
    }
  });
});

describe('an item kept as its report view', () => {
  it('gives the same report.json and report.html as the full item', () => {
    const full = items();
    const views = full.map(reportView);
    expect(views.some((v, i) => JSON.stringify(v).length < JSON.stringify(full[i]).length)).toBe(true);
    expect(buildReport(views, META)).toEqual(buildReport(full, META));
    const page = (list: Item[]) =>
      renderReportHtml({
        report: buildReport(list, META),
        items: list,
        thumbs: new Map(),
        outDir: '/out',
        now: T0 + 60_000,
        redact: META.redact,
      });
    expect(page(views)).toBe(page(full));
  });
});

describe('the batch state of a large batch', () => {
  it('keeps every finished item as its view and reports all of them, sorted', () => {
    const template = batchItems().find((i) => i.state === 'reported')!;
    const batch = new BatchItems();
    const n = 5000;
    // Finished out of order, as a batch's items do.
    for (let k = 0; k < n; k++) {
      const i = (k * 7919) % n;
      const input = `d/${String(i).padStart(5, '0')}.txt`;
      const entry = batch.nextEntry();
      batch.keep(entry, { ...template, input, place: input, absPath: `/in/${input}`, state: 'planned' });
      batch.keep(entry, { ...template, input, place: input, absPath: `/in/${input}` });
    }
    const kept = batch.reportItems();
    expect(kept).toHaveLength(n);
    expect(kept.map((i) => i.input)).toEqual(kept.map((i) => i.input).sort());
    expect(kept[0]).toEqual(
      reportView({ ...template, input: 'd/00000.txt', place: 'd/00000.txt', absPath: '/in/d/00000.txt' }),
    );
    const report = buildReport(kept, META);
    expect(report.totals).toMatchObject({ inputs: n, succeeded: n });
  });
});
