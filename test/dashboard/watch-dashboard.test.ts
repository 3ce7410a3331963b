/**
 * `genpipe watch --dashboard 0` in headless Chromium (Debian's chromium through playwright-core): a
 * file dropped into the inbox appears and reaches succeeded without a reload; a 9000 px image shows
 * its refusal reason; a retryable failure (the emulator's fault, then faults off) retried from the page
 * succeeds with exactly one more generation at the emulator; a failure that is the file's own (a refused
 * prompt) retried from the page is sent once more, as --retry-failed would; the stop button ends the watch; the page
 * logs no console error, and a screenshot of each state is written to a folder under the OS temp dir.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { imageTooManyPixelsDetail } from '../../src/spec/index.ts';
import { usePromptFolders } from '../cli/prompt-folder.ts';
import { writePng } from '../client/client-helpers.ts';
import { adminRows, call, KEY, until } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE } from '../pipeline/child-run.ts';
import { noisePng } from '../pipeline/watch-helpers.ts';
import {
  clickStop,
  newWatchedPage,
  openDashboard,
  rowOf as row,
  spawnDashboard,
  useDashboardBed,
} from './dashboard-helpers.ts';

const promptFolder = usePromptFolders();
const bed = useDashboardBed('watch', { blocked_words: ['forbidden'] });
const shots = { path: bed.shot };
const WATCH = ['--quiet-ms', '200', '--rescan-ms', '300'];

/**
 * A watch of a new inbox holding `files` (with the recipe) whose dashboard listens on `listen`, and a
 * page of it; opened with the token unless `open` is false.
 */
async function watchWithDashboard(
  files: Record<string, string>,
  opts: { listen?: string; extra?: string[]; open?: boolean } = {},
) {
  const { input: inbox, out } = promptFolder(files);
  writeFileSync(join(inbox, 'genpipe.yaml'), EDIT_OR_PROMPT_RECIPE);
  const served = await spawnDashboard(bed, [
    'watch',
    inbox,
    '--out',
    out,
    ...WATCH,
    ...(opts.extra ?? []),
    '--dashboard',
    opts.listen ?? '0',
  ]);
  const { page, problems } = await newWatchedPage(bed, { width: 1400, height: 800 });
  if (opts.open !== false) await openDashboard(page, served.url, served.token);
  return { inbox, out, ...served, page, problems };
}

const faults = (json: unknown) => call(bed.emu, 'PUT', '/_emulator/faults', { key: null, json });

