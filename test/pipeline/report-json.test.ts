import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Item } from '../../src/pipeline/item.ts';
import { createRedactor } from '../../src/pipeline/progress/redact.ts';
import {
  buildReport,
  buildResultJson,
  elideInlineData,
  writeReportJson,
  writeResultJson,
} from '../../src/pipeline/report/index.ts';
import { batchItems, EARLIER_ATTEMPTS, INLINE_DATA, SECRET, T0 } from './report-fixtures.ts';

let outDir: string;
beforeAll(async () => {
  outDir = await mkdtemp(join(tmpdir(), 'genpipe-report-json-'));
});
afterAll(async () => {
  await rm(outDir, { recursive: true, force: true });
});

function byInput(items: Item[], input: string): Item {
  return items.find((i) => i.input === input)!;
}

describe('result.json', () => {
  it('elides inline base64 data wherever it sits in the request', () => {
    const req = {
      source: { data: 'abcd', media_type: 'image/png' },
      image_ref: [{ data: 'xy' }, { url: 'u' }],
    };
    expect(elideInlineData(req)).toEqual({
      source: { data: '<4 base64 characters elided>', media_type: 'image/png' },
      image_ref: [{ data: '<2 base64 characters elided>' }, { url: 'u' }],
    });
    expect(req.source.data).toBe('abcd');
  });

  it('has the item, the request as sent (data elided), the generation and the timings', async () => {
    const item = byInput(batchItems(), 'photos/a.jpg');
    const path = await writeResultJson(item, outDir);
    expect(path).toBe(join(outDir, 'photos', 'a.jpg', 'result.json'));
    const text = await readFile(path, 'utf8');
    expect(text).not.toContain(INLINE_DATA);
    const json = JSON.parse(text);
    expect(json).toEqual({
      input: 'photos/a.jpg',
      input_facts: { sha256: null, mime: 'image/png', bytes: 100, width: 16, height: 12, duration_s: null },
      place: 'photos/a.jpg',
      status: 'succeeded',
      item_state: 'reported',
      reason: null,
      failed_stage: null,
      request: {
        type: 'image_edit',
        model: 'uni-1',
        prompt: 'watercolor, soft light',
        source: { data: '<1234 base64 characters elided>', media_type: 'image/png' },
        image_ref: [{ file_id: 'f-ref' }, { data: '<4 base64 characters elided>', media_type: 'image/png' }],
      },
      request_sent: true,
      generation_id: 'gen-ok',
      request_id: 'req-ok',
      state: 'completed',
      failure_code: null,
      failure_reason: null,
      outputs: ['photos/a.jpg/output-0.png'],
      composite: null,
      layers: [],
      upload: { mode: 'base64', file_id: null },
      earlier_attempts: [],
      timings: {
        sniff: { started_at: new Date(T0).toISOString(), duration_ms: 5 },
        check: { started_at: new Date(T0 + 5).toISOString(), duration_ms: 7 },
        plan: { started_at: new Date(T0 + 12).toISOString(), duration_ms: 1 },
        upload: { started_at: new Date(T0 + 13).toISOString(), duration_ms: 27 },
        submit: { started_at: new Date(T0 + 40).toISOString(), duration_ms: 20 },
        wait: { started_at: new Date(T0 + 60).toISOString(), duration_ms: 1440 },
        download: { started_at: new Date(T0 + 1500).toISOString(), duration_ms: 100 },
        report: { started_at: new Date(T0 + 1600).toISOString(), duration_ms: 10 },
      },
    });
    // Written atomically: no scratch file is left beside it.
    expect(await readdir(join(outDir, 'photos', 'a.jpg'))).toEqual(['result.json']);
  });

  it('gives the service failure, the local failure and the layer stack', () => {
    const items = batchItems();
    const mod = buildResultJson(byInput(items, 'photos/moderated.jpg'));
    expect(mod.earlier_attempts).toEqual(EARLIER_ATTEMPTS);
    expect(mod).toMatchObject({
      status: 'failed',
      state: 'failed',
      failure_code: 'content_moderated',
      failure_reason: 'The prompt or an input image violated the content guidelines.',
      failed_stage: 'wait',
      timings: { wait: { duration_ms: 820 } },
    });
    const empty = buildResultJson(byInput(items, 'bad/empty.png'));
    expect(empty).toMatchObject({
      status: 'failed',
      state: null,
      failure_code: null,
      failure_reason: 'image could not be decoded: file is empty',
      reason: 'image could not be decoded: file is empty',
      failed_stage: 'check',
      request: null,
      request_sent: false,
      generation_id: null,
    });
    const stack = buildResultJson(byInput(items, 'photos/stack.png'));
    expect(stack.composite).toBe('photos/stack.png/composite.png');
    expect(stack.layers.map((l) => [l.index, l.alpha_hint, l.bounds?.x])).toEqual([
      [0, 'hard', 2],
      [1, 'none', 0],
    ]);
    const pending = buildResultJson(byInput(items, 'later/c.jpg'));
    expect(pending.timings.wait).toEqual({
      started_at: new Date(T0 + 2000).toISOString(),
      duration_ms: null,
    });
  });

  it('masks known secrets and key-shaped strings', () => {
    const prompt = byInput(batchItems(), 'prompts/sunset.txt');
    expect(JSON.stringify(buildResultJson(prompt))).not.toContain(SECRET);
    const withKey = { ...prompt, reason: 'token hunter2-long-secret leaked', state: 'failed' as const };
    const json = JSON.stringify(
      buildResultJson(withKey, { redact: createRedactor(['hunter2-long-secret']) }),
    );
    expect(json).not.toContain('hunter2-long-secret');
    expect(json).toContain('token [redacted] leaked');
  });
});

