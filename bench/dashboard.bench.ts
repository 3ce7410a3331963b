/**
 * The dashboard at scale: a synthetic batch of 1,000 and 10,000 files (80 % succeeded, 12 % failed for
 * one of 4 reasons, the rest in progress at various states) in a DashboardModel, served by
 * startDashboardServer, opened in headless Chromium (Debian's chromium through playwright-core).
 *
 * Per size: the first paint (from navigation to the list drawn with every file counted: the snapshot
 * fetched, parsed and the visible rows rendered), three loads, median; and the update latency (a
 * file's state changed in the model until the page shows it, over the event stream), five times,
 * median. Target: the first paint of 10,000 files within 2 s.
 */
import { chromium } from 'playwright-core';
import { DashboardModel, startDashboardServer } from '../src/pipeline/dashboard/index.ts';
import type { ItemState } from '../src/pipeline/item.ts';
import type { BenchRow } from './lib.ts';

const SIZES = [1_000, 10_000];
const LOADS = 3;
const UPDATES = 5;
const FIRST_PAINT_TARGET_MS = 2_000;
const CHROMIUM = process.env.GENPIPE_CHROMIUM ?? '/usr/bin/chromium';
const REASONS = [
  'generation_failed: The model failed to produce an output.',
  'source: image is 9000x30px but each side must be <= 8000px. Resize and try again.',
  'moderation: the prompt was refused',
  'upload refused: 413 payload too large',
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function synthModel(n: number): DashboardModel {
  const model = new DashboardModel('run');
  const t0 = Date.now() - 3_600_000;
  model.apply({ type: 'batch_started', at: t0, input_dir: 'in', out_dir: 'out', emulator: true });
  const busy: ItemState[] = ['checked', 'uploaded', 'submitted', 'completed'];
  for (let i = 0; i < n; i++) {
    const input = `shoot-${String(i % 50).padStart(2, '0')}/img-${String(i).padStart(6, '0')}.png`;
    const r = i % 100;
    const state: ItemState = r < 80 ? 'reported' : r < 92 ? 'failed' : busy[r % 4]!;
    model.upsert(input, t0 + i * 100 + 4000, state, {
      stage: state === 'failed' ? 'wait' : 'report',
      reason: state === 'failed' ? REASONS[i % REASONS.length]! : null,
      generationId: `gen_${i.toString(16).padStart(12, '0')}`,
      firstAt: t0 + i * 100,
    });
  }
  return model;
}

export async function benchDashboard(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const bench = 'dashboard';
  const rows: BenchRow[] = [];
  const data: Record<string, { firstPaintMs: number[]; updateMs: number[] }> = {};
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  try {
    for (const n of SIZES) {
      const model = synthModel(n);
      const server = await startDashboardServer({
        host: '127.0.0.1',
        port: 0,
        model,
        inputDir: null,
        outDir: '/nonexistent',
        actions: {},
        title: 'bench',
      });
      const firstPaintMs: number[] = [];
      const updateMs: number[] = [];
      try {
        for (let k = 0; k < LOADS; k++) {
          const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
          const t0 = Date.now();
          await page.goto(server.url);
          await page.waitForFunction(
            (count) =>
              document.getElementById('note')?.textContent === `${count} files` &&
              document.querySelector('.row') !== null,
            n,
            { polling: 'raf' },
          );
          firstPaintMs.push(Date.now() - t0);
          if (k === LOADS - 1) {
            for (let u = 0; u < UPDATES; u++) {
              const state: ItemState = u % 2 === 0 ? 'submitted' : 'reported';
              const want = u % 2 === 0 ? 'pending' : 'succeeded';
              const t1 = Date.now();
              model.upsert(model.row(1)!.input, t1, state, { stage: 'submit' });
              await page.waitForSelector(`.row[data-id="1"][data-status="${want}"]`, { state: 'attached' });
              updateMs.push(Date.now() - t1);
            }
          }
          await page.close();
        }
      } finally {
        await server.close();
      }
      data[String(n)] = { firstPaintMs, updateMs };
      const at = `${n.toLocaleString('en')} files`;
      const paint = median(firstPaintMs);
      rows.push(
        {
          bench,
          metric: `${at}: first paint (list drawn, all counted)`,
          value: paint,
          unit: 'ms',
          ...(n === 10_000
            ? { target: `≤ ${FIRST_PAINT_TARGET_MS} ms`, pass: paint <= FIRST_PAINT_TARGET_MS }
            : {}),
        },
        { bench, metric: `${at}: update latency (model → page)`, value: median(updateMs), unit: 'ms' },
      );
    }
  } finally {
    await browser.close();
  }
  return { rows, data };
}
