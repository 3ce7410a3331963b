/** `genpipe --help` and `genpipe serve` as a user runs them: real child processes. */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../helpers/emulator.ts';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'genpipe.js');
const children: ChildProcess[] = [];

afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

function startServe(args: string[]): Promise<{ url: string; out: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d) => {
      out += String(d);
      const m = /listening on (http:\/\/\S+)/.exec(out);
      // The banner's last line: the emulator listens, and handles SIGTERM, from before its first.
      if (m?.[1] && /(API key \S+|keys?(\(s\))? from .*)\n/.test(out)) resolve({ url: m[1], out, child });
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
}

describe('genpipe CLI', () => {
  it('prints help and exits 0', () => {
    const r = spawnSync(process.execPath, [BIN, '--help'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('serve');
  });

  it('exits 2 on an unknown option', () => {
    const r = spawnSync(process.execPath, [BIN, 'serve', '--no-such-flag'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--no-such-flag');
  });

  it('serve without --config runs one client and prints its default key', async () => {
    const { url, out } = await startServe([]);
    const key = /API key (svc-api-\S+)/.exec(out)?.[1];
    expect(key).toBeTruthy();
    const res = await call({ url }, 'GET', '/v1/files', { key: key! });
    expect(res.status).toBe(200);
    expect(res.headers['x-api-version']).toBe('2026-04-01');
    // The base URL each public SDK takes (lumaai adds nothing to it, @ai-sdk/luma adds /dream-machine/v1).
    expect(out).toContain(`lumaai SDK: baseURL ${url}/dream-machine/v1    @ai-sdk/luma: baseURL ${url}`);
  });

  it('serve --config rejects a bad config naming the key, exit 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'genpipe-cli-'));
    const cfg = join(dir, 'bad.json');
    writeFileSync(cfg, JSON.stringify({ clients: [{ id: 'x', rpm: -1 }] }));
    const r = spawnSync(process.execPath, [BIN, 'serve', '--port', '0', '--config', cfg], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('clients[0].rpm');
  });

  it('serve --config uses the configured keys and stops on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genpipe-cli-'));
    const cfg = join(dir, 'ok.json');
    writeFileSync(
      cfg,
      JSON.stringify({ clients: [{ id: 'c1' }], keys: [{ key: 'svc-api-cli-test', client: 'c1' }] }),
    );
    const { url, out, child } = await startServe(['--config', cfg]);
    expect(out).not.toContain('svc-api-cli-test');
    expect(out).toContain(`  1 client, 1 key from ${cfg}\n`);
    expect((await call({ url }, 'GET', '/v1/files', { key: 'svc-api-cli-test' })).status).toBe(200);
    expect((await call({ url }, 'GET', '/v1/files', { key: 'svc-api-emulator-default-key' })).status).toBe(
      401,
    );
    let said = '';
    child.stdout?.on('data', (d) => {
      said += String(d);
    });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // what it does while it stops: its data folder (a temporary one of its own) can take a while
    expect(said).toMatch(/genpipe emulator: SIGTERM: stopping/);
    expect(said).toMatch(/genpipe emulator: removing its data folder \S*genpipe-emulator-/);
    expect(said).toMatch(/genpipe emulator: stopped\n$/);
  });
});
