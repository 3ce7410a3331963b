/**
 * Control characters in what genpipe prints — a file name with an escape sequence, an out dir with one,
 * a failure reason — are shown as `\xNN`, never sent raw to the terminal: the closing summary of a
 * run, `genpipe status`, and a client command's result.
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const ESC = '\u001b';
const NAME = `red${ESC}[31m.txt`;
const promptFolder = usePromptFolders();
let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  emu = await startTestEmulator();
  dir = mkdtempSync(join(tmpdir(), 'genpipe-control-chars-'));
});

afterAll(async () => {
  await emu?.close();
  rmSync(dir, { recursive: true, force: true });
});

it('the closing summary and genpipe status escape control characters', async () => {
  const { input, out } = promptFolder({ [NAME]: 'a small red fox' });
  const outDir = `${out}${ESC}[2J`;
  await call(emu, 'PUT', '/_emulator/faults', {
    key: null,
    json: { failure_codes: { content_moderated: 1 } },
  });
  try {
    const run = await runCli(['run', input, '--out', outDir], cliEnv(emu), 60_000);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toContain('\\x1b[2J/report.html');
    expect(run.stderr).not.toContain(ESC);
    expect(run.stdout).not.toContain(ESC);

    const status = await runCli(['status', outDir], cliEnv(emu));
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('red\\x1b[31m.txt: ');
    expect(status.stdout).not.toContain(ESC);
  } finally {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { failure_codes: {} } });
  }
}, 90_000);

it("a client command's result escapes control characters (a file name)", async () => {
  const photos = join(import.meta.dirname, '..', '..', 'samples', 'photos');
  const photo = readdirSync(photos).find((f) => f.endsWith('.jpg'))!;
  const path = join(dir, `p${ESC}[31m\n.jpg`);
  copyFileSync(join(photos, photo), path);
  const r = await runCli(['files', 'upload', path], cliEnv(emu));
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toContain('p\\x1b[31m\\x0a.jpg');
  expect(r.stdout).not.toContain(ESC);
}, 60_000);
