/**
 * A count of one reads in the singular wherever genpipe says a number of things: a batch of one file, as
 * a user runs it (a child process against an emulator on loopback), in its plain progress, its summary,
 * its dry run and its report.
 */
import { readFile, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

let emu: RunningEmulator;
const folder = usePromptFolders();

beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(() => emu?.close());

/** `1 files`, `1 inputs`, `1 credits`, …: a one followed by a plural. */
const ONE_PLURAL = /\b1 (files|inputs|credits|steps|reasons|items|workers|bytes)\b/;

describe('a batch of one file', () => {
  it('says "1 file" and "1 input" in its progress, its summary and its report', async () => {
    const { input, out } = folder({ 'a.txt': 'a red fox' });
    const r = await runCli(['run', input, '--out', out], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('finished: 1 input, 1 succeeded, 0 failed, 0 skipped');
    expect(r.stderr).toContain('genpipe: 1 file: 1 succeeded, 0 failed, 0 skipped');
    expect(`${r.stdout}${r.stderr}`).not.toMatch(ONE_PLURAL);
    const page = await readFile(join(out, 'report.html'), 'utf8');
    expect(page).toContain('<title>genpipe report — 1 input, 1 succeeded, 0 failed</title>');
  });

  it('says "1 file" in its dry run', async () => {
    const { input, out } = folder({ 'a.txt': 'a red fox' });
    const r = await runCli(['run', input, '--out', out, '--dry-run'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('dry run: 1 file: 1 would be sent');
    expect(`${r.stdout}${r.stderr}`).not.toMatch(ONE_PLURAL);
  });
});

describe('the ignored entries of a batch', () => {
  it('call a symbolic link that leads to itself a loop, and one to nothing broken', async () => {
    const { input, out } = folder({ 'a.txt': 'a red fox' });
    await symlink('loop.txt', join(input, 'loop.txt')); // ELOOP
    await symlink('missing.txt', join(input, 'gone.txt')); // ENOENT
    const r = await runCli(['run', input, '--out', out, '--dry-run'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/; 3 ignored: .*\b1 symbolic link loop\b/);
    expect(r.stderr).toMatch(/; 3 ignored: .*\b1 broken symbolic link\b/);
  });
});
