/**
 * The client's retry notes in a batch's default output: the first retry of a kind in full, the others
 * counted in one line (at the end here: the batch is shorter than the count interval); each in full in
 * the log file, and with -v.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;
let dir: string;

beforeAll(async () => {
  // Every create is answered 503: each is retried until the batch stops (service unavailable).
  emu = await startTestEmulator({ faults: { http_503: 1 } });
  dir = mkdtempSync(join(tmpdir(), 'genpipe-retry-notes-'));
});

afterAll(async () => {
  await emu?.close();
  rmSync(dir, { recursive: true, force: true });
});

const RETRY = /retrying POST \/v1\/generations .*after 503/;

describe('retry notes', () => {
  it('prints the first retry of a kind in full and counts the others; the log file holds each', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small a fox', 'b.txt': 'a small b fox' });
    const log = join(dir, 'run.log');
    const run = await runCli(
      ['run', input, '--out', out, '--log-file', log, '--no-verbose-for-tests'],
      cliEnv(emu),
      90_000,
    );
    expect(run.code, run.stderr).not.toBe(0);
    const logged = readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => / note: /.test(l) && RETRY.test(l));
    expect(logged.length).toBeGreaterThanOrEqual(3);
    const printed = run.stderr.split('\n').filter((l) => RETRY.test(l));
    expect(printed).toHaveLength(1);
    expect(printed[0]).toContain('further retries like it are counted (-v shows each)');
    const counted = /(\d+) more retries of POST \/v1\/generations after 503/.exec(run.stderr);
    expect(counted, run.stderr).not.toBeNull();
    expect(Number(counted![1])).toBe(logged.length - 1);
  }, 120_000);
});
