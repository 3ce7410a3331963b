/**
 * `genpipe generations get|wait|download` as a user runs them: child processes against an emulator
 * on loopback. Generations are created straight through the API; the CLI reads, waits and downloads.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { CHOICES } from '../../src/spec/index.ts';
import { call, hold, release, startTestEmulator, unhold, until } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-generations-'));
  emu = await startTestEmulator({ blocked_words: ['forbidden'], tiny_outputs: false });
  // Videos never finish within a test (and so are never rendered): they stay queued.
  await hold(emu, { state: 'queued', type: 'video' });
});

afterAll(async () => {
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

async function create(body: Record<string, unknown>): Promise<string> {
  const r = await call(emu, 'POST', '/v1/generations', { json: body });
  expect(r.status).toBe(201);
  return r.body.id as string;
}

async function completed(id: string): Promise<void> {
  await until(async () => (await call(emu, 'GET', `/v1/generations/${id}`)).body.state === 'completed');
}

describe('genpipe generations', () => {
  it('get prints a generation (text and --json)', async () => {
    const id = await create({ type: 'image', prompt: 'a green triangle', aspect_ratio: '1:1' });
    await completed(id);
    const text = await runCli(['generations', 'get', id], cliEnv(emu));
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`generation ${id}  completed`);
    expect(text.stdout).toContain('output 0: image');
    const json = await runCli(['generations', 'get', id, '--json'], cliEnv(emu));
    expect(jsonOut(json)).toMatchObject({ id, state: 'completed', type: 'image', failure_code: null });
    expect(jsonOut(json).output[0].url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
  });

  it('wait returns the completed generation and notes its states on stderr', async () => {
    const id = await create({ type: 'image', prompt: 'a blue square' });
    const r = await runCli(['generations', 'wait', id, '--poll-interval', '1', '--json'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(jsonOut(r)).toMatchObject({ id, state: 'completed' });
    expect(r.stderr).toContain(`generation ${id}: completed`);
  });

  it('wait on a failing generation exits 1 with failure_code and failure_reason', async () => {
    const id = await create({ type: 'image', prompt: 'something forbidden' });
    const r = await runCli(['generations', 'wait', id, '--poll-interval', '1'], cliEnv(emu));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Generation ${id} failed (content_moderated)`);
    expect(r.stderr).toContain('failure_code: content_moderated (not retryable)');
    expect(r.stderr).toContain(`failure_reason: ${CHOICES.failureReasons.content_moderated}`);
  });

  it('wait --timeout gives up with exit 1 while the generation runs on', async () => {
    const id = await create({ type: 'video', prompt: 'slow waves' });
    const r = await runCli(
      ['generations', 'wait', id, '--timeout', '1', '--poll-interval', '1'],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`did not finish within 1000 ms`);
    // It gave up on its own: the job never ends while it is held, and it is still running.
    expect((await call(emu, 'GET', `/v1/generations/${id}`)).body.state).toBe('queued');
  });

  it('Ctrl-C while waiting ends the command with exit code 130', async () => {
    const id = await create({ type: 'video', prompt: 'never finishing' });
    let sent = false;
    const r = await runCli(['generations', 'wait', id], cliEnv(emu), 30_000, (text, child) => {
      if (!sent && text.includes(`generation ${id}: `)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    expect(r.stderr).toContain('genpipe: interrupted');
  });

  it('download saves every output under its final name in <out>/<generation id>/ and prints the paths', async () => {
    const id = await create({ type: 'image', prompt: 'a yellow star', aspect_ratio: '16:9' });
    await completed(id);
    const out = join(dir, 'dl');
    const r = await runCli(['generations', 'download', id, '--out', out], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${join(out, id, 'output-0.png')}\n`);
    expect(readdirSync(out)).toEqual([id]);
    expect(readdirSync(join(out, id))).toEqual(['output-0.png']);
    const meta = await sharp(join(out, id, 'output-0.png')).metadata();
    expect(meta.width).toBeGreaterThan(meta.height ?? 0);
  });

  it('download of a generation that is not completed exits 1 and writes nothing', async () => {
    const id = await create({ type: 'video', prompt: 'still running' });
    const out = join(dir, 'dl-none');
    const r = await runCli(['generations', 'download', id, '--out', out, '--json'], cliEnv(emu));
    expect(r.code).toBe(1);
    const message = JSON.parse(r.stderr).error.message;
    expect(message).toContain(`Generation ${id} has no outputs to download yet (state queued)`);
    expect(message).toContain('pass --wait');
    expect(r.stdout).toBe('');
    expect(existsSync(join(out, id))).toBe(false);
  });

  it('download --wait waits for a generation still running, then downloads its outputs', async () => {
    const holdId = await hold(emu, { state: 'queued', prompt: 'a patient owl' });
    try {
      const id = await create({ type: 'image', prompt: 'a patient owl', aspect_ratio: '1:1' });
      const out = join(dir, 'dl-wait');
      let released: Promise<void> | null = null;
      const r = await runCli(
        ['generations', 'download', id, '--out', out, '--wait', '--poll-interval', '1', '--json'],
        cliEnv(emu),
        60_000,
        (text) => {
          // Let it go only once the command has seen it queued: the wait is what gets the outputs.
          if (!released && text.includes(`generation ${id}: queued`)) released = release(emu, id);
        },
      );
      await released;
      expect(released).not.toBeNull();
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`generation ${id}: completed`);
      expect(jsonOut(r)).toMatchObject({ id, outputs: [{ index: 0, path: join(out, id, 'output-0.png') }] });
      expect(readdirSync(join(out, id))).toEqual(['output-0.png']);
    } finally {
      await unhold(emu, holdId);
    }
  });

  it('download --wait of a failing generation exits 1 with failure_code and reason, as wait does', async () => {
    const id = await create({ type: 'image', prompt: 'a forbidden download' });
    const out = join(dir, 'dl-failed');
    const r = await runCli(
      ['generations', 'download', id, '--out', out, '--wait', '--poll-interval', '1'],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Generation ${id} failed (content_moderated)`);
    expect(r.stderr).toContain(`failure_reason: ${CHOICES.failureReasons.content_moderated}`);
    expect(r.stdout).toBe('');
    expect(existsSync(join(out, id))).toBe(false);
  });

  it('download --wait --timeout gives up with exit 1; --timeout without --wait is a usage error', async () => {
    const id = await create({ type: 'video', prompt: 'waves that never land' });
    const out = join(dir, 'dl-timeout');
    const r = await runCli(
      ['generations', 'download', id, '--out', out, '--wait', '--timeout', '1', '--poll-interval', '1'],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Generation ${id} did not finish within 1000 ms`);
    expect(existsSync(join(out, id))).toBe(false);
    const usage = await runCli(['generations', 'download', id, '--out', out, '--timeout', '1'], cliEnv(emu));
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--timeout needs --wait');
  });

  it('errors: an unknown id exits 1 with the 404 detail and request id; a missing --out exits 2', async () => {
    const r = await runCli(['generations', 'get', '0f0e7a52-1111-4222-8333-444455556666'], cliEnv(emu));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Generation not found \(HTTP 404, request id [0-9a-f-]{36}\)/);
    const usage = await runCli(
      ['generations', 'download', '0f0e7a52-1111-4222-8333-444455556666'],
      cliEnv(emu),
    );
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--out');
  });
});
