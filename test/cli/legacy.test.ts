/**
 * `genpipe legacy modify|get` as a user runs them: child processes against an emulator on loopback,
 * with a small source video served by a local HTTP server. The legacy base URL defaults to
 * `<GENPIPE_BASE_URL>/dream-machine/v1`; the legacy token comes from GENPIPE_LEGACY_TOKEN.
 */
import { execFile } from 'node:child_process';
import { createReadStream, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { ffmpegPath, probeVideo } from '../../src/media/index.ts';
import { validateModifyRequest } from '../../src/spec/index.ts';
import { adminRows } from '../client/client-helpers.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;
let media: Server;
let sourceUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-legacy-'));
  const source = join(dir, 'source.mp4');
  await promisify(execFile)(ffmpegPath(), [
    ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=1:size=160x90:rate=12'],
    ...['-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', source],
  ]);
  media = createServer((req, res) => {
    if (req.url === '/source.mp4') {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': statSync(source).size });
      createReadStream(source).pipe(res);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => media.listen(0, '127.0.0.1', () => r()));
  sourceUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/source.mp4`;
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu?.close();
  await new Promise((r) => media?.close(r));
  await rm(dir, { recursive: true, force: true });
});

describe('genpipe legacy', () => {
  it('modify --out waits, downloads the video into <out>/<generation id>/ and prints its path; get shows the generation', async () => {
    const out = join(dir, 'out');
    const r = await runCli(
      [
        ...['legacy', 'modify', '--media-url', sourceUrl, '--model', 'ray-flash-2', '--mode', 'flex_1'],
        ...['--prompt', 'in watercolour', '--out', out, '--poll-interval', '1', '--json'],
      ],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    const result = jsonOut(r);
    expect(result.generation).toMatchObject({ state: 'completed', model: 'ray-flash-2' });
    expect(result.outputs).toHaveLength(1);
    const saved = join(out, result.generation.id, 'output-0.mp4');
    expect(result.outputs[0].path).toBe(saved);
    expect(readdirSync(out)).toEqual([result.generation.id]);
    expect(readdirSync(join(out, result.generation.id))).toEqual(['output-0.mp4']);
    expect((await probeVideo(saved)).codec).toBe('h264');
    const row = (await adminRows(emu)).find((g) => g.id === result.generation.id);
    expect(row).toMatchObject({ surface: 'legacy', request_id: result.request_id });

    const got = await runCli(['legacy', 'get', result.generation.id], cliEnv(emu));
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toContain(`legacy generation ${result.generation.id}  completed`);
    expect(got.stdout).toMatch(/ {2}video: http:\/\/127\.0\.0\.1:\d+\//);
  });

  it('modify without --wait prints the queued generation and its request id', async () => {
    const r = await runCli(
      ['legacy', 'modify', '--media-url', sourceUrl, '--model', 'ray-2', '--mode', 'adhere_1'],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^legacy generation \S+ {2}(queued|dreaming)/);
    expect(r.stdout).toMatch(/request id: [0-9a-f-]{36}/);
  });

  it('a request the service would refuse is rejected locally with its detail (exit 1); a missing flag exits 2', async () => {
    const bad = { media: { url: sourceUrl }, model: 'ray-2', mode: 'wild_9' };
    const expected = validateModifyRequest(bad);
    expect(expected.ok).toBe(false);
    const before = (await adminRows(emu)).length;
    const r = await runCli(
      ['legacy', 'modify', '--media-url', sourceUrl, '--model', 'ray-2', '--mode', 'wild_9'],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain((expected as { detail: string }).detail);
    expect((await adminRows(emu)).length).toBe(before);

    const missing = await runCli(
      ['legacy', 'modify', '--media-url', sourceUrl, '--model', 'ray-2'],
      cliEnv(emu),
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--mode');
  });

  it('a source that cannot be fetched fails the generation: exit 1 with the failure reason', async () => {
    const r = await runCli(
      [
        ...['legacy', 'modify', '--media-url', sourceUrl.replace('source.mp4', 'gone.mp4')],
        ...['--model', 'ray-2', '--mode', 'flex_2', '--wait', '--poll-interval', '1'],
      ],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('failure_reason: media.url: failed to fetch URL (HTTP 404)');
  });

  it('uses GENPIPE_LEGACY_BASE_URL and GENPIPE_LEGACY_TOKEN, and never prints the token', async () => {
    const token = 'svc-api-wrong-legacy-token';
    const r = await runCli(
      ['legacy', 'get', '0f0e7a52-1111-4222-8333-444455556666'],
      cliEnv(emu, { GENPIPE_LEGACY_BASE_URL: `${emu.url}/dream-machine/v1`, GENPIPE_LEGACY_TOKEN: token }),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('HTTP 401');
    expect(r.stderr).not.toContain(token);
    const elsewhere = await runCli(
      ['legacy', 'get', '0f0e7a52-1111-4222-8333-444455556666'],
      cliEnv(emu, { GENPIPE_LEGACY_BASE_URL: `${emu.url}/elsewhere/v1` }),
    );
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain('HTTP 404');
    expect(elsewhere.stderr).toContain('Not found');
  });
});
