import { createHash } from 'node:crypto';
import {
  access,
  cp,
  link,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Chromium, needChromium } from '../../bench/chromium-pipe.ts';
import type { Item } from '../../src/pipeline/item.ts';
import { createRedactor } from '../../src/pipeline/progress/redact.ts';
import {
  buildReport,
  esc,
  type FailureGroup,
  makeThumbnails,
  PAGE_SCRIPT,
  PAGE_SIZE,
  type PageRow,
  pageScriptApi,
  relUrl,
  renderReportHtml,
  THUMBS_DIR,
  thumbnailCounts,
  writeReportHtml,
  writeReports,
} from '../../src/pipeline/report/index.ts';
import { patchItem } from '../helpers/item-patch.ts';
import { makeBatchFiles, SECRET, T0, XSS_NAME, XSS_REASON } from './report-fixtures.ts';

let root: string;
let inDir: string;
let outDir: string;
let items: Item[];
let html: string;
const STOP = 'API client is suspended';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-report-html-'));
  inDir = join(root, 'in');
  outDir = join(root, 'out');
  items = await makeBatchFiles(inDir, outDir);
  await writeReportHtml(outDir, items, {
    startedAt: T0,
    finishedAt: T0 + 3000,
    stoppedEarly: { reason: STOP },
    inputDir: inDir,
    emulator: true,
    now: T0 + 3000,
    redact: createRedactor([SECRET]),
  });
  html = await readFile(join(outDir, 'report.html'), 'utf8');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The card of one input, else its row in the skipped / not processed table. */
function blockOf(input: string): string {
  const name = esc(input);
  const card = [...staticPart(html).matchAll(/<article [\s\S]*?<\/article>/g)].find((m) =>
    m[0].includes(`<span class="name">${name}</span>`),
  );
  if (card) return card[0];
  const row = [...html.matchAll(/<tr [\s\S]*?<\/tr>/g)].find((m) => m[0].includes(`<td>${name}</td>`));
  expect(row, `a card or row for ${input}`).toBeDefined();
  return row![0];
}

function srcs(text: string): string[] {
  return [...text.matchAll(/<img src="([^"]*)"/g)].map((m) => m[1]!);
}

/** The page up to its data: what it shows without its script. */
function staticPart(page: string): string {
  return page.slice(0, page.indexOf('<script'));
}

/** The page's data: its text and what it holds. */
function dataOf(page: string): { text: string; rows: PageRow[]; groups: FailureGroup[] } {
  const open = '<script type="application/json" id="report-data">';
  const from = page.indexOf(open) + open.length;
  const text = page.slice(from, page.indexOf('</script>', from));
  return { text, ...JSON.parse(text) };
}

