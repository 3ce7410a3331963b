/**
 * `genpipe run --metrics-port 0` as a real child against the emulator: it prints where its metrics
 * are, once; /metrics, scraped while jobs are held at the service, counts what the emulator saw
 * (creates as its admin view lists them, 429s of its job ceiling by kind, the bytes of the files
 * uploaded, the outputs downloaded so far); /healthz is 200 while the batch runs and 503 once a
 * signal stops it; the server is gone when the run exits; the API key is nowhere in the metrics.
 */
import { stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import {
  type AdminRow,
  adminRows,
  call,
  heldGenerations,
  hold,
  release,
  unhold,
  until,
} from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE, recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import { allFiles, type ChildEvent, envFor, type GenpipeChild, spawnGenpipe } from './resume-helpers.ts';
import { runGenpipe } from './run-fixtures.ts';
import { noisePng } from './watch-helpers.ts';

const CLIENT = 'metrics';
const KEY = 'svc-api-metrics-test-secret';

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'metrics',
    clients: [CLIENT],
    keyOf: () => KEY,
    // A job ceiling of 1: a second create while a job runs is answered 429 "Too many concurrent jobs".
    config: {
      clients: [{ id: CLIENT, state: 'active', rpm: 1000, concurrency: 1, balance: 1_000_000 }],
      tiny_outputs: true,
    },
  },
  (bed) => ({ emu, root } = bed),
);

/** The address the child printed (`genpipe: metrics on <base>/metrics`), once it did. */
async function metricsBase(child: GenpipeChild): Promise<string> {
  const line = /genpipe: metrics on (http:\/\/\S+)\/metrics\n/;
  await child.until(() => line.test(child.stderr()), 'the metrics address on stderr');
  expect(child.stderr().match(/metrics on /g)).toHaveLength(1);
  return line.exec(child.stderr())![1]!;
}

interface Scrape {
  status: number;
  contentType: string;
  text: string;
  /** The value of `name{labels}` as written (labels in the text's order), or undefined. */
  value(series: string): number | undefined;
}

async function scrape(base: string, path = '/metrics'): Promise<Scrape> {
  const res = await request(`${base}${path}`);
  const text = await res.body.text();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    values.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return {
    status: res.statusCode,
    contentType: String(res.headers['content-type']),
    text,
    value: (series) => values.get(series),
  };
}

/** The emulator's count of 429s answered for its job ceiling. */
async function ceilingRefusals(): Promise<number> {
  return (await call(emu, 'GET', '/_emulator/stats', { key: null })).body.rate_limited.concurrency as number;
}

/** The first generation held at the service other than `ids`, once there is one. */
function nextHeld(ids: readonly string[]): Promise<AdminRow> {
  return until(async () =>
    (await adminRows(emu, CLIENT)).find((r) => r.held !== null && !ids.includes(r.id)),
  );
}

/** Inputs whose last event so far is `state`. */
function inState(events: readonly ChildEvent[], state: string): string[] {
  const last = new Map<string, string>();
  for (const e of events) if (e.type === 'item_state' && e.input && e.state) last.set(e.input, e.state);
  return [...last].filter(([, s]) => s === state).map(([input]) => input);
}

/** Bytes of the output files under `out`. */
async function outputBytes(out: string): Promise<number> {
  let total = 0;
  for (const f of await allFiles(out))
    if (/(^|\/)output-\d+\.\w+$/.test(f)) total += (await stat(join(out, f))).size;
  return total;
}

