/**
 * Watching distributed mode: `genpipe worker --metrics-port` serves /metrics and /healthz (scraped over
 * HTTP once the worker finished its jobs: its creates are what the emulator's admin view saw), and
 * `genpipe status --store` lists the workers alive from their heartbeat rows (a worker killed with -9
 * drops out once its heartbeat lapsed) and each API key's quota in use — never the key or the password.
 */
import { readFileSync } from 'node:fs';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, KEY, startTestEmulator, until } from '../helpers/emulator.ts';
import { schemaFaults } from '../helpers/json-schemas.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';
import { useWorkerChildren, type WorkerChild } from './worker-child.ts';

const pg = usePostgres();
const promptFolder = usePromptFolders();
let emu: RunningEmulator;
const startWorker = useWorkerChildren(() => emu);

beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => {
  await emu?.close();
});

function prompts(n: number, tag: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`p${i}.txt`] = `${tag} prompt number ${i}`;
  return files;
}

/** The address a worker printed (`genpipe: metrics on <base>/metrics`), once it did. */
async function metricsBase(w: WorkerChild): Promise<string> {
  const line = /genpipe: metrics on (http:\/\/\S+)\/metrics\n/;
  await w.until(line);
  return line.exec(w.text())![1]!;
}

/** The value of each series of a scrape (`name{labels}` as written). */
function series(text: string): Map<string, number> {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    values.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return values;
}

/** The password of a store URL. */
function passwordOf(url: string): string {
  return decodeURIComponent(new URL(url).password);
}

describe('genpipe worker --metrics-port and status --store', () => {
  it('a worker serves /metrics and /healthz: its creates are what the service saw; SIGTERM closes the server', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(3, 'worker-metrics'));
    const before = (await adminRows(emu)).length;
    const worker = startWorker(url, ['--metrics-port', '0']);
    const base = await metricsBase(worker);
    await worker.until(/worker ready/);
    expect(worker.text().match(/metrics on /g)).toHaveLength(1);
    const run = await runCli(['run', input, '--out', out, '--store', url, '--no-work'], cliEnv(emu), 120_000);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(readFileSync(`${out}/report.json`, 'utf8')).totals).toMatchObject({ succeeded: 3 });
    const created = (await adminRows(emu)).length - before;
    expect(created).toBe(3);

    const res = await request(`${base}/metrics`);
    expect(res.statusCode).toBe(200);
    const text = await res.body.text();
    const m = series(text);
    expect(m.get('genpipe_creates_total')).toBe(created);
    expect(m.get('genpipe_items_finished_total{outcome="succeeded"}')).toBe(3);
    expect(m.get('genpipe_rate_limited_total{kind="rate"}')).toBe(0);
    expect(m.get('genpipe_download_bytes_total')).toBeGreaterThan(0);
    expect(m.has('genpipe_jobs_in_flight')).toBe(true);
    expect(m.has('genpipe_quota_requests_in_window')).toBe(true);
    expect(m.get('genpipe_poll_lag_seconds_count')).toBe(3);
    expect(text).not.toContain(KEY);
    expect(text).not.toContain(passwordOf(url));

    const health = await request(`${base}/healthz`);
    expect(health.statusCode).toBe(200);
    expect(await health.body.json()).toMatchObject({ status: 'ok', batch: 'running' });

    worker.proc.kill('SIGTERM');
    expect(await worker.exited).not.toBeNull();
    await expect(request(`${base}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
  }, 180_000);

  it("a worker's /healthz is 503 naming the store while the store cannot be reached, and 200 once it can", async () => {
    const url = await pg.freshDatabase();
    const direct = new URL(url);
    const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port) });
    try {
      const viaProxy = new URL(url);
      viaProxy.port = String(proxy.port);
      const worker = startWorker(viaProxy.toString(), ['--metrics-port', '0', '--heartbeat', '0.5']);
      const base = await metricsBase(worker);
      await worker.until(/worker ready/);
      const healthz = async () => {
        const res = await request(`${base}/healthz`);
        return { code: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
      };
      expect((await healthz()).code).toBe(200);
      await proxy.cut();
      const down = await until(async () => {
        const h = await healthz();
        return h.code === 503 ? h : null;
      }, 60_000);
      expect(down.body).toMatchObject({ status: 'unavailable', batch: 'running' });
      expect(String(down.body.reason)).toMatch(/^the store: /);
      expect(JSON.stringify(down.body)).not.toContain(passwordOf(url));
      await proxy.restore();
      const up = await until(async () => {
        const h = await healthz();
        return h.code === 200 ? h : null;
      }, 60_000);
      expect(up.body).toMatchObject({ status: 'ok' });
    } finally {
      await proxy.close();
    }
  }, 180_000);

  it('status --store lists the workers alive and the quota in use; a worker killed with -9 drops out once its heartbeat lapsed', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(2, 'worker-status'));
    const beat = ['--heartbeat', '1'];
    const [a, b] = [startWorker(url, beat), startWorker(url, beat)];
    await Promise.all([a.until(/worker ready/), b.until(/worker ready/)]);
    const run = await runCli(['run', input, '--out', out, '--store', url, '--no-work'], cliEnv(emu), 120_000);
    expect(run.code, run.stderr).toBe(0);

    const status = (json: boolean) =>
      runCli(['status', out, '--store', url, ...(json ? ['--json'] : [])], cliEnv(emu), 60_000);
    const text = await status(false);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/workers on this store: 2 alive\n/);
    expect(text.stdout).toMatch(/queue of this out dir: 0 queued, 0 in workers' hands, 2 finished\n/);
    for (const w of [a, b]) {
      expect(text.stdout).toMatch(new RegExp(`pid ${w.proc.pid}, \\d+ in hand, seen \\d+ s ago`));
    }
    // The run's creates are in the key's window; the key itself is not shown, nor the password.
    expect(text.stdout).toMatch(
      /quota of key [0-9a-f]{8}… at \S+: [1-9]\d* requests? in the last 6\d(\.\d)? s/,
    );
    expect(text.stdout + text.stderr).not.toContain(KEY);
    expect(text.stdout + text.stderr).not.toContain(passwordOf(url));

    const dead = a.exited;
    a.proc.kill('SIGKILL');
    await dead;
    // Once three of its heartbeats lapsed, the killed worker is gone and the other alive.
    const json = await until(
      async () => {
        const r = await status(true);
        expect(r.code, r.stderr).toBe(0);
        const j = JSON.parse(r.stdout);
        return j.workers.filter((w: { alive: boolean }) => w.alive).length === 1 ? j : null;
      },
      60_000,
      200,
    );
    const alive = json.workers.find((w: { alive: boolean }) => w.alive);
    const gone = json.workers.find((w: { alive: boolean }) => !w.alive);
    expect(alive.pid).toBe(b.proc.pid);
    expect(gone.pid).toBe(a.proc.pid);
    expect(json.queue).toEqual({ queued: 0, active: 0, finished: 2, failed: 0 });
    expect(json.quota[0]).toMatchObject({ jobs: expect.any(Number), requests: expect.any(Number) });
    // With a store it adds its workers, queue and quota, in the shape of every JSON document genpipe prints.
    expect(schemaFaults('status', json)).toEqual([]);
    expect(JSON.stringify(json)).not.toContain(KEY);
    const after = await status(false);
    expect(after.stdout).toMatch(/workers on this store: 1 alive, 1 gone/);
    expect(after.stdout).toMatch(new RegExp(`gone: worker \\S+ pid ${a.proc.pid}, last seen`));
  }, 180_000);
});
