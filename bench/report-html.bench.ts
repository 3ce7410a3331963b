/**
 * report.html at scale: the reports of a synthetic finished batch (test/pipeline/report-synthetic.ts:
 * 73 % succeeded, 15 % failed for one of 6 reasons, 8 % skipped, 4 % not processed, 3 % retried; no
 * files behind the items, so no thumbnails) of 1,000, 10,000 and 100,000 items
 * (BENCH_REPORT_HTML_MAX caps the size), written by genpipe's writer and by the renderer of before
 * (bench/baseline/report-html-before.ts: every item a server-rendered card) in the same run.
 *
 * Per size and writer: the write of report.json + report.html (in a child process of its own: time,
 * peak RSS during the write and its growth, peak heap growth, and the heap the write holds — measured
 * after collecting garbage: see report-html-child.ts), the files' sizes; then the page opened in headless
 * Chromium over the DevTools pipe (bench/chromium-pipe.ts), three times each, medians: first
 * contentful paint, DOMContentLoaded (the list is drawn by then: the script runs at the end of the
 * parse) and load; for genpipe's page also the time to show a filter (status + search, from setting
 * the URL's fragment to the next frame). The page of before at 100,000 items is not opened (hundreds of
 * MB of markup). Screenshots of the 10,000-item page (all, one failure reason, a search) go to
 * bench/results/.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Chromium } from './chromium-pipe.ts';
import { type BenchRow, MB, RESULTS_DIR, ROOT } from './lib.ts';

const SIZES = [1_000, 10_000, 100_000];
const MAX = Number(process.env.BENCH_REPORT_HTML_MAX ?? Number.POSITIVE_INFINITY);
const LOADS = 3;
/** The page of before is not opened beyond this many items. */
const BEFORE_OPEN_MAX = 10_000;
const FCP_TARGET_MS = 1000;

type Writer = 'new' | 'before';

interface WriteFigures {
  writeMs: number;
  rssBefore: number;
  rssPeak: number;
  peakResetWorked: boolean;
  heapBefore: number;
  heapPeak: number;
  heapHeld: number;
  jsonBytes: number;
  htmlBytes: number;
}

interface PageFigures {
  fcpMs: number;
  dclMs: number;
  loadMs: number;
  filterMs: number | null;
}

