/**
 * `genpipe run --dashboard 0` in headless Chromium: the credits spent and estimated at the dry run's
 * prices (the emulator's costs), and the actions a run takes from the page. Screenshots go to a folder
 * under the OS temp dir.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { adminRows, call, heldGenerations, hold, unhold } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import {
  endsCleanly,
  newWatchedPage,
  openDashboard,
  rowOf,
  servedPage,
  spawnDashboard,
  useDashboardBed,
} from './dashboard-helpers.ts';

const promptFolder = usePromptFolders();
const bed = useDashboardBed('run');

it('counts the credits spent and estimated at the prices a dry run uses', async () => {
  const { input, out } = promptFolder({
    'a.txt': 'a red fox',
    'b.txt': 'a blue fox',
    'c.txt': 'a green fox',
  });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const held = await hold(bed.emu, { prompt: 'blue' });
  try {
    const { child, url, token } = await spawnDashboard(bed, ['run', input, '--out', out, '--dashboard', '0']);
    const { page, problems } = await newWatchedPage(bed);
    await openDashboard(page, url, token);
    await heldGenerations(bed.emu, 1);
    await rowOf(page, 'a.txt', 'succeeded').waitFor({ timeout: 30_000 });
    await rowOf(page, 'c.txt', 'succeeded').waitFor({ timeout: 30_000 });
    // Two images done at 1 credit each; the third at the service, one more to come.
    await page
      .locator('#credits', {
        hasText: /^credits: 2 spent, about 3 in all at the emulator's configured costs/,
      })
      .waitFor();
    await page.screenshot({ path: bed.shot('1-credits.png') });
    await unhold(bed.emu, held);
    expect((await child.exited).code, child.stderr()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  } finally {
    await unhold(bed.emu).catch(() => undefined);
  }
}, 120_000);

it("retries a run's retryable failure from the page while the run goes on: one more generation, no more", async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox', 'b.txt': 'a blue fox' });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const faults = (json: unknown) => call(bed.emu, 'PUT', '/_emulator/faults', { key: null, json });
  // b.txt held at the service keeps the run going while a.txt is retried.
  const held = await hold(bed.emu, { prompt: 'blue' });
  await faults({ failure_codes: { generation_failed: 1 } });
  try {
    const { child, url, token } = await spawnDashboard(bed, [
      'run',
      input,
      '--out',
      out,
      '--retries',
      '0',
      '--dashboard',
      '0',
    ]);
    const { page, problems } = await newWatchedPage(bed);
    await openDashboard(page, url, token);
    await rowOf(page, 'a.txt', 'failed').waitFor({ timeout: 30_000 });
    await heldGenerations(bed.emu, 1);
    await faults({});
    const before = (await adminRows(bed.emu)).length;
    // Every action a run can take is offered; only Resume, of an intake not paused, is disabled.
    for (const a of ['stop', 'pause', 'retry-all'])
      await page.locator(`button[data-action="${a}"]:enabled`).waitFor();
    expect(await page.locator('button[data-action]:disabled').count()).toBe(1);
    expect(await page.locator('button[data-action="resume"]').getAttribute('title')).toBe(
      'the intake is not paused',
    );

    await rowOf(page, 'a.txt', 'failed').click();
    await page.locator('#retry-one').click();
    await page.locator('#said', { hasText: 'a.txt taken again' }).waitFor();
    await rowOf(page, 'a.txt', 'succeeded').waitFor({ timeout: 30_000 });
    await page.screenshot({ path: bed.shot('2-run-retried.png') });
    expect((await adminRows(bed.emu)).length).toBe(before + 1);

    await unhold(bed.emu, held);
    const exited = await child.exited;
    // b.txt's generation was made under the faults: it fails; a.txt's retry succeeded.
    expect(exited.code, child.stderr()).toBe(1);
    expect(child.stderr()).toMatch(/2 files: 1 succeeded, 1 failed/);
    expect((await adminRows(bed.emu)).length).toBe(before + 1);
    expect(problems).toEqual([]);
    await page.close();
  } finally {
    await faults({});
    await unhold(bed.emu).catch(() => undefined);
  }
}, 120_000);

it('says the totals are a lower bound while the run is still finding files, then shows the real ones', async () => {
  // More files than a run holds in flight at --concurrency 1: the walk waits for slots, held at the
  // service. The red ones are copies of one prompt: one generation, the others wait for it (in flight
  // all the same), so that the rest of the run takes one job, not 39 one after the other.
  const files: Record<string, string> = { 'z.txt': 'a blue fox' };
  for (let i = 0; i < 39; i++) files[`p${String(i).padStart(2, '0')}.txt`] = 'a red fox';
  const { input, out } = promptFolder(files);
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const red = await hold(bed.emu, { prompt: 'red' });
  const blue = await hold(bed.emu, { prompt: 'blue' });
  try {
    const served = await servedPage(bed, [
      'run',
      input,
      '--out',
      out,
      '--concurrency',
      '1',
      '--dashboard',
      '0',
    ]);
    const { page } = served;
    await heldGenerations(bed.emu, 1);
    const progress = page.locator('#progress');
    await progress.filter({ hasText: /of at least \d+ found so far \(still finding files\) done/ }).waitFor();
    const found = Number(/at least (\d+)/.exec((await progress.textContent()) ?? '')![1]);
    expect(found).toBeLessThan(40);
    await page
      .locator('#credits', { hasText: /at least about \d+ in all \(the files found so far\)/ })
      .waitFor();
    await page.screenshot({ path: bed.shot('3-still-finding.png') });

    // The red ones let go: every file is found, z.txt still at the service; the totals are the run's.
    await unhold(bed.emu, red);
    await progress.filter({ hasText: /^39 of 40 done/ }).waitFor({ timeout: 60_000 });
    expect(await progress.textContent()).not.toContain('finding');
    // One generation for the 39 copies and one for z.txt, not yet paid: the estimate is the run's.
    await page.locator('#credits', { hasText: /1 spent, about 2 in all at/ }).waitFor();
    await unhold(bed.emu, blue);
    await endsCleanly(served);
  } finally {
    await unhold(bed.emu).catch(() => undefined);
  }
}, 120_000);

it('shows how long a file in progress has taken so far, live, while it stays in one state', async () => {
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const held = await hold(bed.emu, { prompt: 'red' });
  try {
    const served = await servedPage(bed, ['run', input, '--out', out, '--dashboard', '0']);
    const { page } = served;
    await heldGenerations(bed.emu, 1);
    const took = rowOf(page, 'a.txt', 'pending').locator('.took');
    // Held at the service, its state does not change: what it shows still grows, past 2 s.
    await took.filter({ hasText: /^([2-9]|\d\d+)\.\d s so far$/ }).waitFor({ timeout: 15_000 });
    await page.screenshot({ path: bed.shot('4-took-so-far.png') });
    await unhold(bed.emu, held);
    await endsCleanly(served);
  } finally {
    await unhold(bed.emu).catch(() => undefined);
  }
}, 60_000);
