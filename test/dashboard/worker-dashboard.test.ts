/**
 * `genpipe worker --dashboard 0`: the worker's files (named with their out dir) on the page as it
 * works on the jobs a `run --store --no-work` enqueued, and the page's stop ends the worker as a
 * signal does (its items in hand back to the queue), with exit 0. The store's password never reaches the page.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { useWorkerChildren } from '../cli/worker-child.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';

const CHROMIUM = process.env.GENPIPE_CHROMIUM ?? '/usr/bin/chromium';
const pg = usePostgres();
const promptFolder = usePromptFolders();
let emu: RunningEmulator;
let browser: Browser;
const startWorker = useWorkerChildren(() => emu);
const shots = mkdtempSync(join(tmpdir(), 'genpipe-dashboard-worker-shots-'));

beforeAll(async () => {
  emu = await startTestEmulator();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  console.log(`dashboard screenshots: ${shots}`);
});
afterAll(async () => {
  await browser?.close();
  await emu?.close();
});

it("shows a worker's files live and stops it from the page", async () => {
  const url = await pg.freshDatabase();
  const { input, out } = promptFolder({ 'p0.txt': 'a red fox', 'p1.txt': 'a blue fox' });
  const worker = startWorker(url, ['--dashboard', '0']);
  const said = /dashboard on (http:\/\/\S+) \(actions need the token (\S+)\)/;
  await worker.until(said);
  await worker.until(/worker ready/);
  const [, page0, token] = said.exec(worker.text())!;
  const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  await page.goto(`${page0}?token=${encodeURIComponent(token!)}`);

  const run = await runCli(['run', input, '--out', out, '--store', url, '--no-work'], cliEnv(emu), 120_000);
  expect(run.code, run.stderr).toBe(0);
  for (const f of ['p0.txt', 'p1.txt']) {
    const row = page.locator(`.row[data-status="succeeded"]`, { hasText: `/${f}` });
    await row.waitFor({ timeout: 30_000 });
  }
  await page.screenshot({ path: join(shots, '1-worker.png') });
  const snapshot = await (await fetch(`${page0}api/snapshot`)).text();
  expect(snapshot).not.toContain(decodeURIComponent(new URL(url).password));

  await page.locator('button[data-action="stop"]').click();
  await worker.until(/stopped from the dashboard/);
  expect(await worker.exited).toBe(0);
  expect(problems).toEqual([]);
  await page.close();
}, 180_000);