it('follows a watched inbox live, shows a refusal, retries a failure once, and stops', async () => {
  const { inbox, child, url, page, problems } = await watchWithDashboard(
    { 'a.txt': 'a red fox' },
    { extra: ['--retries', '0'] },
  );
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  await row(page, 'a.txt', 'succeeded').waitFor({ timeout: 30_000 });
  await page.locator('#quota', { hasText: /^quota: \d+.* requests in .*; \d+ jobs .*429s: \d+/ }).waitFor();
  await page.screenshot({ path: shots.path('1-first-file-succeeded.png') });
  // Set once: a reload would lose it.
  await page.evaluate(() => Object.assign(window, { notReloaded: true }));

  writeFileSync(join(inbox, 'photo.png'), await noisePng(64, 64));
  await row(page, 'photo.png', 'succeeded').waitFor({ timeout: 30_000 });
  expect(await page.locator('.row[data-input="photo.png"] img').count()).toBe(1);
  // Its detail: the request sent, its outputs with previews.
  await row(page, 'photo.png', 'succeeded').click();
  await page.locator('#request', { hasText: 'watercolor' }).waitFor();
  const preview = page.locator('#outputs img').first();
  await preview.waitFor();
  await page.waitForFunction(() => {
    const img = document.querySelector<HTMLImageElement>('#outputs img');
    return img?.complete === true && img.naturalWidth > 0;
  });
  await page.screenshot({ path: shots.path('2-dropped-file-succeeded.png') });

  await writePng(join(inbox, 'big.png'), 9000, 30);
  const big = row(page, 'big.png', 'failed');
  await big.waitFor({ timeout: 30_000 });
  const refusal = imageTooManyPixelsDetail('source', 9000, 30);
  expect(await big.locator('.reason').textContent()).toBe(refusal);
  await big.click();
  await page.locator('#detail td.reason', { hasText: refusal }).first().waitFor();
  expect(await page.locator('#groups').textContent()).toContain(`1 × ${refusal}`);
  await page.screenshot({ path: shots.path('3-refused-9000px.png') });

  // A retryable failure at the service, then the faults off: the page's retry sends it once more.
  await faults({ failure_codes: { generation_failed: 1 } });
  let before: number;
  try {
    writeFileSync(join(inbox, 'retry.png'), await noisePng(48, 48));
    await row(page, 'retry.png', 'failed').waitFor({ timeout: 30_000 });
    before = (await adminRows(bed.emu)).length;
  } finally {
    await faults({});
  }
  await row(page, 'retry.png', 'failed').click();
  await page.locator('#retry-one').click();
  await page.locator('#said', { hasText: 'retry.png taken again' }).waitFor();
  await row(page, 'retry.png', 'succeeded').waitFor({ timeout: 30_000 });
  await page.screenshot({ path: shots.path('4-retried-succeeded.png') });
  expect((await adminRows(bed.emu)).length).toBe(before + 1);
  // The refusal is the file's own: it stays failed, nothing sent for it.
  expect(await row(page, 'big.png', 'failed').count()).toBe(1);
  expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);

  // Stop asks first: declined, nothing is stopped.
  const saidBefore = await page.locator('#said').textContent();
  expect(await clickStop(page, false)).toMatch(/^Stop the batch\?/);
  expect(await page.locator('#said').textContent()).toBe(saidBefore);
  await clickStop(page);
  await page.locator('#said', { hasText: 'stopping' }).waitFor();
  // Nothing applies to a batch that is ending: every action disabled, with why.
  await page.locator('button[data-action="stop"][disabled][title]').waitFor();
  expect(await page.locator('button[data-action="retry-all"]').isDisabled()).toBe(true);
  await page.screenshot({ path: shots.path('5-stopping.png') });
  const exited = await child.exited;
  expect(exited.code, child.stderr()).toBe(0);
  expect(child.stderr()).toContain('stopped from the dashboard');
  await page.locator('#said', { hasText: 'the batch has ended' }).waitFor();
  expect(problems).toEqual([]);
  await page.close();
}, 120_000);

it('escapes hostile file names, keeps secrets off the page, and asks for the token off loopback', async () => {
  const hostile = '<img src=x onerror=alert(1)>.txt';
  const { inbox, child, url, token, page, problems } = await watchWithDashboard(
    { [hostile]: 'a red fox', 'b.txt': 'a blue fox' },
    { listen: '0.0.0.0:0', open: false },
  );
  // Every interface: the address printed is one a browser can open, and says so.
  expect(url).not.toContain('0.0.0.0');
  expect(child.stderr()).toContain('it listens on every interface (0.0.0.0)');
  const base = `http://127.0.0.1:${new URL(url).port}`;

  // Off loopback every path needs the token, the page too; the actions need it everywhere.
  const asked = await fetch(`${base}/`);
  expect(asked.status).toBe(401);
  const askedHtml = await asked.text();
  expect(askedHtml).toContain('The dashboard token');
  expect(askedHtml).not.toContain(inbox);
  expect((await fetch(`${base}/api/snapshot`)).status).toBe(401);
  expect((await fetch(`${base}/api/actions/stop`, { method: 'POST' })).status).toBe(401);
  const wrong = await fetch(`${base}/api/actions/stop`, {
    method: 'POST',
    headers: { authorization: 'Bearer nope' },
  });
  expect(wrong.status).toBe(401);
  // Never from a URL (access logs keep URLs).
  expect((await fetch(`${base}/?token=${token}`)).status).toBe(401);
  expect((await fetch(`${base}/api/snapshot?token=${token}`)).status).toBe(401);
  // Given once in a header, it becomes the session's cookie, which opens the page but never acts.
  const session = await fetch(`${base}/api/session`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
  });
  expect(session.status).toBe(204);
  expect(session.headers.get('set-cookie')).toMatch(
    /^genpipe_dashboard=[^;]+; HttpOnly; SameSite=Strict; Path=\//,
  );
  const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
  const pageRes = await fetch(`${base}/`, { headers: { cookie } });
  expect(pageRes.status).toBe(200);
  const csp = pageRes.headers.get('content-security-policy') ?? '';
  expect(csp).toMatch(/script-src 'nonce-[^']+'/);
  expect(csp).not.toContain('unsafe-inline');
  expect((await fetch(`${base}/api/actions/stop`, { method: 'POST', headers: { cookie } })).status).toBe(401);

  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  const requested: string[] = [];
  page.on('request', (r) => requested.push(r.url()));
  // The page asks for the token, then shows the batch.
  await page.goto(`${base}/`);
  // A #token= link followed in the tab already asking is taken too (here a wrong one).
  await page.evaluate(() => {
    location.hash = 'token=nope';
  });
  await page.locator('#said', { hasText: 'that is not the token' }).waitFor();
  await page.locator('#token').fill(token);
  await page.locator('#form button').click();
  await page.locator('.row[data-input="b.txt"][data-status="succeeded"]').waitFor({ timeout: 30_000 });
  await page.locator('#lock', { hasText: 'actions unlocked' }).waitFor();
  const name = page.locator('.row .name', { hasText: 'onerror' });
  await name.waitFor();
  expect(await name.textContent()).toBe(hostile);
  expect(await page.locator('#spacer img[src="x"]').count()).toBe(0);
  // No URL the page asked for carried the token; nor does the address.
  expect(requested.length).toBeGreaterThan(3);
  expect(requested.filter((u) => u.includes(token))).toEqual([]);
  expect(page.url()).not.toContain(token);
  await page.screenshot({ path: shots.path('6-hostile-name.png') });

  const snapshot = await (
    await fetch(`${base}/api/snapshot`, { headers: { authorization: `Bearer ${token}` } })
  ).text();
  const html = await (await fetch(`${base}/`, { headers: { cookie } })).text();
  for (const body of [snapshot, html]) {
    expect(body).not.toContain(KEY);
    expect(body).not.toContain(token);
  }
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  // The two 401s: the page that asked for the token, and the wrong token given; nothing else.
  expect(problems).toEqual([
    'Failed to load resource: the server responded with a status of 401 (Unauthorized)',
    'Failed to load resource: the server responded with a status of 401 (Unauthorized)',
  ]);
  await page.close();
}, 120_000);

