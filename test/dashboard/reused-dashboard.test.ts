/**
 * A byte copy of a file done in an earlier run, as `genpipe run --dashboard` shows it live and
 * `genpipe dashboard <out-dir>` reads it from the journal: `reused` (counted as such), its note neutral,
 * and nothing spent for it (the credits match what the emulator charged).
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { DashboardSnapshot } from '../../src/pipeline/dashboard/index.ts';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { heldGenerations, hold, unhold } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import {
  newWatchedPage,
  openDashboard,
  rowOf,
  spawnDashboard,
  useDashboardBed,
} from './dashboard-helpers.ts';

const promptFolder = usePromptFolders();
const bed = useDashboardBed('reused');

async function snapshot(url: string): Promise<DashboardSnapshot> {
  return (await (await fetch(`${url}api/snapshot`)).json()) as DashboardSnapshot;
}

async function charged(): Promise<number> {
  const res = await fetch(`${bed.emu.url}/_emulator/balance`);
  const { data } = (await res.json()) as { data: { credits_charged: number }[] };
  return data.reduce((sum, c) => sum + c.credits_charged, 0);
}

it('shows a byte copy of a done file as reused, spending nothing for it, live and from the journal', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const first = await runCli(['run', input, '--out', out], cliEnv(bed.emu));
  expect(first.code, first.stderr).toBe(0);
  copyFileSync(join(input, 'a.txt'), join(input, 'copy.txt'));
  writeFileSync(join(input, 'b.txt'), 'a blue fox');
  const held = await hold(bed.emu, { prompt: 'blue' });
  try {
    const { child, url, token } = await spawnDashboard(bed, ['run', input, '--out', out, '--dashboard', '0']);
    const { page, problems } = await newWatchedPage(bed);
    await openDashboard(page, url, token);
    await heldGenerations(bed.emu, 1);
    const copy = rowOf(page, 'copy.txt', 'reused');
    await copy.waitFor({ timeout: 30_000 });
    await rowOf(page, 'a.txt', 'reused').waitFor();
    expect(await copy.locator('.reason').textContent()).toMatch(/^reused: same content as a\.txt/);
    const color = await copy.locator('.reason').evaluate((e) => getComputedStyle(e).color);
    expect(color).not.toBe('rgb(204, 51, 51)');
    const live = await snapshot(url);
    expect(live.counts.reused).toBe(2);
    // b.txt is at the service: nothing completed in this run yet.
    expect(live.batch.credits?.spent).toBe(0);
    await page.screenshot({ path: bed.shot('1-reused-live.png') });
    await unhold(bed.emu, held);
    expect((await child.exited).code, child.stderr()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  } finally {
    await unhold(bed.emu).catch(() => undefined);
  }

  const prices = join(out, '..', 'prices.yaml');
  writeFileSync(prices, 'image: 1\n');
  const view = spawnGenpipe(['dashboard', out, '--listen', '0', '--price-list', prices], cliEnv(bed.emu));
  const said = /dashboard of .* on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
  await view.until(() => said.test(view.stderr()), 'the address');
  const read = await snapshot(said.exec(view.stderr())![1]!);
  const row = read.rows.find((r) => r.input === 'copy.txt')!;
  expect(row.status).toBe('reused');
  expect(row.reason).toMatch(/^reused: same content as a\.txt/);
  expect(read.counts.reused).toBe(1);
  expect(read.batch.credits?.spent).toBe(await charged());
  view.proc.kill('SIGINT');
  expect((await view.exited).code, view.stderr()).toBe(0);
}, 120_000);
