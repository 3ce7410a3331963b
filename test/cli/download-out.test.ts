/**
 * `genpipe generations download <id> --out DIR` never overwrites another generation's outputs: each
 * generation's outputs go to `DIR/<generation id>/`, as with `generate --out`. Downloading the same
 * generation again into the same DIR writes its files again and says so (stderr, and `replaced` in
 * --json). Child processes against an emulator on loopback.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, startTestEmulator, until } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-download-out-'));
  emu = await startTestEmulator({ processing_ms: { image: 50 } });
});

afterAll(async () => {
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A completed image generation made through the API. */
async function completedImage(prompt: string): Promise<string> {
  const r = await call(emu, 'POST', '/v1/generations', { json: { type: 'image', prompt } });
  expect(r.status).toBe(201);
  const id = r.body.id as string;
  await until(async () => (await call(emu, 'GET', `/v1/generations/${id}`)).body.state === 'completed');
  return id;
}

/** The sha256 of a generation's first output as the service serves it. */
async function servedHash(id: string): Promise<string> {
  const gen = await call(emu, 'GET', `/v1/generations/${id}`);
  const res = await fetch(gen.body.output[0].url);
  return sha256(Buffer.from(await res.arrayBuffer()));
}

describe('genpipe generations download --out', () => {
  it('two generations into the same DIR: each in DIR/<generation id>/, the first one kept', async () => {
    const a = await completedImage('a red fox');
    const b = await completedImage('a blue bird');
    const out = join(dir, 'two');
    const first = await runCli(['generations', 'download', a, '--out', out], cliEnv(emu));
    expect(first.code, first.stderr).toBe(0);
    const firstPath = join(out, a, 'output-0.png');
    expect(first.stdout).toBe(`${firstPath}\n`);
    const firstHash = sha256(readFileSync(firstPath));

    const second = await runCli(['generations', 'download', b, '--out', out], cliEnv(emu));
    expect(second.code, second.stderr).toBe(0);
    const secondPath = join(out, b, 'output-0.png');
    expect(second.stdout).toBe(`${secondPath}\n`);

    expect(readdirSync(out).sort()).toEqual([a, b].sort());
    expect(sha256(readFileSync(firstPath))).toBe(firstHash);
    expect(firstHash).toBe(await servedHash(a));
    expect(sha256(readFileSync(secondPath))).toBe(await servedHash(b));
  });

  it('the same generation twice: written again, and said so on stderr and in --json', async () => {
    const id = await completedImage('a green pear');
    const out = join(dir, 'again');
    const path = join(out, id, 'output-0.png');
    const first = await runCli(['generations', 'download', id, '--out', out, '--json'], cliEnv(emu));
    expect(first.code, first.stderr).toBe(0);
    expect(jsonOut(first).outputs).toMatchObject([{ index: 0, path, replaced: false }]);
    expect(first.stderr).not.toContain('replaced');

    const again = await runCli(['generations', 'download', id, '--out', out, '--json'], cliEnv(emu));
    expect(again.code, again.stderr).toBe(0);
    expect(jsonOut(again).outputs).toMatchObject([{ index: 0, path, replaced: true }]);
    expect(again.stderr).toContain(`replaced ${path} with the same generation's output downloaded again`);
    expect(readdirSync(join(out, id))).toEqual(['output-0.png']);
    expect(sha256(readFileSync(path))).toBe(await servedHash(id));
  });
});
