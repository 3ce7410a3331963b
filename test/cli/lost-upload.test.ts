/**
 * A lost answer to an upload (POST /v1/files carried out, then its connection reset: the emulator's
 * faults.lose_answers) is not the file's fault: an upload costs nothing, so the client sends it again
 * within the run, and a run whose uploads all lost their answers leaves its files to the next run,
 * which retries them. The files those lost answers made at the service are found and deleted; the
 * texts speak of an upload, never of a job.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { writePng } from '../client/client-helpers.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

const RECIPE = `rules:
  - match: "inline-*.png"
    input_as: source
    upload: inline
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
  - match: "presigned-*.png"
    input_as: source
    upload: presigned
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
`;

let emu: RunningEmulator;
let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-lost-upload-'));
  emu = await startTestEmulator();
});

afterEach(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function folder(): Promise<{ input: string; out: string }> {
  const input = join(root, 'in');
  await mkdir(input, { recursive: true });
  await put(input, 'genpipe.yaml', RECIPE);
  await writePng(join(input, 'inline-a.png'), 40, 30);
  await writePng(join(input, 'presigned-b.png'), 48, 32);
  return { input, out: join(root, 'out') };
}

async function loseUploadAnswers(n: number): Promise<void> {
  const r = await call(emu, 'PUT', '/_emulator/faults', {
    key: null,
    json: { lose_answers: { 'POST /v1/files': n } },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

/** The files at the service that are not deleted. */
async function liveFiles(): Promise<Array<{ id: string; filename: string; state: string }>> {
  const r = await call(emu, 'GET', '/v1/files?limit=100');
  expect(r.status).toBe(200);
  return r.body.data.filter((f: { state: string }) => f.state !== 'deleted');
}

// biome-ignore lint/suspicious/noExplicitAny: tests read reports loosely
async function report(out: string): Promise<any> {
  return JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
}

describe('a lost answer to an upload', () => {
  it('is sent again within the run; the uploads whose answers were lost are deleted', async () => {
    const { input, out } = await folder();
    await loseUploadAnswers(2);
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 60_000);
    expect(r.code, r.stderr).toBe(0);
    const rep = await report(out);
    expect(rep.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    // Both lost answers were spent, and their files made: four uploads, two of them deleted.
    const faults = await call(emu, 'GET', '/_emulator/faults', { key: null });
    expect(faults.body.lose_answers).toEqual({ 'POST /v1/files': 0 });
    const stats = await call(emu, 'GET', '/_emulator/stats', { key: null });
    expect(stats.body.files).toMatchObject({ ready: 2, deleted: 2 });
    // The uploads the generations used are all that is left at the service.
    const used: string[] = [];
    for (const item of rep.items) {
      const result = JSON.parse(await readFile(join(out, item.result), 'utf8'));
      used.push(result.upload.file_id);
    }
    const live = await liveFiles();
    expect(live.map((f) => f.filename).sort()).toEqual(['inline-a.png', 'presigned-b.png']);
    expect(live.map((f) => f.id).sort()).toEqual(used.sort());
    expect(`${r.stdout}\n${r.stderr}`).not.toMatch(/\bjob\b/);
  }, 90_000);

  it('that outlasts the retries fails the file for this run only: the next run uploads it again', async () => {
    const { input, out } = await folder();
    await loseUploadAnswers(1000);
    const first = await runCli(['run', input, '--out', out], cliEnv(emu), 60_000);
    expect(first.code).not.toBe(0);
    const failed = await report(out);
    expect(failed.totals).toMatchObject({ inputs: 2, failed: 2 });
    for (const item of failed.items) {
      expect(item.reason).toMatch(/upload/);
      expect(item.reason).not.toMatch(/\bjob\b/);
    }
    // Every upload whose answer was lost was found and deleted (the service's list shows none left).
    expect(await liveFiles()).toEqual([]);
    const stats = await call(emu, 'GET', '/_emulator/stats', { key: null });
    expect(stats.body.files.deleted).toBeGreaterThanOrEqual(2);
    expect(stats.body.files).toMatchObject({ pending: 0, ready: 0 });

    await loseUploadAnswers(0);
    const second = await runCli(['run', input, '--out', out], cliEnv(emu), 60_000);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout + second.stderr).not.toContain("the failure is the file's own");
    const done = await report(out);
    expect(done.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    for (const item of done.items)
      expect(item.journal).toBe('retried: upload answer lost in the earlier run (retryable)');
  }, 120_000);
});
