/**
 * report.html of a large batch: every file is in the page's data (and report.json, written in the
 * same pass, is the report exactly), the first page of cards is drawn without JavaScript, the page's
 * script filters, searches and sorts (its pure parts called here from its very text, and the page run
 * in headless Chromium), hostile names stay text, and writing 20,000 items holds no more of them than
 * writing 2,000.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, needChromium } from '../../bench/chromium-pipe.ts';
import { type Item, newItem } from '../../src/pipeline/item.ts';
import {
  buildReport,
  type FailureGroup,
  heldEntries,
  PAGE_SIZE,
  type PageRow,
  pageScriptApi,
  type ReportEntry,
  relUrl,
  reportJsonText,
  scriptJson,
  writeReportFiles,
} from '../../src/pipeline/report/index.ts';
import { BatchItems } from '../../src/pipeline/runner/batch-items.ts';
import { ViewFile } from '../../src/pipeline/runner/view-file.ts';
import { SYNTH_FAILURES, SYNTH_T0, synthItem, synthItems } from './report-synthetic.ts';

const N = 3000;
const META = { startedAt: SYNTH_T0, finishedAt: SYNTH_T0 + 600_000, now: SYNTH_T0 + 600_000 };

let root: string;
let items: Item[];
let html: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-report-page-'));
  items = [...synthItems(N)];
  await writeReportFiles(join(root, 'big'), heldEntries(items), META);
  html = await readFile(join(root, 'big', 'report.html'), 'utf8');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

function dataOf(page: string): { rows: PageRow[]; groups: FailureGroup[] } {
  const open = '<script type="application/json" id="report-data">';
  const from = page.indexOf(open) + open.length;
  return JSON.parse(page.slice(from, page.indexOf('</script>', from)));
}

/** The cards in a page (or a DOM dump): their place in report order and status. */
function cardsIn(page: string): { n: number; status: string }[] {
  const shown = page.slice(0, page.indexOf('<script'));
  return [...shown.matchAll(/<article class="card (\w+)" id="item-(\d+)">/g)].map((m) => ({
    n: Number(m[2]),
    status: m[1]!,
  }));
}

describe('report.html of 3,000 files', () => {
  it('holds every file in its data, failures grouped, report.json the report exactly', async () => {
    const report = buildReport(items, META);
    const { rows, groups } = dataOf(html);
    expect(rows.map((r) => [r.i, r.s])).toEqual(report.items.map((l) => [l.input, l.status]));
    // One group per cause, though each file's reason has its own details: the file numbered i failed
    // for cause i % 6; a group shows the reason of its first file.
    expect(groups).toHaveLength(SYNTH_FAILURES.length);
    expect(groups.reduce((n, g) => n + g.n, 0)).toBe(report.totals.failed);
    const groupOfCause = new Map<number, number>();
    for (const r of rows) {
      if (r.s !== 'failed') {
        expect(r.g).toBeUndefined();
        continue;
      }
      const i = Number(/img-(\d+)/.exec(r.i)![1]);
      const cause = i % SYNTH_FAILURES.length;
      expect(r.r).toBe(SYNTH_FAILURES[cause]![2](i));
      if (!groupOfCause.has(cause)) {
        groupOfCause.set(cause, r.g!);
        expect(groups[r.g!]!.reason).toBe(r.r);
      }
      expect(r.g, r.i).toBe(groupOfCause.get(cause));
    }
    expect(new Set(groupOfCause.values()).size).toBe(SYNTH_FAILURES.length);
    expect(await readFile(join(root, 'big', 'report.json'), 'utf8')).toBe(
      [...reportJsonText(report)].join(''),
    );
  });

  it('draws the first page of cards, failures first, and says the rest needs the script', () => {
    const cards = cardsIn(html);
    const failed = dataOf(html)
      .rows.map((r, n) => ({ n, status: r.s }))
      .filter((c) => c.status === 'failed');
    expect(cards).toEqual(failed.slice(0, PAGE_SIZE));
    expect(html).toContain(`The first ${PAGE_SIZE} of ${N} files, failures first.`);
    expect(html).toContain('<nav id="controls" hidden>');
  });
});

