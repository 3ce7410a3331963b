/**
 * Every command that writes into `--out DIR` refuses, as a usage error (exit 2) naming the path and
 * before anything is sent, an out dir that cannot be a folder: an existing regular file, a path through
 * a regular file, a folder that cannot be created for want of permission. Child processes against an
 * emulator on loopback; the permission case runs as an unprivileged user (root may write anywhere).
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows } from '../client/client-helpers.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { UNPRIVILEGED as UNPRIVILEGED_USER } from '../helpers/other-user.ts';
import { cliEnv, runCli } from './run-cli.ts';

const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
`;

let emu: RunningEmulator;
let root: string;
let inputDir: string;
let aFile: string;
let locked: string;

/** Who runs the permission case: an unprivileged user when the tests run as root. */
const UNPRIVILEGED = UNPRIVILEGED_USER ?? {};

beforeAll(async () => {
  emu = await startTestEmulator();
  root = await mkdtemp(join(tmpdir(), 'genpipe-cli-out-dir-'));
  await chmod(root, 0o755);
  inputDir = join(root, 'in');
  await mkdir(inputDir);
  await writeFile(join(inputDir, 'genpipe.yaml'), RECIPE);
  await writeFile(join(inputDir, 'a.txt'), 'a red fox');
  aFile = join(root, 'afile');
  await writeFile(aFile, 'x\n');
  locked = join(root, 'locked');
  await mkdir(locked);
  await chmod(locked, 0o555);
});

afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** Each command that takes `--out DIR`, with that out dir. */
const COMMANDS: ReadonlyArray<[name: string, args: (out: string) => string[]]> = [
  ['run', (out) => ['run', inputDir, '--out', out]],
  ['watch', (out) => ['watch', inputDir, '--out', out]],
  ['demo', (out) => ['demo', '--out', out]],
  ['generate', (out) => ['generate', '--prompt', 'a red fox', '--out', out]],
  [
    'generations download',
    (out) => ['generations', 'download', '0f0e7a52-1111-4222-8333-444455556666', '--out', out],
  ],
  [
    'legacy modify',
    (out) => [
      ...['legacy', 'modify', '--media-url', 'http://127.0.0.1:9/clip.mp4', '--model', 'ray-flash-2'],
      ...['--mode', 'flex_1', '--out', out],
    ],
  ],
];

/** The refusal: exit 2 with `message`, no raw errno text. */
async function expectRefused(args: string[], message: string, as: { uid?: number; gid?: number } = {}) {
  const r = await runCli(args, cliEnv(emu), 30_000, undefined, as);
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toContain(message);
  expect(r.stderr).not.toMatch(/ENOTDIR|EACCES|EEXIST/);
  expect(r.stdout).toBe('');
}

describe('--out that cannot be a folder is a usage error naming it', () => {
  for (const [name, args] of COMMANDS) {
    it(`${name}: an existing file, a path through a file, a folder without permission`, async () => {
      await expectRefused(args(aFile), `--out ${aFile} is a file, not a folder`);
      const through = join(aFile, 'sub', 'o');
      await expectRefused(
        args(through),
        `--out ${through} cannot be created: ${aFile} is a file, not a folder`,
      );
      const denied = join(locked, 'o');
      await expectRefused(
        args(denied),
        `--out ${denied} cannot be created: no permission to create a folder in ${locked}`,
        UNPRIVILEGED,
      );
    });
  }

  it('nothing reached the service', async () => {
    expect(await adminRows(emu)).toEqual([]);
    expect((await call(emu, 'GET', '/v1/files?limit=100')).body.data).toEqual([]);
  });
});
