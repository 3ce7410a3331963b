/**
 * `genpipe dashboard <out-dir>` in headless Chromium: an out dir's journal served read-only (no
 * actions), each file with its state and reason, and a later run into the same out dir shown live,
 * without a reload, as the journal changes. Screenshots go to a folder under the OS temp dir.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { imageTooManyPixelsDetail } from '../../src/spec/index.ts';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { writePng } from '../client/client-helpers.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';

const CHROMIUM = process.env.GENPIPE_CHROMIUM ?? '/usr/bin/chromium';
const promptFolder = usePromptFolders();
let emu: RunningEmulator;
let browser: Browser;
const shots = mkdtempSync(join(tmpdir(), 'genpipe-dashboard-journal-shots-'));

beforeAll(async () => {
  emu = await startTestEmulator();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  console.log(`dashboard screenshots: ${shots}`);
});

afterAll(async () => {
  killChildren();
  await browser?.close();
  await emu?.close();
});

it('serves an out dir from its journal, read-only, and follows a later run live', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  await writePng(join(input, 'big.png'), 9000, 30);
  const first = await runCli(['run', input, '--out', out], cliEnv(emu));
  expect(first.code, first.stderr).toBe(1);

  const child = spawnGenpipe(['dashboard', out, '--listen', '0'], cliEnv(emu));
  const said = /dashboard of .* on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
  await child.until(() => said.test(child.stderr()), 'the address');
  const url = said.exec(child.stderr())![1]!;

  const page = await browser.newPage({ viewport: { width: 1200, height: 700 } });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(url);
  await page.locator('.row[data-input="a.txt"][data-status="succeeded"]').waitFor();
  const big = page.locator('.row[data-input="big.png"][data-status="failed"]');
  await big.waitFor();
  expect(await big.locator('.reason').textContent()).toBe(imageTooManyPixelsDetail('source', 9000, 30));
  expect(await page.locator('#batch').textContent()).toContain('read from the journal');
  expect(await page.locator('button[data-action]').count()).toBe(0);
  expect((await fetch(`${url}api/actions/stop`, { method: 'POST' })).status).toBe(401);
  await page.evaluate(() => Object.assign(window, { notReloaded: true }));
  await page.screenshot({ path: join(shots, '1-journal.png') });

  writeFileSync(join(input, 'c.txt'), 'a green fox');
  const second = await runCli(['run', input, '--out', out], cliEnv(emu));
  expect(second.code, second.stderr).toBe(1);
  await page.locator('.row[data-input="c.txt"][data-status="succeeded"]').waitFor();
  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  await page.screenshot({ path: join(shots, '2-journal-after-second-run.png') });

  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  expect(problems).toEqual([]);
  await page.close();
}, 120_000);