function writeIn(writer: Writer, n: number, outDir: string): Promise<WriteFigures> {
  const args = ['--expose-gc', join(ROOT, 'bin', 'run-ts.js'), join(ROOT, 'bench', 'report-html-child.ts')];
  const child = spawn(process.execPath, [...args, writer, String(n), outDir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += String(d);
  });
  return new Promise((ok, fail) => {
    child.once('exit', (code) => {
      if (code !== 0) return fail(new Error(`report-html-child ${writer} ${n} exited ${code}`));
      const figures = JSON.parse(out.trim().split('\n').at(-1)!) as WriteFigures;
      figures.jsonBytes = statSync(join(outDir, 'report.json')).size;
      figures.htmlBytes = statSync(join(outDir, 'report.html')).size;
      ok(figures);
    });
  });
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

const TIMINGS = `(() => {
  const paint = performance.getEntriesByType('paint').find((e) => e.name === 'first-contentful-paint');
  const nav = performance.getEntriesByType('navigation')[0];
  return { fcp: paint ? paint.startTime : -1, dcl: nav.domContentLoadedEventEnd, load: nav.loadEventEnd };
})()`;

const FILTER = `new Promise((done) => {
  const t = performance.now();
  addEventListener('hashchange', () => requestAnimationFrame(() => done(performance.now() - t)), { once: true });
  location.hash = '#status=failed&q=img-0001';
})`;

async function openPage(browser: Chromium, html: string, filter: boolean): Promise<PageFigures> {
  const runs: PageFigures[] = [];
  for (let k = 0; k < LOADS; k++) {
    const tab = await browser.open(pathToFileURL(html).href, { timeoutMs: 600_000 });
    const t = await tab.evaluate<{ fcp: number; dcl: number; load: number }>(TIMINGS);
    const filterMs = filter ? await tab.evaluate<number>(FILTER) : null;
    runs.push({ fcpMs: t.fcp, dclMs: t.dcl, loadMs: t.load, filterMs });
    await tab.close();
  }
  return {
    fcpMs: median(runs.map((r) => r.fcpMs)),
    dclMs: median(runs.map((r) => r.dclMs)),
    loadMs: median(runs.map((r) => r.loadMs)),
    filterMs: filter ? median(runs.map((r) => r.filterMs!)) : null,
  };
}

async function screenshots(browser: Chromium, html: string, n: number): Promise<string[]> {
  const views: [string, string][] = [
    ['all', ''],
    ['failed-reason', '#status=failed&group=2'],
    ['search', '#q=img-00012&sort=time'],
  ];
  const written: string[] = [];
  mkdirSync(RESULTS_DIR, { recursive: true });
  for (const [name, hash] of views) {
    const tab = await browser.open(`${pathToFileURL(html).href}${hash}`, { height: 1400 });
    const path = join(RESULTS_DIR, `report-html-${n}-${name}.png`);
    writeFileSync(path, await tab.screenshot());
    written.push(path);
    await tab.close();
  }
  return written;
}

function rowsOf(
  n: number,
  w: Record<Writer, WriteFigures>,
  p: Partial<Record<Writer, PageFigures>>,
): BenchRow[] {
  const bench = 'report-html';
  const at = `${n} items`;
  const rows: BenchRow[] = [
    { bench, metric: `${at}: write (json + html)`, value: w.new.writeMs, unit: 'ms' },
    { bench, metric: `${at}: write / before`, value: w.new.writeMs / w.before.writeMs, unit: 'ratio' },
    { bench, metric: `${at}: write per item`, value: (w.new.writeMs * 1000) / n, unit: 'µs' },
    { bench, metric: `${at}: report.json`, value: w.new.jsonBytes / MB, unit: 'MB' },
    { bench, metric: `${at}: report.html`, value: w.new.htmlBytes / MB, unit: 'MB' },
    {
      bench,
      metric: `${at}: report.html / before`,
      value: w.new.htmlBytes / w.before.htmlBytes,
      unit: 'ratio',
    },
    { bench, metric: `${at}: peak RSS of the write`, value: w.new.rssPeak / MB, unit: 'MB' },
    { bench, metric: `${at}: peak RSS / before`, value: w.new.rssPeak / w.before.rssPeak, unit: 'ratio' },
    {
      bench,
      metric: `${at}: RSS growth of the write`,
      value: (w.new.rssPeak - w.new.rssBefore) / MB,
      unit: 'MB',
    },
    {
      bench,
      metric: `${at}: peak heap growth (garbage included)`,
      value: (w.new.heapPeak - w.new.heapBefore) / MB,
      unit: 'MB',
    },
    { bench, metric: `${at}: heap held by the write`, value: w.new.heapHeld / MB, unit: 'MB' },
  ];
  const np = p.new;
  if (np) {
    rows.push(
      {
        bench,
        metric: `${at}: first contentful paint`,
        value: np.fcpMs,
        unit: 'ms',
        ...(n === 10_000 ? { target: `≤ ${FCP_TARGET_MS} ms`, pass: np.fcpMs <= FCP_TARGET_MS } : {}),
      },
      { bench, metric: `${at}: DOMContentLoaded (list drawn)`, value: np.dclMs, unit: 'ms' },
      { bench, metric: `${at}: load`, value: np.loadMs, unit: 'ms' },
      { bench, metric: `${at}: filter + search shown`, value: np.filterMs ?? -1, unit: 'ms' },
    );
  }
  if (np && p.before) {
    rows.push(
      {
        bench,
        metric: `${at}: first contentful paint / before`,
        value: np.fcpMs / p.before.fcpMs,
        unit: 'ratio',
      },
      { bench, metric: `${at}: load / before`, value: np.loadMs / p.before.loadMs, unit: 'ratio' },
    );
  }
  return rows;
}

export async function benchReportHtml(): Promise<{ rows: BenchRow[]; data: unknown }> {
  const root = mkdtempSync(join(tmpdir(), 'genpipe-bench-report-html-'));
  const browser = Chromium.start();
  const rows: BenchRow[] = [];
  const data: Record<string, unknown> = {};
  const held: number[] = [];
  try {
    for (const n of SIZES.filter((s) => s <= MAX)) {
      const writes = {} as Record<Writer, WriteFigures>;
      const pages: Partial<Record<Writer, PageFigures>> = {};
      for (const writer of ['new', 'before'] as const) {
        const dir = join(root, `${writer}-${n}`);
        process.stderr.write(`  report-html: ${writer} writer, ${n} items...\n`);
        writes[writer] = await writeIn(writer, n, dir);
        if (writer === 'new' || n <= BEFORE_OPEN_MAX) {
          pages[writer] = await openPage(browser, join(dir, 'report.html'), writer === 'new');
        }
        if (writer === 'new' && n === 10_000) {
          data.screenshots = await screenshots(browser, join(dir, 'report.html'), n);
        }
        rmSync(dir, { recursive: true, force: true });
      }
      held.push(writes.new.heapHeld);
      data[String(n)] = { writes, pages };
      rows.push(...rowsOf(n, writes, pages));
    }
    if (held.length === 3) {
      const ratio = held[2]! / held[1]!;
      rows.push({
        bench: 'report-html',
        metric: 'heap held by the write, 100,000 / 10,000 items',
        value: ratio,
        unit: 'ratio',
        target: '≤ 1.5',
        pass: ratio <= 1.5,
      });
    }
  } finally {
    await browser.close();
    rmSync(root, { recursive: true, force: true });
  }
  return { rows, data };
}