it("retries a failure that is the file's own as --retry-failed would: sent once more, by itself and with every failed file", async () => {
  const { child, url, token, page } = await watchWithDashboard({ 'no.txt': 'a forbidden fox' });
  const failed = row(page, 'no.txt', 'failed');
  await failed.waitFor({ timeout: 30_000 });
  const reason = await failed.locator('.reason').textContent();
  const sent = async () =>
    (await adminRows(bed.emu)).filter((r) => r.failure_code !== null && r.type === 'image').length;
  const before = await sent();

  await failed.click();
  await page.locator('#retry-one').click();
  // Sent once more (refused again, the prompt being what it is), and no more.
  await until(async () => (await sent()) === before + 1);
  await page.locator('#history td.reason', { hasText: 'retried' }).first().waitFor({ timeout: 30_000 });
  await row(page, 'no.txt', 'failed').waitFor({ timeout: 30_000 });
  expect(await row(page, 'no.txt', 'failed').locator('.reason').textContent()).toBe(reason);
  await page.screenshot({ path: shots.path('7-retried-as-retry-failed.png') });

  // Retry every failed file: the one failed file once more, through the same path.
  const all = await fetch(`${url}api/actions/retry-all`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '{}',
  });
  expect(await all.json()).toMatchObject({ message: 'taken again: 1 failed file' });
  await until(async () => (await sent()) === before + 2);
  await row(page, 'no.txt', 'failed').waitFor({ timeout: 30_000 });
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  expect(await sent()).toBe(before + 2);
  await page.close();
}, 120_000);

