/**
 * Journal bench (issue 5): the journal's overhead per item, i.e. one full item lifecycle of 8 durable
 * writes (plan's insert — after choosing the item's place —, then checked, uploaded, submitting, submitted, completed, downloaded — which
 * also stats the output to record its size — and reported), timed per item over BENCH_JOURNAL_ITEMS
 * items (default 2,000) in the journal's FULL mode (what genpipe uses: each write awaited until the WAL
 * is synced to disk, off the event loop — store/sqlite/wal-sync.ts).
 *
 * Baseline: the same writes in NORMAL mode (WAL commits not synced; a power cut may lose the last
 * ones), measured in the same run. The two modes alternate in rounds so that load from other
 * processes falls on both alike. The journal goes in a fresh folder under BENCH_JOURNAL_DIR (default
 * the OS temp dir), which must be a real disk for the fsyncs to mean anything (tmpfs makes them free).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Item, newItem } from '../src/pipeline/item.ts';
import { type Journal, openJournal, type SynchronousMode } from '../src/pipeline/store/sqlite/index.ts';
import { patchItem } from '../test/helpers/item-patch.ts';
import type { BenchRow } from './lib.ts';

const ITEMS = Number(process.env.BENCH_JOURNAL_ITEMS ?? 2000);
const ROUNDS = 4;
const WRITES_PER_ITEM = 8;

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i]!;
}

/** One item's lifecycle through the journal; returns its duration in ms. */
async function lifecycle(j: Journal, n: number, outDir: string): Promise<number> {
  const name = `in/file-${n}.png`;
  const base: Item = patchItem(newItem(name, `/bench/${name}`, 1234, 1), {
    state: 'planned',
    rule: { index: 0, match: '**/*.png' },
    inputAs: 'source',
    request: {
      type: 'image_edit',
      model: 'uni-1',
      prompt: 'watercolor, soft light',
      source: { file_id: '$input' },
    },
  });
  const t0 = performance.now();
  const place = j.plan(base, { contentHash: `c${n}`, recipeHash: 'r' }).item.place ?? name;
  // The download's output, in the item's place, written outside the timing.
  const planned = performance.now() - t0;
  const output = `${place}/output-0.png`;
  mkdirSync(join(outDir, place), { recursive: true });
  writeFileSync(join(outDir, output), 'x'.repeat(64));
  const t1 = performance.now();
  let it: Item = { ...base, state: 'checked', media: { width: 64, height: 64, bytes: 1234 } };
  await j.save(it);
  it = patchItem(it, { state: 'uploaded', upload: { mode: 'inline', fileId: `file-${n}`, sha256: null } });
  await j.save(it);
  it = patchItem(it, { requestId: `req-${n}`, attempts: 1 });
  await j.recordIntent(it);
  it = patchItem(it, { state: 'submitted', generationId: `gen-${n}` });
  await j.recordSubmitted(it);
  it = patchItem(it, {
    state: 'completed',
    generation: { state: 'completed', failure_code: null, failure_reason: null },
  });
  await j.save(it);
  it = patchItem(it, { state: 'downloaded', outputs: [output] });
  await j.save(it);
  it = { ...it, state: 'reported' };
  await j.save(it);
  return planned + (performance.now() - t1);
}

/** Runs the journal bench (see the module comment). */
export async function benchJournalOverhead(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const root = mkdtempSync(join(process.env.BENCH_JOURNAL_DIR ?? tmpdir(), 'genpipe-bench-journal-'));
  const samples: Record<SynchronousMode, number[]> = { FULL: [], NORMAL: [] };
  const journals: Record<SynchronousMode, Journal> = {
    FULL: openJournal({ outDir: join(root, 'full'), synchronous: 'FULL' }),
    NORMAL: openJournal({ outDir: join(root, 'normal'), synchronous: 'NORMAL' }),
  };
  try {
    for (const j of Object.values(journals)) await j.startBatch({ inputDir: root, service: 'bench' });
    const perRound = Math.ceil(ITEMS / ROUNDS);
    let next = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const order: SynchronousMode[] = round % 2 === 0 ? ['NORMAL', 'FULL'] : ['FULL', 'NORMAL'];
      const first = next;
      for (const mode of order) {
        const j = journals[mode];
        const outDir = j.outDir;
        for (let n = first; n < Math.min(ITEMS, first + perRound); n++)
          samples[mode].push(await lifecycle(j, n, outDir));
      }
      next = Math.min(ITEMS, first + perRound);
    }
    for (const j of Object.values(journals)) await j.finishBatch('finished');
  } finally {
    for (const j of Object.values(journals)) await j.close();
    rmSync(root, { recursive: true, force: true });
  }

  const stats = (mode: SynchronousMode) => {
    const sorted = [...samples[mode]].sort((a, b) => a - b);
    return { items: sorted.length, medianMs: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99) };
  };
  const full = stats('FULL');
  const normal = stats('NORMAL');
  const ratioMedian = full.medianMs / normal.medianMs;
  const ratioP99 = full.p99Ms / normal.p99Ms;
  const rows: BenchRow[] = [
    {
      bench: 'pipeline-journal',
      metric: `per item, ${WRITES_PER_ITEM} writes, FULL, median`,
      value: full.medianMs,
      unit: 'ms',
    },
    {
      bench: 'pipeline-journal',
      metric: `per item, ${WRITES_PER_ITEM} writes, FULL, p99`,
      value: full.p99Ms,
      unit: 'ms',
    },
    { bench: 'pipeline-journal', metric: 'baseline NORMAL, median', value: normal.medianMs, unit: 'ms' },
    { bench: 'pipeline-journal', metric: 'baseline NORMAL, p99', value: normal.p99Ms, unit: 'ms' },
    { bench: 'pipeline-journal', metric: 'FULL / NORMAL, median', value: ratioMedian, unit: 'x' },
    { bench: 'pipeline-journal', metric: 'FULL / NORMAL, p99', value: ratioP99, unit: 'x' },
  ];
  return {
    rows,
    data: {
      items: ITEMS,
      writesPerItem: WRITES_PER_ITEM,
      rounds: ROUNDS,
      dir: process.env.BENCH_JOURNAL_DIR ?? tmpdir(),
      full,
      normal,
      ratio: { median: ratioMedian, p99: ratioP99 },
      perWriteMedianMs: { full: full.medianMs / WRITES_PER_ITEM, normal: normal.medianMs / WRITES_PER_ITEM },
    },
  };
}
