/**
 * A lost answer to an upload (POST /v1/files carried out, then its connection reset: the emulator's
 * faults.lose_answers) is not the file's fault: an upload costs nothing, so the client sends it again
 * within the run, and a run whose uploads all lost their answers leaves its files to the next run,
 * which retries them. The files those lost answers made at the service are found and deleted; the
 * texts speak of an upload, never of a job.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
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
function report(out: string): Promise<any> {
  return import('node:fs/promises').then(async (fs) =>
    JSON.parse(await fs.readFile(join(out, 'report.json'), 'utf8')),
  );
}

describe('a lost answer to an upload', () => {
  it('is sent again within the run; the uploads whose answers were lost are deleted', async () => {
    const { input, out } = await folder();
    await loseUploadAnswers(2);
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 60_000);
    expect(r.code, r.stderr).toBe(0);
    const rep = await report(out);
    expect(rep.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    // Two uploads made twice each at most: only the ones the generations used are left.
    const used = rep.items.map((i: { upload?: { file_id?: string } }) => i.upload?.file_id).filter(Boolean);
    const live = await liveFiles();
    expect(live.map((f) => f.filename).sort()).toEqual(['inline-a.png', 'presigned-b.png']);
    if (used.length > 0) expect(live.map((f) => f.id).sort()).toEqual([...used].sort());
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
    // Every upload whose answer was lost was found and deleted.
    expect(await liveFiles()).toEqual([]);

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
