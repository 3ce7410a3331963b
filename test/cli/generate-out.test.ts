/**
 * `genpipe generate --out DIR` never overwrites: each generation's outputs go to their own folder,
 * `DIR/<generation id>/`, so two runs into the same DIR keep both results. A child process against an
 * emulator on loopback.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, hold, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-cli-generate-out-'));
  emu = await startTestEmulator({ tiny_outputs: false }); // real outputs, as a user downloads them
});

afterAll(async () => {
  await emu?.close();
  await rm(dir, { recursive: true, force: true });
});

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('genpipe generate --out', () => {
  it('twice into the same DIR: each generation in DIR/<generation id>/, the first one kept', async () => {
    const out = join(dir, 'out');
    const args = ['generate', '--out', out, '--poll-interval', '1', '--json'];
    const first = await runCli([...args, '--prompt', 'a red fox'], cliEnv(emu));
    expect(first.code, first.stderr).toBe(0);
    const a = jsonOut(first);
    const firstPath = join(out, a.generation.id, 'output-0.png');
    expect(a.outputs.map((o: { path: string }) => o.path)).toEqual([firstPath]);
    const firstHash = sha256(firstPath);

    const second = await runCli([...args, '--prompt', 'a blue bird'], cliEnv(emu));
    expect(second.code, second.stderr).toBe(0);
    const b = jsonOut(second);
    const secondPath = join(out, b.generation.id, 'output-0.png');
    expect(b.outputs.map((o: { path: string }) => o.path)).toEqual([secondPath]);

    expect(readdirSync(out).sort()).toEqual([a.generation.id, b.generation.id].sort());
    expect(sha256(firstPath)).toBe(firstHash);
    expect(sha256(secondPath)).not.toBe(firstHash);
    // Each file is its generation's output, byte for byte.
    for (const [g, path] of [
      [a.generation.id, firstPath],
      [b.generation.id, secondPath],
    ]) {
      const gen = await call(emu, 'GET', `/v1/generations/${g}`);
      const res = await fetch(gen.body.output[0].url);
      expect(
        createHash('sha256')
          .update(Buffer.from(await res.arrayBuffer()))
          .digest('hex'),
      ).toBe(sha256(path));
    }
  });
});

describe('genpipe generate --out interrupted while it waits', () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal}: exit ${code}, naming the generation (it goes on, paid) and how to collect it`, async () => {
      const holdId = await hold(emu);
      try {
        const out = join(dir, `interrupted-${signal}`);
        let sent = false;
        const r = await runCli(
          ['generate', '--prompt', 'a red fox', '--out', out, '--poll-interval', '1'],
          cliEnv(emu),
          30_000,
          (text, child) => {
            if (!sent && text.includes('; waiting')) {
              sent = true;
              child.kill(signal);
            }
          },
        );
        expect(r.code, r.stderr).toBe(code);
        const id = /created generation ([0-9a-f-]{36})/.exec(r.stderr)?.[1];
        expect(id).toBeDefined();
        expect(r.stderr).toContain(`genpipe: interrupted (${signal})`);
        expect(r.stderr).toContain(`generation ${id} goes on at the service`);
        expect(r.stderr).toContain(`genpipe generations download ${id} --out ${out} --wait`);
      } finally {
        await unhold(emu, holdId);
      }
    });
  }
});
