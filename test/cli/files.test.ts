/**
 * `genpipe files upload|list|get|delete` as a user runs them: child processes against an emulator on
 * loopback, connection from GENPIPE_* variables. Exit codes, --json results, errors with detail, status
 * and request id, the inline → presigned fallback on 413, and no key ever printed.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_DEFAULT_KEY } from '../../src/cli/print-error.ts';
import { DEFAULT_KEY, type RunningEmulator } from '../../src/emulator/index.ts';
import { call, KEY, startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

const INLINE_CAP = 4096;

let emu: RunningEmulator;
let dir: string;
let small: string;
let noisy: string;

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-files-'));
  emu = await startTestEmulator({ inline_upload_max_bytes: INLINE_CAP });
  small = join(dir, 'small.png');
  await writeFile(
    small,
    await sharp({ create: { width: 16, height: 12, channels: 3, background: '#c83c1e' } })
      .png()
      .toBuffer(),
  );
  // Noise does not compress: a PNG well over the emulator's inline cap.
  noisy = join(dir, 'noisy.png');
  await writeFile(
    noisy,
    await sharp({
      create: {
        width: 64,
        height: 64,
        channels: 3,
        background: '#000000',
        noise: { type: 'gaussian', mean: 128, sigma: 60 },
      },
    })
      .png()
      .toBuffer(),
  );
});

afterAll(async () => {
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('genpipe files upload', () => {
  it('uploads inline, waits until ready and prints the file, its sha256 and the request id', async () => {
    const r = await runCli(
      ['files', 'upload', small, '--wait', '--poll-interval', '1', '--json'],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    const out = jsonOut(r);
    expect(out).toMatchObject({ mode: 'inline', sha256: sha256(small), path: small });
    expect(out.file).toMatchObject({ state: 'ready', filename: 'small.png', mime_type: 'image/png' });
    expect(out.request_id).toMatch(/^[0-9a-f-]{36}$/);
    const stored = await call(emu, 'GET', `/v1/files/${out.file.id}`);
    expect(stored.body.size_bytes).toBe(readFileSync(small).length);
    expect(r.stdout + r.stderr).not.toContain(KEY);
  });

  it('presigned mode sends purpose, user_id and a relative --expires-at', async () => {
    const r = await runCli(
      ['files', 'upload', small, '--mode', 'presigned', '--purpose', 'reference'],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    // human output: the id on the first line
    const id = /^file (\S+)/.exec(r.stdout)?.[1];
    expect(r.stdout).toContain('uploaded: presigned');
    const before = Date.now();
    const withTtl = await runCli(
      [
        'files',
        'upload',
        small,
        '--mode',
        'presigned',
        '--user-id',
        'user-7',
        '--expires-at',
        '2h',
        '--json',
      ],
      cliEnv(emu),
    );
    const after = Date.now();
    expect(withTtl.code, withTtl.stderr).toBe(0);
    const file = jsonOut(withTtl).file;
    expect(file.user_id).toBe('user-7');
    // Two hours from when the command ran (to the second, as RFC 3339 may carry it).
    const expires = Date.parse(file.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before - 1000 + 2 * 3600_000);
    expect(expires).toBeLessThanOrEqual(after + 2 * 3600_000);
    const stored = await call(emu, 'GET', `/v1/files/${id}`);
    expect(stored.body).toMatchObject({ purpose: 'reference', size_bytes: readFileSync(small).length });
  });

  it('auto mode falls back to presigned when inline answers 413; --mode inline fails with the 413', async () => {
    const auto = await runCli(['files', 'upload', noisy, '--json'], cliEnv(emu));
    expect(auto.code, auto.stderr).toBe(0);
    expect(jsonOut(auto)).toMatchObject({ mode: 'presigned', sha256: sha256(noisy) });

    const inline = await runCli(['files', 'upload', noisy, '--mode', 'inline'], cliEnv(emu));
    expect(inline.code).toBe(1);
    expect(inline.stderr).toContain(`File exceeds the inline upload limit of ${INLINE_CAP} bytes`);
    expect(inline.stderr).toContain('HTTP 413');
    expect(inline.stderr).toMatch(/request id [0-9a-f-]{36}/);
    expect(inline.stdout).toBe('');
  });

  it('usage errors exit 2: a missing file, a bad --mode, a bad --expires-at, no API key', async () => {
    const missing = await runCli(['files', 'upload', join(dir, 'nope.png')], cliEnv(emu));
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
    const mode = await runCli(['files', 'upload', small, '--mode', 'sideways'], cliEnv(emu));
    expect(mode.code).toBe(2);
    expect(mode.stderr).toContain('sideways');
    const ttl = await runCli(['files', 'upload', small, '--expires-at', 'soon'], cliEnv(emu));
    expect(ttl.code).toBe(2);
    expect(ttl.stderr).toContain('--expires-at');
    const noKey = await runCli(['files', 'list'], cliEnv(emu, { GENPIPE_API_KEY: '' }));
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain('GENPIPE_API_KEY');
    // The set-up hint quotes the emulator's published default key; it is not masked as a secret.
    expect(EMULATOR_DEFAULT_KEY).toBe(DEFAULT_KEY);
    expect(noKey.stderr).toContain(`GENPIPE_API_KEY=${DEFAULT_KEY}`);
  });
});

/** A duration as formatDuration prints it (`312ms`, `1.2s`), in ms. */
function durationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s)$/.exec(text);
  if (!m) throw new Error(`not a duration: '${text}'`);
  return Number(m[1]) * (m[2] === 's' ? 1000 : 1);
}

