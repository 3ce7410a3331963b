/**
 * `genpipe generate` as a user runs it: a child process against an emulator on loopback. Requests from
 * flags and from a JSON file (flags win), local media uploaded first, --wait and --out, the local check
 * that sends (and uploads) nothing, a lost create that says the job may exist, and a failed generation's
 * failure_code.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { CHOICES } from '../../src/spec/index.ts';
import { adminRows, setFaults, writePng } from '../client/client-helpers.ts';
import { call, KEY, startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;
let png: string;
let png2: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-generate-'));
  emu = await startTestEmulator({ blocked_words: ['forbidden'] });
  png = await writePng(join(dir, 'source.png'), 40, 30);
  png2 = join(dir, 'style.png');
  await writeFile(
    png2,
    await sharp({ create: { width: 24, height: 24, channels: 3, background: '#1e3cc8' } })
      .png()
      .toBuffer(),
  );
});

afterEach(async () => {
  await setFaults(emu, {});
});

afterAll(async () => {
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('genpipe generate', () => {
  it('creates from flags and prints the queued generation with the request id it sent', async () => {
    const r = await runCli(['generate', '--prompt', 'a red fox', '--aspect-ratio', '1:1'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    const id = /^generation (\S+)\s+queued/.exec(r.stdout)?.[1];
    const requestId = /request id: (\S+)/.exec(r.stdout)?.[1];
    expect(id).toBeTruthy();
    const row = (await adminRows(emu)).find((g) => g.id === id);
    expect(row).toMatchObject({ type: 'image', request_id: requestId });
  });

  it('uploads local media first (source as input, image-ref as reference), waits and downloads with --out', async () => {
    const out = join(dir, 'out-edit');
    const r = await runCli(
      [
        ...['generate', '--type', 'image_edit', '--prompt', 'make it blue'],
        ...['--source', png, '--image-ref', png2, '--out', out, '--poll-interval', '1', '--json'],
      ],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    const result = jsonOut(r);
    expect(result.generation).toMatchObject({ type: 'image_edit', state: 'completed' });
    expect(
      result.uploads.map((u: { path: string; file: { purpose: string; state: string } }) => [
        u.path,
        u.file.purpose,
        u.file.state,
      ]),
    ).toEqual([
      [png, 'input', 'ready'],
      [png2, 'reference', 'ready'],
    ]);
    expect(result.outputs).toHaveLength(1);
    const saved = result.outputs[0].path as string;
    expect(saved).toBe(join(out, result.generation.id, 'output-0.png'));
    expect((await sharp(saved).metadata()).format).toBe('png');
    expect(readdirSync(join(out, result.generation.id)).filter((n) => n.endsWith('.part'))).toEqual([]);
    expect(r.stderr).toContain(`uploaded ${png} as file ${result.uploads[0].file.id}`);
  });

  it('--out without --json prints just the saved paths', async () => {
    const out = join(dir, 'out-plain');
    const r = await runCli(
      ['generate', '--prompt', 'a teal circle', '--out', out, '--poll-interval', '1'],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    const [id] = readdirSync(out);
    expect(r.stdout).toBe(`${join(out, id as string, 'output-0.png')}\n`);
    expect(existsSync(join(out, id as string, 'output-0.png'))).toBe(true);
  });

  it('reads --request file.json; flags override its fields and merge into its video object', async () => {
    const file = join(dir, 'request.json');
    await writeFile(file, JSON.stringify({ type: 'image', model: 'uni-1-max', prompt: 'from the file' }));
    const r = await runCli(['generate', '--request', file, '--model', 'uni-1', '--json'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(jsonOut(r).generation).toMatchObject({ type: 'image', model: 'uni-1' });

    // The file's video.hdr and the flag's --duration meet in one object: the service's combination rule.
    await writeFile(file, JSON.stringify({ type: 'video', prompt: 'waves', video: { hdr: true } }));
    const merged = await runCli(['generate', '--request', file, '--duration', '10s'], cliEnv(emu));
    expect(merged.code).toBe(1);
    expect(merged.stderr).toContain("duration '10s' is not supported with hdr=true");
  });

  it('checks the request locally first: nothing is uploaded or sent, exit 1 with the service detail', async () => {
    const generationsBefore = (await adminRows(emu)).length;
    const filesBefore = (await call(emu, 'GET', '/v1/files?limit=100')).body.data.length;
    const r = await runCli(
      ['generate', '--type', 'image_edit', '--model', 'uni-9', '--prompt', 'x', '--source', png],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    // The service's text, then the models there are.
    expect(r.stderr).toContain('Unknown model: uni-9. Valid: uni-1, uni-1-max, ray-3.2 (HTTP 400)');
    expect(r.stderr).toContain('nothing was sent');
    expect((await adminRows(emu)).length).toBe(generationsBefore);
    expect((await call(emu, 'GET', '/v1/files?limit=100')).body.data.length).toBe(filesBefore);
  });

  it('a lost create exits 1, says the job may exist and prints the request id; no second job is made', async () => {
    await setFaults(emu, { reset_after: 1 });
    const requestId = randomUUID();
    const r = await runCli(
      ['generate', '--prompt', 'lost in transit', '--request-id', requestId],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('may exist');
    expect(r.stderr).toContain(requestId);
    await setFaults(emu, {});
    expect((await adminRows(emu)).filter((g) => g.request_id === requestId)).toHaveLength(1);
    const json = await runCli(['generate', '--prompt', 'x', '--json'], cliEnv(emu));
    expect(json.code).toBe(0);
  });

  it('a generation that fails exits 1 with its failure_code and failure_reason', async () => {
    const r = await runCli(
      ['generate', '--prompt', 'a forbidden thing', '--wait', '--poll-interval', '1'],
      cliEnv(emu),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('failure_code: content_moderated (not retryable)');
    expect(r.stderr).toContain(CHOICES.failureReasons.content_moderated);
    expect(r.stdout).toBe('');

    await setFaults(emu, { failure_codes: { generation_failed: 1 } });
    const json = await runCli(
      ['generate', '--prompt', 'x', '--wait', '--poll-interval', '1', '--json'],
      cliEnv(emu),
    );
    expect(json.code).toBe(1);
    const err = JSON.parse(json.stderr.trim().split('\n').at(-1) ?? '').error;
    expect(err).toMatchObject({
      name: 'GenerationFailedError',
      failure_code: 'generation_failed',
      retryable: true,
    });
    expect(json.stderr).not.toContain(KEY);
  });

  it('usage errors exit 2: nothing to generate, a media reference that is nothing, a broken request file', async () => {
    const none = await runCli(['generate'], cliEnv(emu));
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('nothing to generate');
    const ref = await runCli(['generate', '--prompt', 'x', '--source', join(dir, 'absent.png')], cliEnv(emu));
    expect(ref.code).toBe(2);
    expect(ref.stderr).toContain("--source: '");
    const file = join(dir, 'broken.json');
    await writeFile(file, '{ "prompt": ');
    const broken = await runCli(['generate', '--request', file], cliEnv(emu));
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('is not valid JSON');
  });
});
