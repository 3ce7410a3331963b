/**
 * `genpipe dashboard --store <url>` with no out dir: every out dir of the store and every worker on
 * it, in headless Chromium. Two workers on embedded PostgreSQL each hold a file of its own (held at the
 * emulator); the page lists both alive with their files and the files of both out dirs; a worker
 * killed -9 shows as gone once its heartbeat row lapses (a short heartbeat, the short locks of
 * LOCK_FLAGS for the other worker to take its file back), and its file then succeeds in the other's
 * hands. Screenshots go to a folder under the OS temp dir.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { useWorkerChildren } from '../cli/worker-child.ts';
import { heldGenerations, hold, unhold } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { newWatchedPage, useDashboardBed } from './dashboard-helpers.ts';

const pg = usePostgres();
const promptFolder = usePromptFolders();
const bed = useDashboardBed('store');
const startWorker = useWorkerChildren(() => bed.emu);
/** One file at a time each, and a heartbeat every half second: gone after three missed. */
const WORKER = ['--files-at-once', '1', '--heartbeat', '0.5'];

it('shows every out dir and every worker of a store; a worker killed -9 shows as gone', async () => {
  const url = await pg.freshDatabase();
  const one = promptFolder({ 'a.txt': 'a red fox' });
  const two = promptFolder({ 'b.txt': 'a blue fox' });
  for (const f of [one, two]) writeFileSync(join(f.input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const held = await hold(bed.emu, { prompt: 'fox' });
  try {
    const w1 = startWorker(url, WORKER);
    const w2 = startWorker(url, WORKER);
    await w1.until(/worker ready/);
    await w2.until(/worker ready/);
    for (const f of [one, two]) {
      const r = await runCli(['run', f.input, '--out', f.out, '--store', url, '--detach'], cliEnv(bed.emu));
      expect(r.code, r.stderr).toBe(0);
    }
    // Each worker holds one file at the service.
    await heldGenerations(bed.emu, 2);

    const dash = spawnGenpipe(['dashboard', '--store', url, '--listen', '0'], cliEnv(bed.emu));
    const at = /dashboard of every out dir of the store on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
    await dash.until(() => at.test(dash.stderr()), 'the address');
    const pageUrl = at.exec(dash.stderr())![1]!;
    const { page, problems } = await newWatchedPage(bed, { width: 1400, height: 800 });
    await page.goto(pageUrl);

    const pids = [w1.proc.pid!, w2.proc.pid!];
    for (const pid of pids) {
      // Alive, one file in hand, named with its out dir.
      await page
        .locator(`#workers .worker[data-pid="${pid}"][data-alive="true"]`, {
          hasText: /1 in hand \([ab]\.txt · /,
        })
        .waitFor({ timeout: 30_000 });
    }
    // Each file by its name first, its out dir after it.
    const rowA = page.locator('.row[data-input^="a.txt "]');
    const rowB = page.locator('.row[data-input^="b.txt "]');
    await rowA.waitFor();
    await rowB.waitFor();
    // Both out dirs to pick from (and every one).
    expect(await page.locator('#outdir option').count()).toBe(3);
    await page.screenshot({ path: bed.shot('1-store-two-workers.png') });
    const password = decodeURIComponent(new URL(url).password);
    const snapshot = await (await fetch(`${pageUrl}api/snapshot`)).text();
    const html = await (await fetch(pageUrl)).text();
    for (const body of [snapshot, html]) {
      expect(body).not.toContain(password);
      expect(body).not.toContain(new URL(url).host);
    }

    // One worker killed -9: its heartbeat row lapses, and the page says it is gone.
    w1.proc.kill('SIGKILL');
    await page
      .locator(`#workers .worker[data-pid="${pids[0]}"][data-alive="false"]`)
      .waitFor({ timeout: 30_000 });
    await page.locator('#workers', { hasText: /^workers: 1 alive, 1 gone/ }).waitFor();
    await page.screenshot({ path: bed.shot('2-store-worker-gone.png') });

    // The other takes its file back once the lock lapsed; both files end succeeded.
    await unhold(bed.emu, held);
    await page.locator('.row[data-status="succeeded"]', { hasText: 'a.txt' }).waitFor({ timeout: 60_000 });
    await page.locator('.row[data-status="succeeded"]', { hasText: 'b.txt' }).waitFor({ timeout: 60_000 });
    // The gone worker holds nothing once its file was taken over and finished.
    await page
      .locator(`#workers .worker[data-pid="${pids[0]}"][data-alive="false"]`, { hasText: /\b0 in hand/ })
      .waitFor({ timeout: 30_000 });
    await page.screenshot({ path: bed.shot('3-store-all-done.png') });
    // One out dir picked: the counts are its own.
    await page.locator('button.chip[data-filter="all"]', { hasText: 'all 2' }).waitFor();
    await page.locator('#outdir').selectOption({ index: 1 });
    await page.locator('button.chip[data-filter="all"]', { hasText: 'all 1' }).waitFor();
    await page.locator('button.chip[data-filter="succeeded"]', { hasText: 'succeeded 1' }).waitFor();
    expect(await page.locator('#progress').textContent()).toMatch(/^1 of 1 done/);
    await page.locator('#outdir').selectOption({ index: 0 });
    await page.locator('button.chip[data-filter="all"]', { hasText: 'all 2' }).waitFor();

    dash.proc.kill('SIGINT');
    expect((await dash.exited).code, dash.stderr()).toBe(0);
    w2.proc.kill('SIGINT');
    expect(await w2.exited).toBe(130);
    expect(problems).toEqual([]);
    await page.close();
  } finally {
    await unhold(bed.emu).catch(() => undefined);
  }
}, 240_000);

it('tells a run --no-work from a worker, on the page and in genpipe status', async () => {
  const url = await pg.freshDatabase();
  const { input, out } = promptFolder({ 'a.txt': 'a red fox' });
  writeFileSync(join(input, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const held = await hold(bed.emu, { prompt: 'fox' });
  try {
    const worker = startWorker(url, WORKER);
    await worker.until(/worker ready/);
    const run = spawnGenpipe(['run', input, '--out', out, '--store', url, '--no-work'], cliEnv(bed.emu));
    await heldGenerations(bed.emu, 1);

    const status = await runCli(['status', out, '--store', url], cliEnv(bed.emu), 60_000);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(
      /workers on this store: 1 alive; and 1 run --no-work, working on no file\n/,
    );
    expect(status.stdout).toMatch(new RegExp(`  worker \\S+ pid ${worker.proc.pid}, 1 in hand`));
    expect(status.stdout).toMatch(new RegExp(`  run --no-work \\S+ pid ${run.proc.pid}, 0 in hand`));
    const json = await runCli(['status', out, '--store', url, '--json'], cliEnv(bed.emu), 60_000);
    const roles = (JSON.parse(json.stdout) as { workers: { pid: number; role: string }[] }).workers;
    expect(roles.map((w) => [w.pid, w.role]).sort()).toEqual(
      [
        [worker.proc.pid, 'worker'],
        [run.proc.pid, 'run --no-work'],
      ].sort(),
    );

    const dash = spawnGenpipe(['dashboard', '--store', url, '--listen', '0'], cliEnv(bed.emu));
    const at = /dashboard of every out dir of the store on (http:\/\/127\.0\.0\.1:\d+\/); read-only/;
    await dash.until(() => at.test(dash.stderr()), 'the address');
    const { page, problems } = await newWatchedPage(bed, { width: 1400, height: 800 });
    await page.goto(at.exec(dash.stderr())![1]!);
    await page
      .locator('#workers', { hasText: /^workers: 1 alive; and 1 run --no-work, working on no file/ })
      .waitFor();
    await page
      .locator(`#workers .worker[data-pid="${run.proc.pid}"]`, { hasText: /^; run --no-work / })
      .waitFor();
    await page
      .locator(`#workers .worker[data-pid="${worker.proc.pid}"]`, { hasText: /^; worker / })
      .waitFor();
    await page.screenshot({ path: bed.shot('4-store-run-no-work.png') });
    await unhold(bed.emu, held);
    expect((await run.exited).code, run.stderr()).toBe(0);
    dash.proc.kill('SIGINT');
    await dash.exited;
    worker.proc.kill('SIGINT');
    await worker.exited;
    expect(problems).toEqual([]);
    await page.close();
  } finally {
    await unhold(bed.emu).catch(() => undefined);
  }
}, 180_000);