/** A speed as printed (`17.4 KiB/s`, `512 B/s`), in bytes per second. */
function bytesPerSecond(text: string): number {
  const m = /^(\d+(?:\.\d+)?) (B|KiB|MiB|GiB)\/s$/.exec(text);
  if (!m) throw new Error(`not a speed: '${text}'`);
  return Number(m[1]) * 1024 ** ['B', 'KiB', 'MiB', 'GiB'].indexOf(m[2]!);
}

/** The time and speed of the `uploaded:` line, checked to agree with each other and the byte count. */
function transferOf(stdout: string): { ms: number; rate: number } {
  const m = /^ {2}uploaded: inline, (\d+) bytes in (\S+) \((.+)\)$/m.exec(stdout);
  if (!m) throw new Error(`no uploaded line in:\n${stdout}`);
  const bytes = Number(m[1]);
  const ms = durationMs(m[2]!);
  const rate = bytesPerSecond(m[3]!);
  // The printed time is rounded to the ms (or the 0.1 s), the speed to 0.1 of its unit.
  const slack = ms < 1000 ? 0.5 : 50;
  expect(rate).toBeGreaterThanOrEqual((bytes / ((ms + slack) / 1000)) * 0.97);
  expect(rate).toBeLessThanOrEqual((bytes / ((ms - slack) / 1000)) * 1.03);
  return { ms, rate };
}

