/**
 * report.html as a browser lays it out: the demo's samples (a chain whose intermediate steps are not
 * downloaded, a layer stack, photos, a clip, prompt files) run through the CLI against the emulator,
 * the page opened in headless Chromium (bench/chromium-pipe.ts) at a desktop and a phone width, and no
 * text overflows its box: not a card's, not a thumbnail's (nor the page's width).
 */
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Chromium, needChromium } from '../../bench/chromium-pipe.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import {
  STEP_NOT_DOWNLOADED_LABEL,
  STEP_NOT_DOWNLOADED_NOTE,
} from '../../src/pipeline/report/result-json.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, runCli } from './run-cli.ts';

const SAMPLES = join(import.meta.dirname, '..', '..', 'samples');

let emu: RunningEmulator;
let root: string;
let page: string;
let browser: Chromium | undefined;

beforeAll(async () => {
  needChromium();
  root = await mkdtemp(join(tmpdir(), 'genpipe-report-layout-'));
  emu = await startTestEmulator({ tiny_outputs: false }); // the page shows real pictures
  await cp(SAMPLES, join(root, 'samples'), { recursive: true });
  const out = join(root, 'out');
  const run = await runCli(
    ['run', join(root, 'samples'), '--out', out, '--poll-interval', '1', '--quiet'],
    cliEnv(emu),
    120_000,
  );
  expect(run.code, run.stderr).toBe(0);
  page = join(out, 'report.html');
  browser = Chromium.start();
}, 150_000);

afterAll(async () => {
  await browser?.close();
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/**
 * Run in the page: each card and each thumbnail box (a picture, a placeholder, a prompt) whose content
 * is taller or wider than its box, named by its card, its kind and the start of its text. Each card is
 * scrolled into view first (cards off screen are not laid out: `content-visibility: auto`).
 */
const OVERFLOWS = `(async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  const out = [];
  const cards = document.querySelectorAll('#cards .card');
  for (const card of cards) {
    card.scrollIntoView();
    await frame();
    const name = card.querySelector('.name').textContent;
    for (const box of [card, ...card.querySelectorAll('figure, figure img, .ph, .prompt-in')]) {
      if (box.scrollHeight <= box.clientHeight && box.scrollWidth <= box.clientWidth) continue;
      const kind = box === card ? 'card' : box.tagName.toLowerCase() + (box.className ? '.' + box.className : '');
      out.push(name + ': ' + kind + ' ' + box.scrollWidth + '×' + box.scrollHeight + ' in ' +
        box.clientWidth + '×' + box.clientHeight + ' "' + box.textContent.slice(0, 60) + '"');
    }
  }
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth) out.push('the page: ' + doc.scrollWidth + ' wide in ' + doc.clientWidth);
  return { cards: cards.length, overflows: out };
})()`;

describe("report.html of the demo's samples in headless Chromium", () => {
  it.each([
    ['a desktop', 1280],
    ['a phone', 390],
  ])('has no text overflowing a card or a thumbnail at %s width (%i px)', async (_, width) => {
    const tab = await browser!.open(pathToFileURL(page).href, { width, height: 800 });
    try {
      const { cards, overflows } = await tab.evaluate<{ cards: number; overflows: string[] }>(OVERFLOWS);
      // Every file's card is drawn (the demo's are fewer than a page).
      const report = JSON.parse(await readFile(join(root, 'out', 'report.json'), 'utf8'));
      expect(cards).toBe(report.items.length);
      expect(cards).toBeGreaterThanOrEqual(8);
      expect(overflows).toEqual([]);
    } finally {
      await tab.close();
    }
  });

  it("draws a short label in an intermediate step's box, and its note in the chain's facts", async () => {
    const tab = await browser!.open(pathToFileURL(page).href, { width: 1280, height: 800 });
    let card: { ph: string[]; facts: string[][] };
    try {
      card = await tab.evaluate(`(() => {
        const card = document.querySelector('#cards .card.chain');
        return {
          ph: [...card.querySelectorAll('.ph')].map((p) => p.textContent),
          facts: [...card.querySelectorAll('dl.facts dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]),
        };
      })()`);
    } finally {
      await tab.close();
    }
    expect(card.ph).toEqual([STEP_NOT_DOWNLOADED_LABEL]);
    const report = JSON.parse(await readFile(join(root, 'out', 'report.json'), 'utf8'));
    const chain = report.items.find((i: { input: string }) => i.input === 'chain/product.jpg');
    const animate = chain.steps.find((s: { name: string }) => s.name === 'animate');
    expect(card.facts).toContainEqual([
      'animate',
      `${STEP_NOT_DOWNLOADED_NOTE} (generation ${animate.generation_id})`,
    ]);
    // result.json and report.json keep the whole note.
    expect(animate.generation_id).toMatch(/^[0-9a-f-]{36}$/);
    const result = JSON.parse(
      await readFile(join(root, 'out', 'chain', 'product.jpg', 'result.json'), 'utf8'),
    );
    for (const steps of [chain.steps, result.steps]) {
      expect(steps.map((s: { name: string; note: string | null }) => [s.name, s.note])).toEqual([
        ['stylize', null],
        ['animate', STEP_NOT_DOWNLOADED_NOTE],
        ['social', null],
        ['shop', null],
      ]);
    }
  });
});
