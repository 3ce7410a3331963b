/**
 * The batch state keeps finished items on disk: each one's report view in the batch's view file, read
 * back when the reports are written, and the reports written from it are those of the items.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Item } from '../../src/pipeline/item.ts';
import { createRedactor } from '../../src/pipeline/progress/redact.ts';
import {
  buildReport,
  reportJsonText,
  reportView,
  writeReportFiles,
  writeReportHtml,
} from '../../src/pipeline/report/index.ts';
import { BatchItems } from '../../src/pipeline/runner/batch-items.ts';
import { ViewFile } from '../../src/pipeline/runner/view-file.ts';
import { batchItems, SECRET, T0 } from './report-fixtures.ts';

const META = {
  startedAt: T0,
  finishedAt: T0 + 60_000,
  now: T0 + 60_000,
  redact: createRedactor([SECRET]),
  journal: { file: '/out/.genpipe/journal.db', policy: 'fail' as const, note: 'never pay twice' },
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-views-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `n` finished copies of the fixtures' succeeded item, each at a place of its own. */
function finished(n: number, version = 0): Item[] {
  const template = batchItems().find((i) => i.state === 'reported')!;
  return Array.from({ length: n }, (_, i) => {
    const input = `d/${String(i).padStart(5, '0')}.txt`;
    return { ...template, input, place: input, absPath: `/in/${input}`, size: version };
  });
}

describe('a batch with a view file', () => {
  it('keeps each finished item on disk and reads it back as its report view', () => {
    const views = new ViewFile(dir);
    const batch = new BatchItems(views);
    const n = 3000;
    const all = finished(n);
    // Finished out of order, as a batch's items do.
    for (let k = 0; k < n; k++) {
      const item = all[(k * 7919) % n]!;
      const entry = batch.nextEntry();
      batch.keep(entry, { ...item, state: 'planned' });
      batch.keep(entry, item);
    }
    expect(views.bytes).toBeGreaterThan(n * 100);
    const { entries, release } = batch.reportEntries();
    expect(entries.map((e) => e.input)).toEqual(all.map((i) => i.input));
    // Read back from the file each time it is asked for: a new object, the same view.
    expect(entries[5]!.item()).not.toBe(entries[5]!.item());
    expect(entries[5]!.item()).toEqual(reportView(all[5]!));
    expect(entries.every((e) => e.status === 'succeeded')).toBe(true);
    release();
    views.close();
  });

  it('leaves no file in the out dir, even while open', async () => {
    const views = new ViewFile(dir);
    const batch = new BatchItems(views);
    for (const item of finished(10)) batch.keep(batch.nextEntry(), item);
    expect(batch.reportItems()).toHaveLength(10);
    expect(await readdir(dir)).toEqual([]);
    views.close();
  });

  it('writes the same report.json and report.html as the items held in memory', async () => {
    const views = new ViewFile(join(dir, 'a'));
    const batch = new BatchItems(views);
    const items = batchItems();
    for (const item of items) batch.keep(batch.nextEntry(), item);
    const { entries, release } = batch.reportEntries();
    const head = await writeReportFiles(join(dir, 'a'), entries, META);
    release();
    views.close();
    const report = buildReport(items, META);
    const { items: _, ...expected } = report;
    expect(head).toEqual(expected);
    expect(await readFile(join(dir, 'a', 'report.json'), 'utf8')).toBe([...reportJsonText(report)].join(''));
    await writeReportHtml(join(dir, 'b'), items, META);
    const page = (sub: string) => readFile(join(dir, sub, 'report.html'), 'utf8');
    expect((await page('a')).replaceAll(`${dir}/a`, '')).toBe((await page('b')).replaceAll(`${dir}/b`, ''));
  });

  it('a later item replaces the earlier at its place; the file is compacted once its dead lines outweigh the live', () => {
    const views = new ViewFile(dir, 64 * 1024);
    const batch = new BatchItems(views);
    const rounds = 200;
    let line = 0;
    for (let r = 0; r < rounds; r++) {
      for (const item of finished(20, r)) batch.keep(batch.nextEntry(), item);
      if (r === 0) line = views.bytes / 20;
    }
    const kept = batch.reportItems();
    expect(kept).toHaveLength(20);
    expect(kept.every((i) => i.size === rounds - 1)).toBe(true);
    // 4,000 lines were written; the dead ones stay below the threshold or the live ones.
    const live = 20 * (line + 4);
    expect(views.bytes).toBeLessThan(live + Math.max(64 * 1024, live));
    expect(rounds * 20 * line).toBeGreaterThan(10 * views.bytes);
    views.close();
  });

  it('is not compacted while a report is being written from it', () => {
    const views = new ViewFile(dir, 1024);
    const batch = new BatchItems(views);
    for (const item of finished(20, 0)) batch.keep(batch.nextEntry(), item);
    const snapshot = batch.reportEntries();
    for (let r = 1; r < 50; r++) for (const item of finished(20, r)) batch.keep(batch.nextEntry(), item);
    // The snapshot's entries were all replaced, and still read as they were.
    expect(snapshot.entries.map((e) => e.item().size)).toEqual(new Array(20).fill(0));
    const held = views.bytes;
    snapshot.release();
    for (const item of finished(20, 50)) batch.keep(batch.nextEntry(), item);
    expect(views.bytes).toBeLessThan(held);
    expect(batch.reportItems().map((i) => i.size)).toEqual(new Array(20).fill(50));
    views.close();
  });
});
