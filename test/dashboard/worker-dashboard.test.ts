/**
 * `genpipe worker --dashboard 0`: the worker's files (named with their out dir) on the page as it
 * works on the jobs a `run --store --no-work` enqueued, and the page's stop ends the worker as a
 * signal does (its items in hand back to the queue), with exit 0. `genpipe dashboard <out> --store`
 * serves the out dir from the store, with the worker alive on it. The store's password never reaches the page.
 */
import { expect, it } from 'vitest';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { useWorkerChildren } from '../cli/worker-child.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { clickStop, newWatchedPage, openDashboard, useDashboardBed } from './dashboard-helpers.ts';

const pg = usePostgres();
const promptFolder = usePromptFolders();
const bed = useDashboardBed('worker');
const startWorker = useWorkerChildren(() => bed.emu);

it("shows a worker's files live, the out dir from the store, and stops the worker from the page", async () => {
  const url = await pg.freshDatabase();
  const { input, out } = promptFolder({ 'p0.txt': 'a red fox', 'p1.txt': 'a blue fox' });
  const worker = startWorker(url, ['--dashboard', '0']);
  const said = /dashboard on (http:\/\/\S+) \(actions need the token (\S+)\)/;
  await worker.until(said);
  await worker.until(/worker ready/);
  const [, page0, token] = said.exec(worker.text())!;
  const { page, problems } = await newWatchedPage(bed);
  await openDashboard(page, page0!, token!);
  // What a worker cannot do is shown disabled, with why.
  await page.locator('button[data-action="pause"]:disabled').waitFor();
  await page
    .locator('[data-unavailable="retry"]', { hasText: 'a worker takes what the store hands it' })
    .waitFor();

  const run = await runCli(
    ['run', input, '--out', out, '--store', url, '--no-work'],
    cliEnv(bed.emu),
    120_000,
  );
  expect(run.code, run.stderr).toBe(0);
  for (const f of ['p0.txt', 'p1.txt']) {
    const row = page.locator(`.row[data-status="succeeded"]`, { hasText: `/${f}` });
    await row.waitFor({ timeout: 30_000 });
  }
  // Two images at the emulator's cost of 1 each.
  await page
    .locator('#credits', { hasText: /^credits: 2 spent, about 2 in all at the emulator's configured costs/ })
    .waitFor();
  // Running, as a run's or a watch's page says.
  await page.locator('#batch', { hasText: /^running since / }).waitFor();
  await page.screenshot({ path: bed.shot('1-worker.png') });
  const password = decodeURIComponent(new URL(url).password);
  const snapshot = await (await fetch(`${page0}api/snapshot`)).text();
  expect(snapshot).not.toContain(password);

  // The out dir from the store, nothing running: its files, and the worker alive on the store.
  const dash = spawnGenpipe(['dashboard', out, '--store', url, '--listen', '0'], cliEnv(bed.emu));
  const at = /dashboard of .* on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
  await dash.until(() => at.test(dash.stderr()), 'the address');
  const storePage = at.exec(dash.stderr())![1]!;
  const { page: second, problems: secondProblems } = await newWatchedPage(bed);
  await second.goto(storePage);
  await second.locator('.row[data-input="p0.txt"][data-status="succeeded"]').waitFor();
  await second.locator('.row[data-input="p1.txt"][data-status="succeeded"]').waitFor();
  await second.locator('#workers', { hasText: /^workers: 1 alive; .* pid \d+, 0 in hand/ }).waitFor();
  await second.screenshot({ path: bed.shot('2-store-dashboard.png') });
  for (const body of [
    await (await fetch(`${storePage}api/snapshot`)).text(),
    await (await fetch(storePage)).text(),
  ]) {
    expect(body).not.toContain(password);
  }
  dash.proc.kill('SIGINT');
  expect((await dash.exited).code, dash.stderr()).toBe(0);
  await second.close();

  // Asked first, in what a stop does on a worker.
  expect(await clickStop(page)).toBe(
    'Stop the worker? The files in its hands go back to the queue for the other workers, and it exits.',
  );
  await worker.until(/stopped from the dashboard/);
  expect(await worker.exited).toBe(0);
  expect([...problems, ...secondProblems]).toEqual([]);
  await page.close();
}, 180_000);
