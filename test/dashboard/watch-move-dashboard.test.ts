/**
 * The dashboard of `genpipe watch --on-done move` (the drop folder of the README) in headless
 * Chromium: a failure at the service, filed in failed/ by the move, retried from the page is moved back
 * into the inbox and sent exactly once more (the emulator's generations counted), then filed in
 * processed/; a retry of a file in neither place is refused with why, on the page too. The thumbnails
 * of the files the move took away are served from where they went, live and from the out dir's journal.
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { expect, it } from 'vitest';
import type { DashboardSnapshot } from '../../src/pipeline/dashboard/index.ts';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv } from '../cli/run-cli.ts';
import { writePng } from '../client/client-helpers.ts';
import { adminRows, until } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { noisePng } from '../pipeline/watch-helpers.ts';
import { rowOf as row, servedPage, setFaults, useDashboardBed } from './dashboard-helpers.ts';

const promptFolder = usePromptFolders();
const bed = useDashboardBed('watch-move');
const faults = (json: unknown) => setFaults(bed, json);

/** A watch of a new inbox with `--on-done move` and its dashboard, and a page of it. */
async function movingWatch() {
  const { input: inbox, out } = promptFolder({});
  writeFileSync(join(inbox, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const served = await servedPage(bed, [
    'watch',
    inbox,
    '--out',
    out,
    '--quiet-ms',
    '200',
    '--rescan-ms',
    '300',
    '--retries',
    '0',
    '--on-done',
    'move',
    '--dashboard',
    '0',
  ]);
  const failedDir = join(dirname(inbox), 'failed');
  const processedDir = join(dirname(inbox), 'processed');
  return { inbox, out, failedDir, processedDir, ...served };
}

it('retries a failure that the move filed in failed/: moved back into the inbox, sent exactly once more', async () => {
  const { inbox, failedDir, processedDir, child, page, problems } = await movingWatch();
  await faults({ failure_codes: { generation_failed: 1 } });
  let before: number;
  try {
    writeFileSync(join(inbox, 'retry.png'), await noisePng(48, 48));
    await row(page, 'retry.png', 'failed').waitFor({ timeout: 30_000 });
    await until(async () => existsSync(join(failedDir, 'retry.png')));
    before = (await adminRows(bed.emu)).length;
  } finally {
    await faults({});
  }
  await row(page, 'retry.png', 'failed').click();
  await page.locator('#retry-one').click();
  await page.locator('#said', { hasText: 'retry.png moved back into the inbox from' }).waitFor();
  await row(page, 'retry.png', 'succeeded').waitFor({ timeout: 30_000 });
  await until(async () => existsSync(join(processedDir, 'retry.png')));
  expect(existsSync(join(failedDir, 'retry.png'))).toBe(false);
  // Said on stderr, as a pause or a stop from the page is.
  expect(child.stderr()).toMatch(
    /genpipe: retry from the dashboard: retry\.png moved back into the inbox from /,
  );
  expect((await adminRows(bed.emu)).length).toBe(before + 1);

  // A failed file gone from both places: nothing would be taken again, and the page says why.
  await faults({ failure_codes: { generation_failed: 1 } });
  try {
    writeFileSync(join(inbox, 'gone.png'), await noisePng(40, 40));
    await row(page, 'gone.png', 'failed').waitFor({ timeout: 30_000 });
    await until(async () => existsSync(join(failedDir, 'gone.png')));
  } finally {
    await faults({});
  }
  rmSync(join(failedDir, 'gone.png'));
  const sent = (await adminRows(bed.emu)).length;
  await row(page, 'gone.png', 'failed').click();
  await page.locator('#retry-one').click();
  await page
    .locator('#said', { hasText: /gone\.png is not in the inbox nor in .*failed.*: nothing to take again/ })
    .waitFor();
  expect(await row(page, 'gone.png', 'failed').count()).toBe(1);
  expect(child.stderr()).toMatch(/genpipe: retry from the dashboard refused: gone\.png is not in the inbox/);
  // Retry every failed file: the one gone is not taken, and the answer says why.
  await page.locator('button[data-action="retry-all"]').click();
  await page
    .locator('#said', {
      hasText: /^taken again: 0 failed files; not taken: gone\.png is not in the inbox nor in /,
    })
    .waitFor();
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  expect((await adminRows(bed.emu)).length).toBe(sent);
  expect(problems.filter((p) => !p.includes('409'))).toEqual([]);
  await page.close();
}, 120_000);

/** The thumbnail the page at `url` loads for `input`: its status and content type. */
async function thumbOf(url: string, input: string, headers: Record<string, string> = {}) {
  const snap = (await (await fetch(`${url}api/snapshot`, { headers })).json()) as DashboardSnapshot;
  const id = snap.rows.find((r) => r.input === input)!.id;
  const res = await fetch(`${url}thumbs/${id}?v=1`, { headers });
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    bytes: (await res.arrayBuffer()).byteLength,
  };
}

it('shows the thumbnails of files the move filed away, live and from the out dir', async () => {
  const { inbox, out, processedDir, failedDir, child, url, page } = await movingWatch();
  writeFileSync(join(inbox, 'done.png'), await noisePng(48, 48));
  await writePng(join(inbox, 'huge.png'), 9000, 30);
  await row(page, 'done.png', 'succeeded').waitFor({ timeout: 30_000 });
  await row(page, 'huge.png', 'failed').waitFor({ timeout: 30_000 });
  await until(
    async () => existsSync(join(processedDir, 'done.png')) && existsSync(join(failedDir, 'huge.png')),
  );
  expect(existsSync(join(inbox, 'done.png'))).toBe(false);
  for (const input of ['done.png', 'huge.png']) {
    expect(await thumbOf(url, input)).toMatchObject({ status: 200, type: expect.stringMatching(/^image\//) });
  }
  // Shown on the page: the row's picture loads.
  await page.reload();
  await page.waitForFunction(() => {
    const img = document.querySelector<HTMLImageElement>('.row[data-input="done.png"] img');
    return img?.complete === true && img.naturalWidth > 0;
  });
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);

  const dash = spawnGenpipe(['dashboard', out, '--listen', '0'], cliEnv(bed.emu));
  const said = /dashboard of .* on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
  await dash.until(() => said.test(dash.stderr()), 'the address');
  const at = said.exec(dash.stderr())![1]!;
  for (const input of ['done.png', 'huge.png']) {
    expect(await thumbOf(at, input)).toMatchObject({ status: 200, type: expect.stringMatching(/^image\//) });
  }
  dash.proc.kill('SIGINT');
  await dash.exited;
  await page.close();
}, 120_000);