describe('report.json', () => {
  it('lists every input exactly once with its status, reason, generation and outputs', async () => {
    const items = batchItems();
    const finishedAt = T0 + 5000;
    // A later version of an item replaces the earlier one; order does not matter.
    const retried = { ...byInput(items, 'bad/empty.png') };
    const report = buildReport([...items].reverse().concat(retried), {
      startedAt: T0,
      finishedAt,
      stoppedEarly: { reason: 'Insufficient balance. Please add funds to continue.' },
    });
    await writeReportJson(outDir, report);
    const json = JSON.parse(await readFile(join(outDir, 'report.json'), 'utf8'));
    expect(json).toEqual(report);
    expect(json.started_at).toBe(new Date(T0).toISOString());
    expect(json.finished_at).toBe(new Date(finishedAt).toISOString());
    expect(json.stopped_early).toEqual({ reason: 'Insufficient balance. Please add funds to continue.' });
    const inputs = json.items.map((i: { input: string }) => i.input);
    expect(inputs).toEqual([...new Set(items.map((i) => i.input))].sort());
    expect(json.totals).toEqual({
      inputs: 10,
      succeeded: 4,
      failed: 3,
      skipped: 1,
      unprocessed: 2,
      pending: 0,
    });
    const line = (input: string) => json.items.find((i: { input: string }) => i.input === input);
    expect(line('photos/a.jpg')).toEqual({
      input: 'photos/a.jpg',
      place: 'photos/a.jpg',
      status: 'succeeded',
      reason: null,
      generation_id: 'gen-ok',
      outputs: ['photos/a.jpg/output-0.png'],
      composite: null,
      stage: null,
      failure_code: null,
      result: 'photos/a.jpg/result.json',
      earlier_attempts: [],
    });
    expect(line('photos/moderated.jpg')).toMatchObject({
      status: 'failed',
      reason: 'The prompt or an input image violated the content guidelines.',
      stage: 'wait',
      failure_code: 'content_moderated',
      generation_id: 'gen-mod',
      earlier_attempts: EARLIER_ATTEMPTS,
    });
    expect(line('notes/readme.md')).toMatchObject({
      status: 'skipped',
      reason: "no recipe rule matches 'notes/readme.md'",
      outputs: [],
    });
    expect(line('photos/stack.png')).toMatchObject({ composite: 'photos/stack.png/composite.png' });
    // Stopped items and items still in flight when the batch ended are unprocessed, with the stop reason.
    for (const input of ['later/b.jpg', 'later/c.jpg']) {
      expect(line(input)).toMatchObject({
        status: 'unprocessed',
        reason: 'not processed: the batch stopped early (insufficient balance)',
        result: null,
      });
    }
    expect(await readdir(outDir)).not.toContainEqual(expect.stringMatching(/\.tmp$/));
  });

  it('can be built while the batch runs: pending items, no finish time', () => {
    const report = buildReport(batchItems(), { startedAt: T0 });
    expect(report.finished_at).toBeNull();
    expect(report.stopped_early).toBeNull();
    expect(report.totals).toEqual({
      inputs: 10,
      succeeded: 4,
      failed: 3,
      skipped: 1,
      unprocessed: 1,
      pending: 1,
    });
    expect(report.items.find((i) => i.input === 'later/c.jpg')).toMatchObject({
      status: 'pending',
      reason: null,
    });
    const sum = report.totals.succeeded + report.totals.failed + report.totals.skipped;
    expect(sum + report.totals.unprocessed + report.totals.pending).toBe(report.totals.inputs);
  });

  it('never shows a secret', () => {
    const items = batchItems();
    const leaky = { ...byInput(items, 'bad/empty.png'), reason: `upload refused for key ${SECRET}` };
    const report = buildReport([...items, leaky], { startedAt: T0, finishedAt: T0 + 1 });
    expect(JSON.stringify(report)).not.toContain(SECRET);
    expect(report.items.find((i) => i.input === 'bad/empty.png')!.reason).toBe(
      'upload refused for key [redacted]',
    );
  });
});