describe('genpipe files upload: time and speed', () => {
  const LATENCY_MS = 150;
  const faults = (json: unknown) => call(emu, 'PUT', '/_emulator/faults', { key: null, json });

  it('gives the speed over the transfer alone, and the wait until the file is ready apart', async () => {
    // Every /v1 call takes at least LATENCY_MS: the upload's POST, and each read of the wait.
    await faults({ latency_ms: LATENCY_MS });
    try {
      const json = await runCli(
        ['files', 'upload', small, '--wait', '--poll-interval', '1', '--json'],
        cliEnv(emu),
      );
      expect(json.code, json.stderr).toBe(0);
      const out = jsonOut(json);
      expect(out.file.state).toBe('ready');
      expect(out.transfer_ms).toBeGreaterThanOrEqual(LATENCY_MS);
      expect(out.ready_wait_ms).toBeGreaterThanOrEqual(LATENCY_MS);
      expect(out.transfer_ms + out.ready_wait_ms).toBeLessThanOrEqual(out.elapsed_ms);

      const waited = await runCli(['files', 'upload', small, '--wait', '--poll-interval', '1'], cliEnv(emu));
      expect(waited.code, waited.stderr).toBe(0);
      expect(transferOf(waited.stdout).ms).toBeGreaterThanOrEqual(LATENCY_MS);
      const ready = /^ {2}ready: (\S+) after the transfer$/m.exec(waited.stdout);
      expect(ready, waited.stdout).not.toBeNull();
      expect(durationMs(ready![1]!)).toBeGreaterThanOrEqual(LATENCY_MS);

      // Without --wait: the transfer's time (never `0.0 s` for a short one), and no wait.
      const quick = await runCli(['files', 'upload', small], cliEnv(emu));
      expect(quick.code, quick.stderr).toBe(0);
      expect(transferOf(quick.stdout).ms).toBeGreaterThanOrEqual(LATENCY_MS);
      expect(quick.stdout).not.toMatch(/^ {2}ready:/m);
      const quickJson = jsonOut(await runCli(['files', 'upload', small, '--json'], cliEnv(emu)));
      expect(quickJson.transfer_ms).toBeGreaterThanOrEqual(LATENCY_MS);
      expect(quickJson.ready_wait_ms).toBeNull();
    } finally {
      await faults({});
    }
  });
});

describe('genpipe files list, get, delete', () => {
  it('lists every page, filters by state and stops at --limit', async () => {
    // 105 pending files (presigned requests without bytes) need two pages of 100.
    const ids = new Set<string>();
    for (let i = 0; i < 105; i++) {
      const r = await call(emu, 'POST', '/v1/files', {
        json: { mime_type: 'image/png', size_bytes: 10, filename: `p${i}.png` },
      });
      ids.add(r.body.id);
    }
    const all = await runCli(['files', 'list', '--state', 'pending', '--json'], cliEnv(emu));
    expect(all.code, all.stderr).toBe(0);
    const listed = jsonOut(all) as Array<{ id: string; state: string }>;
    expect(new Set(listed.map((f) => f.id))).toEqual(ids);
    expect(listed.every((f) => f.state === 'pending')).toBe(true);

    const few = await runCli(['files', 'list', '--state', 'pending', '--limit', '3'], cliEnv(emu));
    expect(few.code, few.stderr).toBe(0);
    const lines = few.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+STATE\s+PURPOSE/);
    expect(lines).toHaveLength(4);
    expect(lines[1]).toContain('p104.png'); // newest first
  });

  it('gets and deletes a file; a deleted file reads as deleted; an unknown id exits 1 with the 404', async () => {
    const up = jsonOut(await runCli(['files', 'upload', small, '--json'], cliEnv(emu)));
    const id = up.file.id as string;
    const got = await runCli(['files', 'get', id], cliEnv(emu));
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toContain(`file ${id}`);
    expect(got.stdout).toContain('filename: small.png');

    const del = await runCli(['files', 'delete', id, '--json'], cliEnv(emu));
    expect(del.code, del.stderr).toBe(0);
    expect(jsonOut(del)).toEqual({ id, deleted: true });
    expect((await call(emu, 'GET', `/v1/files/${id}`)).body.state).toBe('deleted');

    const unknown = await runCli(
      ['files', 'get', '3f0e7a52-1111-4222-8333-444455556666', '--json'],
      cliEnv(emu),
    );
    expect(unknown.code).toBe(1);
    expect(unknown.stdout).toBe('');
    const err = JSON.parse(unknown.stderr).error;
    expect(err).toMatchObject({ name: 'NotFoundError', status: 404, detail: 'File not found' });
    expect(err.request_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a wrong key exits 1 with the 401 detail and never prints the key', async () => {
    const wrong = 'svc-api-not-a-real-key-12345';
    const r = await runCli(['files', 'list'], cliEnv(emu, { GENPIPE_API_KEY: wrong }));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Invalid API key');
    expect(r.stderr).toContain('HTTP 401');
    expect(r.stderr).not.toContain(wrong);
  });
});