it('pauses the intake (files settle and wait, none is started) and resumes it', async () => {
  const { inbox, child, page } = await watchWithDashboard({ 'a.txt': 'a red fox' });
  await row(page, 'a.txt', 'succeeded').waitFor({ timeout: 30_000 });

  // Resume does not apply to a running intake.
  const resume = page.locator('button[data-action="resume"]');
  expect(await resume.isDisabled()).toBe(true);
  expect(await resume.getAttribute('title')).toBe('the intake is not paused');
  await page.locator('button[data-action="pause"]').click();
  await page.locator('#batch', { hasText: 'intake paused' }).waitFor();
  await page.locator('button[data-action="pause"][disabled][title="the intake is paused already"]').waitFor();
  expect(await resume.isDisabled()).toBe(false);
  const before = (await adminRows(bed.emu)).length;
  writeFileSync(join(inbox, 'b.txt'), 'a blue fox');
  // Settled and handed over, then held: the watch's own summary line counts it waiting.
  await child.until(
    () => child.stderr().includes('PAUSED: intake paused from the dashboard, 1 file waiting'),
    'b.txt waiting',
  );
  expect(await page.locator('.row[data-input="b.txt"]').count()).toBe(0);
  // The page says what the terminal says: the file found waits for the intake.
  await page.locator('#batch', { hasText: 'intake paused, 1 file waiting' }).waitFor();
  // Which file waits, listed.
  await page.locator('button.chip[data-filter="waiting"]', { hasText: 'waiting 1' }).click();
  await page.locator('#detail .waiting.queued', { hasText: 'b.txt' }).waitFor();
  await page.locator('#detail h3', { hasText: 'Waiting for the intake (paused): 1' }).waitFor();
  await page.locator('button.chip[data-filter="all"]').click();
  expect((await adminRows(bed.emu)).length).toBe(before);
  await page.screenshot({ path: shots.path('8-intake-paused.png') });

  await page.locator('button[data-action="resume"]').click();
  await row(page, 'b.txt', 'succeeded').waitFor({ timeout: 30_000 });
  expect((await adminRows(bed.emu)).length).toBe(before + 1);
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  await page.close();
}, 120_000);

it("measures a watch's rate over the time files were in progress: an idle inbox keeps it, and shows no time left", async () => {
  const { inbox, child, page } = await watchWithDashboard({ 'a.txt': 'a red fox' });
  await row(page, 'a.txt', 'succeeded').waitFor({ timeout: 30_000 });
  writeFileSync(join(inbox, 'b.txt'), 'a blue fox');
  await row(page, 'b.txt', 'succeeded').waitFor({ timeout: 30_000 });
  const progress = page.locator('#progress');
  await progress.filter({ hasText: /^2 of 2 done; [\d.]+ files\/min$/ }).waitFor();
  const busy = (await progress.textContent())!;
  // Time passes with nothing in progress (what is under test, not a synchronisation): the rate stays.
  const idleFrom = Date.now();
  await until(async () => Date.now() - idleFrom > 2_500, 10_000, 250);
  await page.reload();
  await progress.filter({ hasText: /files\/min/ }).waitFor();
  expect(await progress.textContent()).toBe(busy);
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  await page.close();
}, 120_000);

it('shows a name with a bidi override or a newline escaped as the CLI prints it', async () => {
  const rtl = 'rtl\u202egnp.txt';
  const nl = 'new\nline.txt';
  const { child, page } = await watchWithDashboard({ [rtl]: 'a red fox', [nl]: 'a blue fox' });
  await page.locator('.row[data-status="succeeded"]').nth(1).waitFor({ timeout: 30_000 });
  const names = await page.locator('.row .name').allTextContents();
  expect(names.sort()).toEqual(['new\\x0aline.txt', 'rtl\\u{202e}gnp.txt']);
  // As the CLI prints them.
  for (const shown of names) expect(child.stdout()).toContain(shown);
  for (const n of [0, 1]) {
    await page.locator('.row[data-status="succeeded"]').nth(n).click();
    await page.locator('#detail figcaption').first().waitFor();
    expect(names).toContain(await page.locator('#detail h2').textContent());
    // Every field and output caption of the detail escaped too (the out folder is named after the file).
    const shown = [
      ...(await page.locator('#detail td').allTextContents()),
      ...(await page.locator('#detail figcaption').allTextContents()),
    ];
    expect(shown.filter((t) => /[\u202e\n]/.test(t))).toEqual([]);
    expect(shown.some((t) => t.includes('\\u{202e}') || t.includes('\\x0a'))).toBe(true);
  }
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  await page.close();
}, 120_000);

it('lists the files still settling in the inbox, with since when', async () => {
  const { inbox, child, page } = await watchWithDashboard({}, { extra: ['--quiet-ms', '60000'] });
  await page.locator('button.chip[data-filter="waiting"]', { hasText: 'waiting 0' }).waitFor();
  writeFileSync(join(inbox, 'slow.txt'), 'a slow fox');
  await page.locator('button.chip[data-filter="waiting"]', { hasText: 'waiting 1' }).click();
  await page.locator('#detail .waiting.settling', { hasText: /^slow\.txt unchanged since \d{4}-/ }).waitFor();
  await page.screenshot({ path: shots.path('9-settling.png') });
  child.proc.kill('SIGINT');
  expect((await child.exited).code, child.stderr()).toBe(0);
  await page.close();
}, 120_000);
