/**
 * A path given on the command line with bytes that are not valid UTF-8 reaches genpipe with U+FFFD in
 * their place (Node decodes argv so): every path-valued option and argument of every command is
 * refused then (exit 2, naming it), rather than writing to, reading or journalling at a path other
 * than the one given. The shell hands the bytes over (`$(printf ...)`), as a user's would.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { cliEnv, runCli } from './run-cli.ts';

const RECIPE =
  'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1, aspect_ratio: "1:1" }\n';

let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  dir = mkdtempSync(join(tmpdir(), 'genpipe-raw-path-args-'));
  mkdirSync(join(dir, 'in'));
  writeFileSync(join(dir, 'in', 'a.txt'), 'a small cat');
  writeFileSync(join(dir, 'in', 'genpipe.yaml'), RECIPE);
  writeFileSync(Buffer.from(`${dir}/r\xe9.yaml`, 'latin1'), RECIPE);
});

afterAll(async () => {
  await emu?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const WORDS = 'holds a byte sequence that is not valid UTF-8 (or U+FFFD)';

it.each([
  ['run', `run in --out "$(printf 'out\\351')"`, '--out'],
  ['run', `run in --out out --journal "$(printf 'j\\351.db')"`, '--journal'],
  ['run', `run in --out out --log-file "$(printf 'l\\351.log')"`, '--log-file'],
  ['run', `run in --out out --recipe "$(printf 'r\\351.yaml')"`, '--recipe'],
  ['status', `status "$(printf 'out\\351')"`, 'out dir'],
  ['serve', `serve --port 0 --data-dir "$(printf 'd\\351')"`, '--data-dir'],
  ['a real U+FFFD', `run in --out "$(printf 'out\\357\\277\\275')"`, '--out'],
])('%s: %s is refused naming %s, and nothing is written there', async (_cmd, line, named) => {
  const r = await runCli(line, cliEnv(emu), 30_000, undefined, { cwd: dir });
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr).toContain(`${named}: `);
  expect(r.stderr).toContain(WORDS);
  expect(existsSync(join(dir, 'out'))).toBe(false);
  expect(readdirSync(dir).sort()).toEqual(['in', Buffer.from('r\xe9.yaml', 'latin1').toString()].sort());
});