describe("the page's script", () => {
  const api = pageScriptApi();
  const rows: PageRow[] = [];

  beforeAll(() => {
    rows.push(...dataOf(html).rows);
  });

  it('filters by status and failure group, searches names, sorts by status, name and time', () => {
    const view = api.parseView('#status=failed&group=2&q=IMG-0001&sort=time&page=2');
    expect(view).toEqual({ status: 'failed', group: 2, q: 'IMG-0001', sort: 'time', page: 1 });
    expect(api.viewHash(view)).toBe('#status=failed&group=2&q=IMG-0001&sort=time&page=2');
    expect(api.parseView('#item-12')).toEqual(api.parseView(''));

    const picked = api.select(rows, view);
    const expected = rows
      .map((r, n) => ({ r, n }))
      .filter(({ r }) => r.s === 'failed' && r.g === 2 && r.i.includes('img-0001'))
      .sort((a, b) => b.r.d! - a.r.d! || a.n - b.n)
      .map(({ n }) => n);
    expect(expected.length).toBeGreaterThan(1);
    expect(picked).toEqual(expected);

    const all = api.select(rows, api.parseView(''));
    const rank = ['failed', 'unprocessed', 'pending', 'succeeded', 'skipped'];
    expect(all).toHaveLength(N);
    expect(all.map((n) => rank.indexOf(rows[n]!.s))).toEqual(all.map((n) => rank.indexOf(rows[n]!.s)).sort());
    expect(api.select(rows, api.parseView('#sort=name'))).toEqual(rows.map((_, n) => n));
    // Slowest first; files without a time (skipped, not processed) last.
    const byTime = api.select(rows, api.parseView('#sort=time'));
    const times = byTime.map((n) => rows[n]!.d ?? -1);
    expect(times).toEqual([...times].sort((a, b) => b - a));
    // The search also finds a file by its out folder.
    const moved: PageRow[] = [{ s: 'succeeded', i: 'a/scan.png', p: 'a/scan-1.png' }];
    expect(api.select(moved, api.parseView('#q=SCAN-1'))).toEqual([0]);
  });

  it('draws a hostile name, reason and prompt as text', () => {
    const hostile = '</script><script>alert(1)</script>"\'&\u2028\u0007.png';
    const row: PageRow = {
      s: 'failed',
      i: hostile,
      r: '<img src=x onerror=alert(2)>',
      pr: '<b>bold</b>',
      o: [[`${hostile}/output-0.png`, 0, 0]],
      a: [['g<1>', null, 'x"y', '<i>why</i>']],
    };
    const card = api.card(row, 7);
    expect(card).not.toMatch(/<(?:script|img|b|i)[ >]/);
    expect(card).toContain('&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;');
    expect(card).toContain(`href="${relUrl(`${hostile}/output-0.png`)}"`);
    // In the data: no `<` at all, and U+2028 escaped, read back the same.
    const text = scriptJson(row);
    expect(text).not.toMatch(/[<\u2028\u2029]/);
    expect(JSON.parse(text)).toEqual(row);
  });
});

/**
 * The page's own script runs in headless Chromium: Debian's chromium (`apt-get install chromium`;
 * `.ci/run` installs it) or the one GENPIPE_CHROMIUM names. Without it these tests fail, saying so.
 */