describe('genpipe run --metrics-port', () => {
  it('counts creates, 429s by kind and bytes as the emulator saw them, mid-run, and closes at the end', async () => {
    const pngs = {
      'a.png': await noisePng(40, 40),
      'b.png': await noisePng(48, 48),
      'c.png': await noisePng(56, 56),
    };
    const uploadedBytes = Object.values(pngs).reduce((n, b) => n + b.length, 0);
    const { input, out } = await recipeFolder(root, 'counts', EDIT_OR_PROMPT_RECIPE, pngs);
    const held = await hold(emu, { client: CLIENT });
    let child: GenpipeChild | null = null;
    try {
      child = spawnGenpipe(
        runArgs(input, out, ['--concurrency', '3', '--metrics-port', '0']),
        envFor(emu.url, KEY),
      );
      const base = await metricsBase(child);

      // One job runs (held); the others were uploaded, and a create of theirs met the job ceiling.
      const [first] = await heldGenerations(emu, 1, CLIENT);
      await child.until((ev) => inState(ev, 'uploaded').length === 2, 'two files uploaded and waiting');
      await until(async () => (await ceilingRefusals()) > 0);
      // The client counts a 429 once it has its answer: scrape until both sides agree, unchanged.
      const m = await until(async () => {
        const before = await ceilingRefusals();
        const s = await scrape(base);
        const after = await ceilingRefusals();
        return before === after && s.value('genpipe_rate_limited_total{kind="concurrency"}') === after
          ? s
          : null;
      });
      expect(m.status).toBe(200);
      expect(m.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(m.value('genpipe_rate_limited_total{kind="rate"}')).toBe(0);
      expect(m.value('genpipe_rate_limited_total{kind="other"}')).toBe(0);
      expect(m.value('genpipe_upload_bytes_total')).toBe(uploadedBytes);
      expect(m.value('genpipe_creates_total')).toBe((await adminRows(emu, CLIENT)).length);
      expect(m.value('genpipe_creates_total')).toBe(1);
      expect(m.value('genpipe_jobs_in_flight')).toBe(1);
      expect(m.value('genpipe_jobs_ceiling')).toBe(1);
      expect(m.value('genpipe_items{state="submitted"}')).toBe(1);
      expect(m.value('genpipe_items{state="uploaded"}')).toBe(2);
      expect(m.value('genpipe_download_bytes_total')).toBe(0);
      expect(m.value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
      expect(m.text).not.toContain(KEY);

      const health = await scrape(base, '/healthz');
      expect(health.status).toBe(200);
      expect(health.contentType).toMatch(/^application\/json/);
      expect(JSON.parse(health.text)).toMatchObject({ status: 'ok', pid: child.proc.pid, batch: 'running' });
      expect(JSON.parse(health.text).uptime_seconds).toBeGreaterThan(0);
      expect((await scrape(base, '/metrics/other')).status).toBe(404);

      // Two jobs end, one after the other (the ceiling lets the next create through); the third is held.
      await release(emu, first!.id);
      const second = await nextHeld([first!.id]);
      await release(emu, second.id);
      await nextHeld([first!.id, second.id]);
      await child.until((ev) => inState(ev, 'reported').length === 2, 'two files reported');
      const end = await scrape(base);
      expect(end.value('genpipe_creates_total')).toBe((await adminRows(emu, CLIENT)).length);
      expect(end.value('genpipe_creates_total')).toBe(3);
      expect(end.value('genpipe_download_bytes_total')).toBe(await outputBytes(out));
      expect(end.value('genpipe_download_bytes_total')).toBeGreaterThan(0);
      expect(end.value('genpipe_items_finished_total{outcome="succeeded"}')).toBe(2);
      expect(end.value('genpipe_items{state="reported"}')).toBe(2);
      const lags = end.value('genpipe_poll_lag_seconds_count')!;
      expect(lags).toBeGreaterThan(0);
      expect(lags).toBeLessThanOrEqual(2);

      await unhold(emu, held);
      const exit = await child.exited;
      expect(exit.code, child.stderr()).toBe(0);
      await expect(request(`${base}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await unhold(emu).catch(() => undefined);
      if (child && child.proc.exitCode === null) child.proc.kill('SIGKILL');
    }
  }, 90_000);

  it('answers /healthz 503 once a signal stops the batch', async () => {
    const { input, out } = await recipeFolder(root, 'stopping', EDIT_OR_PROMPT_RECIPE, {
      'a.png': await noisePng(40, 40),
    });
    const held = await hold(emu, { client: CLIENT });
    try {
      const child = spawnGenpipe(runArgs(input, out, ['--metrics-port', '0']), envFor(emu.url, KEY));
      const base = await metricsBase(child);
      await heldGenerations(emu, 1, CLIENT);
      expect((await scrape(base, '/healthz')).status).toBe(200);
      child.proc.kill('SIGINT');
      await child.until((ev) => ev.some((e) => e.type === 'batch_stopping'), 'the batch stopping');
      // The held job keeps the run in its grace period: the server still answers, unhealthy.
      const health = await scrape(base, '/healthz');
      expect(health.status).toBe(503);
      expect(JSON.parse(health.text)).toMatchObject({ status: 'stopping', batch: 'stopping' });
      expect(JSON.parse(health.text).reason).toMatch(/SIGINT/);
      await unhold(emu, held);
      await child.exited;
      await expect(request(`${base}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await unhold(emu).catch(() => undefined);
    }
  }, 60_000);

  it('serves a watch the same way, until a signal ends it', async () => {
    const png = await noisePng(44, 44);
    const { input, out } = await recipeFolder(root, 'watch', EDIT_OR_PROMPT_RECIPE, { 'w.png': png });
    const args = ['watch', input, '--out', out, '--json', '--quiet-ms', '300', '--poll-interval', '1'];
    const child = spawnGenpipe([...args, '--metrics-port', '0'], envFor(emu.url, KEY));
    const base = await metricsBase(child);
    await child.until((ev) => inState(ev, 'reported').length === 1, 'the file reported');
    const m = await scrape(base);
    expect(m.value('genpipe_items_finished_total{outcome="succeeded"}')).toBe(1);
    expect(m.value('genpipe_upload_bytes_total')).toBe(png.length);
    expect(m.value('genpipe_download_bytes_total')).toBe(await outputBytes(out));
    expect(JSON.parse((await scrape(base, '/healthz')).text)).toMatchObject({
      status: 'ok',
      batch: 'running',
    });
    child.proc.kill('SIGINT');
    expect((await child.exited).code).toBe(0); // a watch stopped by a signal exits 0
    await expect(request(`${base}/metrics`)).rejects.toThrow(/ECONNREFUSED/);
  }, 60_000);

  it('refuses a port it cannot listen on, and --metrics-host alone, before anything is sent', async () => {
    const { input, out } = await recipeFolder(root, 'refused', EDIT_OR_PROMPT_RECIPE, {
      'a.png': await noisePng(40, 40),
    });
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as { port: number }).port;
    const before = (await adminRows(emu, CLIENT)).length;
    try {
      const inUse = await runGenpipe(
        ['run', input, '--out', out, '--metrics-port', String(port)],
        envFor(emu.url, KEY),
      );
      expect(inUse.code).toBe(2);
      expect(inUse.stderr).toContain(`--metrics-port cannot listen on 127.0.0.1:${port}: the port is in use`);
    } finally {
      taken.close();
    }
    const hostAlone = await runGenpipe(
      ['run', input, '--out', out, '--metrics-host', '0.0.0.0'],
      envFor(emu.url, KEY),
    );
    expect(hostAlone.code).toBe(2);
    expect(hostAlone.stderr).toContain('--metrics-host needs --metrics-port');
    const badPort = await runGenpipe(
      ['run', input, '--out', out, '--metrics-port', '70000'],
      envFor(emu.url, KEY),
    );
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain('expected a port number from 0 to 65535');
    expect((await adminRows(emu, CLIENT)).length).toBe(before);
  }, 60_000);
});