describe('report.html', () => {
  it('escapes every user-supplied string; the only script that can run is its own', () => {
    expect(html).toContain(esc(XSS_NAME));
    expect(esc(XSS_NAME)).toBe('&lt;script&gt;alert(1)&lt;/script&gt;.png');
    expect(html).toContain(esc(XSS_REASON));
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('<b>the sea</b>');
    expect(html).toContain('&lt;b&gt;the sea&lt;/b&gt;');
    // Two script elements: the data (never run, no `<` inside) and the page's script, allowed by its hash.
    expect(html.match(/<script/gi)).toEqual(['<script', '<script']);
    const data = dataOf(html);
    expect(data.text).not.toContain('<');
    expect(data.rows.map((r) => r.i)).toContain(`weird/${XSS_NAME}`);
    expect(html).toContain(`<script>${PAGE_SCRIPT}(document);</script>`);
    const hash = createHash('sha256').update(`${PAGE_SCRIPT}(document);`).digest('base64');
    expect(html).toContain(
      `content="default-src 'none'; img-src 'self' data: file:; style-src 'unsafe-inline'; script-src 'sha256-${hash}'"`,
    );
    // Links and images are relative: no external asset.
    for (const m of staticPart(html).matchAll(/(?:src|href)="([^"]*)"/g)) {
      expect(m[1]).not.toMatch(/^(?:[a-z]+:|\/)/i);
    }
    // A file name with URL-special characters stays one path.
    expect(relUrl('a b/#1?.png')).toBe('a%20b/%231%3F.png');
  });

  it('never shows a secret', () => {
    expect(html).not.toContain(SECRET);
    expect(html).toContain('[redacted]');
  });

  it('shows every item with its status and reason', () => {
    const report = buildReport(items, {
      startedAt: T0,
      finishedAt: T0 + 3000,
      stoppedEarly: { reason: STOP },
    });
    const labels = {
      succeeded: 'succeeded',
      failed: 'failed',
      skipped: 'skipped',
      unprocessed: 'not processed',
      pending: 'in progress',
    };
    expect(report.items).toHaveLength(10);
    for (const line of report.items) {
      const block = blockOf(line.input);
      expect(block, line.input).toContain(`<span class="badge ${line.status}">${labels[line.status]}</span>`);
      if (line.reason) expect(block, line.input).toContain(esc(line.reason));
    }
    // Failures come first, grouped by reason with their stage and count, each group linking to its files.
    const failures = html.slice(
      html.indexOf('<section id="failures">'),
      html.indexOf('</section>', html.indexOf('<section id="failures">')),
    );
    expect(failures).toContain('Failed (3)');
    expect(failures).toContain(
      '<tr class="failed" data-group="0"><td class="n">1</td><td>check</td><td class="reason"><a href="#status=failed&amp;group=0">image could not be decoded: file is empty</a></td></tr>',
    );
    expect(failures).toContain('content_moderated');
    expect(html.indexOf('id="failures"')).toBeLessThan(html.indexOf('id="items"'));
    // Every file is a card, failures first; the data gives each failure its group.
    const names = [...staticPart(html).matchAll(/<article class="card (\w+)"/g)].map((m) => m[1]);
    // (The batch finished: the item still in flight is reported not processed.)
    expect(names).toEqual([
      ...['failed', 'failed', 'failed', 'unprocessed', 'unprocessed'],
      ...['succeeded', 'succeeded', 'succeeded', 'succeeded', 'skipped'],
    ]);
    const data = dataOf(html);
    expect(data.rows).toHaveLength(10);
    expect(data.groups.map((g) => g.n)).toEqual([1, 1, 1]);
    expect(
      data.rows
        .filter((r) => r.s === 'failed')
        .map((r) => r.g)
        .sort(),
    ).toEqual([0, 1, 2]);
    expect(html).toContain(`The batch stopped early: ${STOP}. 2 files were not processed.`);
    expect(html).toContain('embedded emulator');
    // The attempts a retry replaced: a small line under the item, escaped; none for the others.
    expect(blockOf('photos/moderated.jpg')).toContain(
      '<p class="attempts">2 earlier attempts: generation <span class="mono">gen-mod-0</span> failed ' +
        '<span class="mono">generation_failed</span>: The generation failed &lt;b&gt;upstream&lt;/b&gt;.; ' +
        'request <span class="mono">req-mod-lost</span> failed: submission outcome unknown; resubmitted ' +
        '(--resubmit-unknown)</p>',
    );
    expect(staticPart(html).match(/class="attempts"/g)).toHaveLength(1);
    // Totals.
    expect(html).toContain('<div class="total inputs some"><b>10</b>inputs</div>');
    expect(html).toContain('<div class="total failed some"><b>3</b>failed</div>');
  });

  it('puts input and output thumbnails side by side, made into .thumbs/', async () => {
    const a = blockOf('photos/a.jpg');
    const [inThumb, outThumb] = srcs(a);
    expect(inThumb).toMatch(new RegExp(`^${THUMBS_DIR}/[0-9a-f]+\\.jpg$`));
    expect(outThumb).toMatch(new RegExp(`^${THUMBS_DIR}/[0-9a-f]+\\.jpg$`));
    expect(a.indexOf(inThumb!)).toBeLessThan(a.indexOf('class="arrow"'));
    expect(a.indexOf('class="arrow"')).toBeLessThan(a.indexOf(outThumb!));
    expect(a).toContain('href="photos/a.jpg/output-0.png"');
    expect(a).toContain('href="photos/a.jpg/result.json"');
    const meta = await sharp(join(outDir, inThumb!)).metadata();
    expect(meta.format).toBe('jpeg');
    // Video input and output: poster frames.
    const v = blockOf('clips/v.mp4');
    expect(srcs(v)).toHaveLength(2);
    expect(v).toContain('▶ video');
    const poster = await sharp(join(outDir, srcs(v)[0]!)).metadata();
    expect([poster.format, poster.width, poster.height]).toEqual(['jpeg', 64, 36]);
    // Layer stack: the composite (PNG, keeps alpha) and each layer.
    const s = blockOf('photos/stack.png');
    expect(s).toContain('href="photos/stack.png/composite.png"');
    expect(srcs(s)).toHaveLength(4);
    expect(srcs(s)[1]).toMatch(/\.png$/);
    // A prompt file shows its prompt; an empty file a placeholder.
    expect(blockOf('prompts/sunset.txt')).toContain('<div class="prompt-in">a sunset over');
    expect(blockOf('bad/empty.png')).toContain('<div class="ph">empty file</div>');
    for (const src of srcs(staticPart(html))) await access(join(outDir, src));
  });

  it('draws a timeline bar for every stage timing', () => {
    const svg = html.slice(html.indexOf('<svg class="timeline"'), html.indexOf('</svg>'));
    const timings = items.reduce((n, i) => n + Object.keys(i.timings).length, 0);
    expect([...svg.matchAll(/<rect /g)]).toHaveLength(timings);
    expect(svg).toContain('<title>photos/a.jpg — wait: 1.4s</title>');
    expect(svg).toContain(`<title>later/c.jpg — wait: still running</title>`);
    expect(svg).toContain(`${esc('weird/<script>alert(1)</')}`);
  });

  it('reuses thumbnails and refreshes while running; writeReports writes both files', async () => {
    const before = (await readdir(join(outDir, THUMBS_DIR))).sort();
    const report = await writeReports(outDir, items, { startedAt: T0, now: T0 + 1000 });
    expect((await readdir(join(outDir, THUMBS_DIR))).sort()).toEqual(before);
    expect(report.finished_at).toBeNull();
    const running = await readFile(join(outDir, 'report.html'), 'utf8');
    expect(running).toContain('<noscript><meta http-equiv="refresh" content="5"></noscript>');
    expect(running).toContain('The batch is still running');
    expect(JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8')).totals.pending).toBe(1);
    expect(html).not.toContain('http-equiv="refresh"');
  });

  it('does not open a source again for a thumbnail already made while the source is unchanged', async () => {
    const a = items.find((i) => i.input === 'photos/a.jpg')!;
    const bytes = await readFile(a.absPath);
    const st = await stat(a.absPath);
    const at = new Date(T0); // a whole millisecond, so that it can be set again exactly
    try {
      await utimes(a.absPath, at, at);
      const thumb = (await makeThumbnails([a], outDir)).get(a.absPath);
      expect(thumb).toMatch(/\.jpg$/);
      // Same size and mtime, bytes no decoder takes: the thumbnail still found was not made from them.
      await writeFile(a.absPath, Buffer.alloc(bytes.length, 7));
      await utimes(a.absPath, at, at);
      expect((await makeThumbnails([a], outDir)).get(a.absPath)).toBe(thumb);
    } finally {
      await writeFile(a.absPath, bytes);
      await utimes(a.absPath, st.atime, st.mtime);
    }
  });

  it('makes one thumbnail for outputs linked into several folders (a copy of the same content)', async () => {
    const a = items.find((i) => i.input === 'photos/a.jpg')!;
    const source = join(outDir, 'linked-source.png');
    await sharp({ create: { width: 40, height: 30, channels: 3, background: '#3a6' } })
      .png()
      .toFile(source);
    const copies = ['x', 'y', 'z'].map((n) => join(outDir, `linked-${n}.png`));
    for (const c of copies) await link(source, c);
    const linked = copies.map((c) => ({ ...a, input: basename(c), absPath: c, sniff: null }));
    const before = thumbnailCounts.opened;
    const thumbs = await makeThumbnails(linked, outDir);
    // One source opened for the three paths (a's own output was made before), one thumbnail for all.
    expect(thumbnailCounts.opened - before).toBe(1);
    expect(new Set(copies.map((c) => thumbs.get(c))).size).toBe(1);
    expect(thumbs.get(copies[0]!)).toMatch(/\.jpg$/);
  });

  it('tells how long it waited for thumbnails being made, and nothing when it only found those made before', async () => {
    const source = join(outDir, 'timed-source.png');
    await sharp({ create: { width: 40, height: 30, channels: 3, background: '#a36' } })
      .png()
      .toFile(source);
    const a = items.find((i) => i.input === 'photos/a.jpg')!;
    const timed = { ...a, input: 'timed-source.png', absPath: source, sniff: null };
    const told: number[] = [];
    const first = await makeThumbnails([timed], outDir, { madeIn: (ms) => told.push(ms) });
    expect(first.get(source)).toMatch(/\.jpg$/);
    expect(told).toHaveLength(1);
    expect(told[0]).toBeGreaterThan(0);
    await makeThumbnails([timed], outDir, { madeIn: (ms) => told.push(ms) });
    expect(told).toHaveLength(1);
  });

  it('makes output thumbnails for the first page only: further down, an output is shown as it is', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'genpipe-report-pages-'));
    const meta = { startedAt: T0, finishedAt: T0 + 1, now: T0 + 1, redact: createRedactor([]) };
    try {
      const a = items.find((i) => i.input === 'photos/a.jpg')!;
      const names = Array.from(
        { length: PAGE_SIZE + 3 },
        (_, k) => `many/p-${String(k).padStart(3, '0')}.png`,
      );
      const tile = sharp({ create: { width: 12, height: 9, channels: 3, background: '#468' } }).png();
      const many: Item[] = [];
      for (const input of names) {
        const absPath = join(dir, 'in', input);
        await mkdir(join(absPath, '..'), { recursive: true });
        await mkdir(join(dir, 'out', input), { recursive: true });
        await tile.clone().toFile(absPath);
        await tile.clone().toFile(join(dir, 'out', input, 'output-0.png'));
        many.push(patchItem(a, { input, place: input, absPath, outputs: [`${input}/output-0.png`] }));
      }
      const out = join(dir, 'out');
      await writeReportHtml(out, many, meta);
      const { rows } = dataOf(await readFile(join(out, 'report.html'), 'utf8'));
      // Every input (kept out of the out dir, so the report draws on its own) and the first page's
      // outputs were thumbnailed, nothing else.
      expect(await readdir(join(out, THUMBS_DIR))).toHaveLength(2 * PAGE_SIZE + 3);
      expect(rows.filter((r) => !r.it?.startsWith(`${THUMBS_DIR}/`))).toEqual([]);
      for (const r of rows.slice(0, PAGE_SIZE)) expect(r.o?.[0]?.[1]).toMatch(new RegExp(`^${THUMBS_DIR}/`));
      // Further down, an output is itself, by its path from the out dir (as the page's links are).
      const last = rows.at(-1)!;
      expect(last.i).toBe(names.at(-1));
      expect(last.o?.[0]?.[1]).toBe(`${names.at(-1)}/output-0.png`);

      // As a reader sees the second page of a copy of the out dir, the inputs gone: every picture drawn.
      const copy = join(dir, 'elsewhere', 'out');
      await cp(out, copy, { recursive: true });
      await rm(join(dir, 'in'), { recursive: true });
      needChromium();
      const browser = Chromium.start();
      try {
        const tab = await browser.open(`${pathToFileURL(join(copy, 'report.html')).href}#page=2`);
        const drawn = await tab.evaluate<{ name: string; widths: number[] }>(`(async () => {
          const card = document.querySelector('#cards .card');
          card.scrollIntoView();
          const imgs = [...card.querySelectorAll('figure img')];
          for (let t = 0; t < 100 && !imgs.every((i) => i.complete); t++) await new Promise((r) => setTimeout(r, 50));
          return { name: card.querySelector('.name').textContent, widths: imgs.map((i) => i.naturalWidth) };
        })()`);
        await tab.close();
        expect(drawn).toEqual({ name: names[PAGE_SIZE], widths: [12, 12] });
      } finally {
        await browser.close();
      }

      // A later process (here: another out dir, not yet seen) uses the thumbnails an earlier one left:
      // the same outputs (hard links) beside a copy of thumbnails made for all of them.
      await makeThumbnails(many, out);
      const later = join(dir, 'later');
      await cp(join(out, THUMBS_DIR), join(later, THUMBS_DIR), { recursive: true });
      for (const input of names) {
        await mkdir(join(later, input), { recursive: true });
        await link(join(out, input, 'output-0.png'), join(later, input, 'output-0.png'));
      }
      await writeReportHtml(later, many, meta);
      const again = dataOf(await readFile(join(later, 'report.html'), 'utf8')).rows;
      expect(again.at(-1)!.o?.[0]?.[1]).toMatch(new RegExp(`^${THUMBS_DIR}/`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("shows a chain's steps left to right, a failed step in place with why", () => {
    const step = (name: string, patch: Partial<Item['steps'][number]>): Item['steps'][number] => ({
      name,
      state: 'downloaded',
      request: { type: 'image_edit', model: 'uni-1', prompt: 'x' },
      upload: null,
      generationId: `gen-${name}`,
      requestId: `req-${name}`,
      generation: null,
      outputs: [],
      composite: null,
      attempts: 1,
      after: [],
      download: false,
      ...patch,
    });
    const blocked = 'content_moderated: <img src=x onerror=alert(1)>';
    const chain: Item = {
      input: 'chain.png',
      absPath: join(inDir, 'chain.png'),
      size: 10,
      mtimeMs: T0,
      state: 'failed',
      reason: `step 'animate' failed: ${blocked}`,
      failedAt: 'wait',
      sniff: { mime: 'image/png', ext: 'png', kind: 'image' },
      media: null,
      rule: null,
      inputAs: 'source',
      step: 'animate',
      timings: {},
      steps: [
        step('stylize', { download: true, outputs: ['chain.png/stylize/output-0.png'] }),
        step('animate', { state: 'failed', after: ['stylize'], reason: blocked }),
        step('portrait', {
          state: 'failed',
          generationId: null,
          after: ['animate'],
          reason: "not run: step 'animate' failed",
        }),
        step('ink', { after: ['stylize'] }),
        step('clip', { after: ['ink'], download: true, outputs: ['chain.png/clip/output-0.mp4'] }),
      ],
    };
    const thumbs = new Map([
      [join(outDir, 'chain.png', 'stylize', 'output-0.png'), `${THUMBS_DIR}/stylize.jpg`],
      [join(outDir, 'chain.png', 'clip', 'output-0.mp4'), `${THUMBS_DIR}/clip.jpg`],
    ]);
    const page = renderReportHtml({
      report: buildReport([chain], { startedAt: T0, finishedAt: T0 + 10 }),
      items: [chain],
      thumbs,
      outDir,
      now: T0 + 10,
    });
    const card = [...staticPart(page).matchAll(/<article [\s\S]*?<\/article>/g)][0]![0];
    expect(card).toMatch(/^<article class="card failed chain" id="item-0">/);
    const media = card.slice(card.indexOf('<div class="media">'), card.indexOf('<p class="reason">'));
    // Left to right: the input, then each step with its state, an arrow between (naming the parents
    // of a step that does not take from the one before it).
    const strip = [...media.matchAll(/<figcaption>([^<]*)<\/figcaption>|<div class="arrow">(.*?)<\/div>/g)];
    expect(strip.map((m) => m[1] ?? m[2])).toEqual([
      'input · 10 B',
      '→',
      'stylize · done',
      '→',
      'animate · failed',
      '→',
      'portrait · failed',
      '→<small>from stylize</small>',
      'ink · succeeded',
      '→',
      'clip · done',
    ]);
    // A thumbnail per downloaded step (a video's poster, marked), linked to its output.
    expect(srcs(media)).toEqual([`${THUMBS_DIR}/stylize.jpg`, `${THUMBS_DIR}/clip.jpg`]);
    expect(media).toContain(`<a href="chain.png/stylize/output-0.png"><img src="${THUMBS_DIR}/stylize.jpg"`);
    expect(media).toContain(
      `<a href="chain.png/clip/output-0.mp4"><img src="${THUMBS_DIR}/clip.jpg" alt="step clip of chain.png" loading="lazy" decoding="async"></a><span class="play">▶ video</span>`,
    );
    // A failed step in place, with why (escaped); a step not downloaded, said in a word in its box and
    // in full, with its generation, in the card's facts.
    const why = esc(`failed: ${blocked}`);
    expect(media).toContain(
      `<figure class="failed"><div class="ph" title="${why}"><span>${why}</span></div>`,
    );
    expect(media).toContain(esc("failed: not run: step 'animate' failed"));
    expect(media).toContain('<div class="ph">not downloaded</div><figcaption>ink · succeeded</figcaption>');
    expect(card).toContain(
      '<dt>ink</dt><dd>outputs not downloaded (an intermediate step): add download: true to the step to keep them (generation gen-ink)</dd>',
    );
    expect(page).not.toContain('<img src=x');
    // The script draws the same card from the page's data (which holds the steps, nothing more).
    const { rows } = dataOf(page);
    expect(rows[0]!.o).toBeUndefined();
    expect(rows[0]!.ch).toHaveLength(5);
    expect(pageScriptApi().card(rows[0]!, 0)).toBe(card);
    // A single request's row has no steps.
    for (const r of dataOf(html).rows) expect(r.ch).toBeUndefined();
  });

  it('renders an empty batch', () => {
    const page = renderReportHtml({
      report: buildReport([], { startedAt: T0, finishedAt: T0 + 10 }),
      items: [],
      thumbs: new Map(),
      outDir,
      now: T0 + 10,
    });
    expect(page).toContain('<b>0</b>inputs');
    expect(page).toContain('No stage has run yet.');
  });
});