describe('report.html in headless Chromium', () => {
  beforeAll(needChromium);

  /** The DOM of the page once loaded (its script has run). */
  async function dom(file: string, hash: string): Promise<string> {
    const { stdout } = await promisify(execFile)(
      CHROMIUM,
      ['--headless', '--no-sandbox', '--disable-gpu', '--dump-dom', `${pathToFileURL(file).href}${hash}`],
      { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 },
    );
    return stdout;
  }

  it('draws the view the URL asks for: failures of one reason searched, a later page, a sort', async () => {
    const file = join(root, 'big', 'report.html');
    const { rows } = dataOf(html);
    const api = pageScriptApi();
    for (const hash of ['#status=failed&group=1&q=img-0002', '#status=succeeded&page=3', '#sort=time']) {
      const page = await dom(file, hash);
      const want = api.select(rows, api.parseView(hash));
      const from = api.parseView(hash).page * PAGE_SIZE;
      expect(
        cardsIn(page).map((c) => c.n),
        hash,
      ).toEqual(want.slice(from, from + PAGE_SIZE));
      expect(page).toContain('<nav id="controls">');
      expect(page).toContain(
        `${from + 1}–${Math.min(want.length, from + PAGE_SIZE)} of ${want.length} files`,
      );
    }
  });

  it('shows a hostile name as text and runs no script but its own', async () => {
    const name = '"><img src=x onerror="document.title=1"><script>document.title=2</script>\u2028.png';
    const item: Item = {
      ...newItem(name, `/in/${name}`, 10, SYNTH_T0),
      state: 'failed',
      reason: `bad ${name}`,
    };
    const dir = join(root, 'hostile');
    await writeReportFiles(dir, heldEntries([item, synthItem(0)]), META);
    const page = await dom(join(dir, 'report.html'), '#q=shoot');
    expect(page).toContain('<title>genpipe report — 2 inputs, 0 succeeded, 1 failed</title>');
    expect(page).not.toMatch(/<img src="x"/);
    expect(cardsIn(page).map((c) => c.n)).toEqual([1]);
    const all = await dom(join(dir, 'report.html'), '');
    expect(all).toContain('&lt;script&gt;document.title=2&lt;/script&gt;');
  });

  it('reloads a running report by itself, keeping the view in the fragment', async () => {
    // Served over loopback: the first answer is the running page, every later one the finished page,
    // so the DOM Chromium dumps (after the page's timers ran, in virtual time) tells whether it reloaded.
    const few = items.slice(0, 300);
    await writeReportFiles(join(root, 'running'), heldEntries(few), {
      startedAt: SYNTH_T0,
      now: SYNTH_T0 + 1000,
    });
    await writeReportFiles(join(root, 'finished'), heldEntries(few), META);
    const running = await readFile(join(root, 'running', 'report.html'), 'utf8');
    const finished = await readFile(join(root, 'finished', 'report.html'), 'utf8');
    expect(running).toContain('<noscript><meta http-equiv="refresh"');
    expect(finished).not.toContain('http-equiv="refresh"');
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(req.url ?? '');
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(asked.length === 1 ? running : finished);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const { port } = server.address() as AddressInfo;
      const { stdout: page } = await promisify(execFile)(
        CHROMIUM,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--virtual-time-budget=30000',
          '--dump-dom',
          `http://127.0.0.1:${port}/report.html#status=failed`,
        ],
        { maxBuffer: 64 * 1024 * 1024, timeout: 60_000 },
      );
      expect(asked.filter((u) => u === '/report.html').length).toBeGreaterThanOrEqual(2);
      expect(page).not.toContain('<meta name="genpipe-refresh"');
      expect(page).toContain('<a href="#status=failed" data-status="failed" class="on">');
      const cards = cardsIn(page);
      expect(cards.length).toBeGreaterThan(0);
      expect(cards.every((c) => c.status === 'failed')).toBe(true);
    } finally {
      server.close();
    }
  });
});

describe('writing the reports of 20,000 items', () => {
  /** An entry whose item is read back each time with a large field no report shows (20 KB). */
  class Padded implements ReportEntry {
    readonly input: string;
    readonly place: string;
    readonly status: ReportEntry['status'];
    readonly journalCount = null;
    constructor(private readonly at: ReportEntry) {
      this.input = at.input;
      this.place = at.place;
      this.status = at.status;
    }
    item(): Item {
      peak = Math.max(peak, process.memoryUsage().heapUsed);
      return { ...this.at.item(), pad: `${this.input}${'x'.repeat(20_000)}` } as Item;
    }
  }
  let peak = 0;

  async function heapGrowth(n: number): Promise<number> {
    const dir = join(root, `heap-${n}`);
    const views = new ViewFile(dir);
    const batch = new BatchItems(views);
    for (const item of synthItems(n)) batch.keep(batch.nextEntry(), item);
    const snapshot = batch.reportEntries();
    const entries = snapshot.entries.map((e) => new Padded(e));
    const before = process.memoryUsage().heapUsed;
    peak = before;
    await writeReportFiles(dir, entries, META);
    snapshot.release();
    views.close();
    return peak - before;
  }

  it('holds about as much as writing 2,000: the items are read one at a time', async () => {
    const small = await heapGrowth(2000);
    const large = await heapGrowth(20_000);
    // Held all at once, 20,000 items of 20 KB would be 400 MB, ten times the 40 MB of 2,000. (The
    // growth of 2,000 can be next to nothing when a collection came at the right time: 8 MB at least.)
    // Garbage not yet collected when the peak is read varies with the machine's load (up to ~4.2 seen on
    // a busy machine); holding every item would be about 10, so 6 still tells the two apart.
    expect(large / Math.max(small, 8 * 1024 * 1024)).toBeLessThan(6);
  }, 120_000);
});
