/**
 * The client's retry notes in a batch's default output: the first retry of a kind in full, the others
 * counted in one line (at the end here: the batch is shorter than the count interval); each in full in
 * the log file, and with -v.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetryNotes } from '../../src/cli/retry-notes.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, heldGenerations, hold, startTestEmulator, unhold, until } from '../helpers/emulator.ts';
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

describe('retry notes of status reads', () => {
  it('counts the retries of reads of different generations as one kind, by the route shape', async () => {
    const emu2 = await startTestEmulator({ queue_ms: 0, processing_ms: { image: 0, video: 0 } });
    try {
      const files = { 'a.txt': 'a read fox', 'b.txt': 'a read owl', 'c.txt': 'a read cat' };
      const { input, out } = promptFolder(files);
      const held = await hold(emu2, { prompt: '^a read ' });
      const log = join(dir, 'reads.log');
      const run = runCli(
        ['run', input, '--out', out, '--log-file', log, '--poll-interval', '1', '--no-verbose-for-tests'],
        cliEnv(emu2),
        90_000,
      );
      // Every job is at the service; from now on each status read's connection is reset until the test ends it.
      await heldGenerations(emu2, 3);
      await call(emu2, 'PUT', '/_emulator/faults', { key: null, json: { reset_before: 1 } });
      await unhold(emu2, held);
      await until(async () => {
        const lines = readFileSync(log, 'utf8').split('\n');
        const ids = new Set(
          lines.map((l) => /retrying GET \/v1\/generations\/(\S+)/.exec(l)?.[1]).filter(Boolean),
        );
        return ids.size === 3 && lines.filter((l) => /retrying GET/.test(l)).length >= 4;
      });
      await call(emu2, 'PUT', '/_emulator/faults', { key: null, json: { reset_before: 0 } });
      const r = await run;
      expect(r.code, r.stderr).toBe(0);
      const printed = r.stderr.split('\n').filter((l) => /retrying GET \/v1\/generations\//.test(l));
      expect(printed, r.stderr).toHaveLength(1);
      expect(r.stderr).toMatch(/\d+ more retr(y|ies) of GET \/v1\/generations\/\{id\} after /);
    } finally {
      await emu2.close();
    }
  }, 120_000);
});

describe("the pacer's holds", () => {
  it('are counted as one kind: the first printed in full, the others told as a count', () => {
    const printed: string[] = [];
    const recorded: string[] = [];
    const notes = new RetryNotes({ note: (t) => printed.push(t), record: (t) => recorded.push(t) });
    for (const ms of [1000, 1000, 950]) notes.note(`rate window full; holding creates for ${ms} ms`);
    notes.close();
    expect(printed).toEqual([
      'rate window full; holding creates for 1000 ms; further holds are counted (-v shows each)',
      '2 more holds of creates for the rate window',
    ]);
    expect(recorded).toHaveLength(2);
  });
});
