/**
 * `genpipe dashboard <out-dir>` in headless Chromium: an out dir's journal served read-only (no
 * actions), each file with its state and reason, and a later run into the same out dir shown live,
 * without a reload, as the journal changes. Screenshots go to a folder under the OS temp dir.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { DashboardSnapshot } from '../../src/pipeline/dashboard/index.ts';
import { imageTooManyPixelsDetail } from '../../src/spec/index.ts';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { writePng } from '../client/client-helpers.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { newWatchedPage, useDashboardBed } from './dashboard-helpers.ts';

const promptFolder = usePromptFolders();
const bed = useDashboardBed('journal');

it('serves an out dir from its journal, read-only, and follows a later run live', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  await writePng(join(input, 'big.png'), 9000, 30);
  const first = await runCli(['run', input, '--out', out], cliEnv(bed.emu));
  expect(first.code, first.stderr).toBe(1);

  const prices = join(out, '..', 'prices.yaml');
  writeFileSync(prices, 'image: 2.5\n');
  const child = spawnGenpipe(['dashboard', out, '--listen', '0', '--price-list', prices], cliEnv(bed.emu));
  const said = /dashboard of .* on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
  await child.until(() => said.test(child.stderr()), 'the address');
  const url = said.exec(child.stderr())![1]!;

  const { page, problems } = await newWatchedPage(bed);
  await page.goto(url);
  await page.locator('.row[data-input="a.txt"][data-status="succeeded"]').waitFor();
  const big = page.locator('.row[data-input="big.png"][data-status="failed"]');
  await big.waitFor();
  expect(await big.locator('.reason').textContent()).toBe(imageTooManyPixelsDetail('source', 9000, 30));
  expect(await page.locator('#batch').textContent()).toContain('read from the journal');
  // The image made cost 2.5 at the price list; the refused one was never sent.
  await page
    .locator('#credits', { hasText: /^credits: 2\.5 spent, about 2\.5 in all at the price list / })
    .waitFor();
  expect(await page.locator('button[data-action]').count()).toBe(0);
  expect((await fetch(`${url}api/actions/stop`, { method: 'POST' })).status).toBe(401);
  await page.evaluate(() => Object.assign(window, { notReloaded: true }));
  await page.screenshot({ path: bed.shot('1-journal.png') });

  writeFileSync(join(input, 'c.txt'), 'a green fox');
  const second = await runCli(['run', input, '--out', out], cliEnv(bed.emu));
  expect(second.code, second.stderr).toBe(1);
  await page.locator('.row[data-input="c.txt"][data-status="succeeded"]').waitFor();
  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
  await page.screenshot({ path: bed.shot('2-journal-after-second-run.png') });

  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  expect(problems).toEqual([]);
  await page.close();
}, 120_000);

it("times a file from its last attempt, as the live page does, not from the journal's first sight of it", async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  await writePng(join(input, 'big.png'), 9000, 30);
  const first = await runCli(['run', input, '--out', out], cliEnv(bed.emu));
  expect(first.code, first.stderr).toBe(1);
  const retriedAfter = Date.now();
  const second = await runCli(['run', input, '--out', out, '--retry-failed'], cliEnv(bed.emu));
  expect(second.code, second.stderr).toBe(1);

  const child = spawnGenpipe(['dashboard', out, '--listen', '0'], cliEnv(bed.emu));
  const said = /dashboard of .* on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
  await child.until(() => said.test(child.stderr()), 'the address');
  const snapshot = (await (
    await fetch(`${said.exec(child.stderr())![1]!}api/snapshot`)
  ).json()) as DashboardSnapshot;
  const big = snapshot.rows.find((r) => r.input === 'big.png')!;
  expect(big.status).toBe('failed');
  expect(big.firstAt).toBeGreaterThanOrEqual(retriedAfter);
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
}, 60_000);
