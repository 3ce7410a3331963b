/**
 * What the dashboard's browser tests share: an emulator and a headless Chromium (Debian's, through
 * playwright-core) for the file's tests, a folder for their screenshots, a genpipe child whose
 * dashboard address and token are read from its stderr, and a page that records its console errors.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import {
  type DashboardModel,
  type DashboardServer,
  startDashboardServer,
} from '../../src/pipeline/dashboard/index.ts';
import { cliEnv } from '../cli/run-cli.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';

const CHROMIUM = process.env.GENPIPE_CHROMIUM ?? '/usr/bin/chromium';

/** The emulator, the browser and the screenshots' folder of a test file. */
export interface DashboardTestBed {
  readonly emu: RunningEmulator;
  readonly browser: Browser;
  /** A path in the screenshots' folder. */
  shot(name: string): string;
}

/**
 * Starts an emulator (with `overrides`) and the browser before the file's tests, and stops them and
 * every genpipe child after; screenshots go to a new folder under the OS temp dir, named on stdout.
 */
export function useDashboardBed(name: string, overrides: Record<string, unknown> = {}): DashboardTestBed {
  let emu: RunningEmulator | undefined;
  let browser: Browser | undefined;
  const shots = mkdtempSync(join(tmpdir(), `genpipe-dashboard-${name}-shots-`));
  beforeAll(async () => {
    emu = await startTestEmulator(overrides);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    console.log(`dashboard screenshots: ${shots}`);
  });
  afterAll(async () => {
    killChildren();
    await browser?.close();
    await emu?.close();
  });
  return {
    get emu() {
      return emu!;
    },
    get browser() {
      return browser!;
    },
    shot: (file) => join(shots, file),
  };
}

/** The line a batch command prints on stderr: where its dashboard is, and its token. */
export const DASHBOARD_SAID = /dashboard on (http:\/\/\S+) \(actions need the token (\S+?)[ )]/;

/** A genpipe child serving a dashboard: the child, the page's address and the token. */
export async function spawnDashboard(
  bed: DashboardTestBed,
  args: string[],
): Promise<{ child: ReturnType<typeof spawnGenpipe>; url: string; token: string }> {
  const child = spawnGenpipe(args, cliEnv(bed.emu));
  await child.until(() => DASHBOARD_SAID.test(child.stderr()), 'the dashboard address');
  const [, url, token] = DASHBOARD_SAID.exec(child.stderr())!;
  return { child, url: url!, token: token! };
}

/** A new page of the browser whose console errors and page errors are collected in `problems`. */
export async function newWatchedPage(
  bed: DashboardTestBed,
  size: { width: number; height: number } = { width: 1200, height: 700 },
): Promise<{ page: Page; problems: string[] }> {
  const page = await bed.browser.newPage({ viewport: size });
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  return { page, problems };
}

/** The row of `input` once it shows `status`. */
export function rowOf(page: Page, input: string, status: string) {
  return page.locator(`.row[data-input="${input}"][data-status="${status}"]`);
}

/** Clicks the page's Stop and answers its confirm with `accept`; the question asked. */
export async function clickStop(page: Page, accept = true): Promise<string> {
  const asked = new Promise<string>((said) => {
    page.once('dialog', (d) => {
      said(d.message());
      void (accept ? d.accept() : d.dismiss());
    });
  });
  await page.locator('button[data-action="stop"]').click();
  return asked;
}

/** Opens the dashboard at `url` with its token in the address's fragment (which no server sees). */
export async function openDashboard(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}#token=${encodeURIComponent(token)}`);
}

/** A genpipe child serving a dashboard (`args`), and a page of it opened with the token. */
export async function servedPage(
  bed: DashboardTestBed,
  args: string[],
  size?: { width: number; height: number },
): Promise<Awaited<ReturnType<typeof spawnDashboard>> & Awaited<ReturnType<typeof newWatchedPage>>> {
  const served = await spawnDashboard(bed, args);
  const watched = await newWatchedPage(bed, size);
  await openDashboard(watched.page, served.url, served.token);
  return { ...served, ...watched };
}

/** The end of a served page's test: its child exits 0, the page logged no error, and it closes. */
export async function endsCleanly(served: Awaited<ReturnType<typeof servedPage>>): Promise<void> {
  expect((await served.child.exited).code, served.child.stderr()).toBe(0);
  expect(served.problems).toEqual([]);
  await served.page.close();
}

/** The emulator's faults (`PUT /_emulator/faults`); `{}` clears them. */
export function setFaults(bed: DashboardTestBed, json: unknown) {
  return call(bed.emu, 'PUT', '/_emulator/faults', { key: null, json });
}

/** `model` served read-only on a free loopback port, as the HTTP-level tests read it. */
export function serveModel(model: DashboardModel): Promise<DashboardServer> {
  return startDashboardServer({
    host: '127.0.0.1',
    port: 0,
    model,
    inputDir: null,
    outDir: '',
    actions: {},
    title: 'test',
  });
}
