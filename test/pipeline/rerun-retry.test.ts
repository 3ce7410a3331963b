/**
 * A re-run retries what failed for reasons that may pass now, and nothing else: with seeded
 * `generation_failed` faults a batch ends with some files failed; once the faults are cleared, a plain
 * re-run creates new generations for exactly those files (their uploads reused, nothing that succeeded
 * paid again) and all succeed. A failure that is the file's own (a moderated prompt) stays failed on a
 * plain re-run and is retried with --retry-failed only. --retries counts the resubmissions of each run.
 * Real `genpipe run` processes against the emulator, driven by `PUT /_emulator/faults`.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { call } from '../helpers/emulator.ts';
import { makeImage } from '../media/fixtures.ts';
import { EDIT_OR_PROMPT_RECIPE, runArgs, useChildRunBed } from './child-run.ts';
import { envFor, generationsOf, runToEnd } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const KEY = 'svc-api-retry-key';
const CLIENT = 'retry';
const FILES = Array.from({ length: 12 }, (_, i) => `img-${String(i).padStart(2, '0')}.png`);

const RECIPE = EDIT_OR_PROMPT_RECIPE;

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'retry',
    clients: [CLIENT],
    keyOf: () => KEY,
    config: {
      queue_ms: 20,
      processing_ms: { image: 100, video: 200 },
      blocked_words: ['forbidden'],
      seed: 7,
    },
  },
  (bed) => ({ emu, root } = bed),
);

const env = () => envFor(emu.url, KEY);
const faults = (json: unknown) => call(emu, 'PUT', '/_emulator/faults', { key: null, json });
const run = (input: string, out: string, extra: string[] = []) => runToEnd(runArgs(input, out, extra), env());
// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
type Loose = any;
const report = (out: string): Promise<Loose> => readJson(join(out, 'report.json'));
const byInput = (r: Loose): Record<string, Loose> =>
  Object.fromEntries(r.items.map((i: Loose) => [i.input, i]));

/** The journal counts a text states (the closing summary's `journal:` line, report.html's banner). */
function countsIn(text: string): Record<string, number> {
  const n = (re: RegExp) => Number(re.exec(text)?.[1] ?? 0);
  return {
    reused: n(/(\d+) already done in an earlier run/),
    resumed: n(/(\d+) resumed/),
    redone: n(/(\d+) redone/),
    retried: n(/(\d+) retried/),
    not_retried: n(/(\d+) failed in an earlier run and not retried/),
    unknown_outcome: n(/(\d+) failed with an unknown submission outcome/),
  };
}

/**
 * The journal's account of a run as the closing summary, report.html and report.json each give it;
 * expects the three to agree, and returns it.
 */
async function journalAccount(out: string, stderr: string): Promise<Record<string, number>> {
  const json = (await report(out)).journal;
  const fromJson = countsIn('');
  for (const k of Object.keys(fromJson)) fromJson[k] = json[k];
  const line = stderr.split('\n').find((l) => l.startsWith('genpipe: journal: '));
  expect(line, stderr).toBeDefined();
  const html = await readFile(join(out, 'report.html'), 'utf8');
  const banner = /<div class="banner journal">([\s\S]*?)<\/div>/.exec(html)?.[1];
  expect(banner).toBeDefined();
  expect(countsIn(line!)).toEqual(fromJson);
  expect(countsIn(banner!)).toEqual(fromJson);
  return fromJson;
}

const inputUploads = async () =>
  (await call(emu, 'GET', '/v1/files?purpose=input&limit=100', { key: KEY })).body.data.length;

describe('a re-run after retryable failures', () => {
  let input: string;
  let out: string;
  let failedFirst: string[];
  let firstGenerations: Record<string, string>;
  let firstRequests: Record<string, string>;

  beforeAll(async () => {
    input = join(root, 'twelve');
    out = join(root, 'twelve-out');
    await put(input, 'genpipe.yaml', RECIPE);
    for (const f of FILES) await makeImage(await put(input, f, ''), { width: 40, height: 24 });
  });

  it('ends the first run with some files failed with generation_failed', async () => {
    await faults({ failure_codes: { generation_failed: 0.4 } });
    try {
      const r = await run(input, out, ['--retries', '0']);
      expect(r.code, r.child.stderr()).toBe(1);
    } finally {
      await faults({});
    }
    const first = await report(out);
    const items = byInput(first);
    failedFirst = FILES.filter((f) => items[f].status === 'failed');
    // The seeded draw fails some of the 12 creates, not all (the same every time with seed 7).
    expect(failedFirst.length).toBeGreaterThan(0);
    expect(failedFirst.length).toBeLessThan(FILES.length);
    for (const f of failedFirst) expect(items[f].failure_code).toBe('generation_failed');
    expect(first.totals).toMatchObject({ inputs: 12, failed: failedFirst.length });
    firstGenerations = Object.fromEntries(FILES.map((f) => [f, items[f].generation_id]));
    firstRequests = {};
    for (const f of FILES) firstRequests[f] = (await readJson(join(out, f, 'result.json'))).request_id;
    expect(await generationsOf(emu, CLIENT)).toHaveLength(12);
    expect(await inputUploads()).toBe(12);
  }, 60_000);

  it('retries exactly the failed files once the faults are gone, and pays nothing again', async () => {
    const r = await run(input, out);
    expect(r.code, r.child.stderr()).toBe(0);
    const gens = await generationsOf(emu, CLIENT);
    // New generations only for the files that failed; their uploads were reused.
    expect(gens).toHaveLength(12 + failedFirst.length);
    expect(await inputUploads()).toBe(12);
    const after = await report(out);
    expect(after.totals).toMatchObject({ inputs: 12, succeeded: 12, failed: 0 });
    const items = byInput(after);
    const newIds = new Set(gens.slice(12).map((g) => g.id));
    const retried = JOURNAL_TEXTS.retried('generation_failed', 'retryable');
    expect(retried).toBe('retried: generation_failed in the earlier run (retryable)');
    const html = await readFile(join(out, 'report.html'), 'utf8');
    for (const f of FILES) {
      const result = await readJson(join(out, f, 'result.json'));
      if (failedFirst.includes(f)) {
        expect(newIds.has(items[f].generation_id), f).toBe(true);
        expect(items[f].journal).toBe(retried);
        expect(result.journal).toEqual({ action: 'resume', reason: retried, retried: true });
        // The failed generation the retry replaced is kept, in result.json, report.json and report.html.
        const earlier = [
          {
            generation_id: firstGenerations[f],
            request_id: firstRequests[f],
            failure_code: 'generation_failed',
            failure_reason: expect.any(String),
          },
        ];
        expect(result.earlier_attempts).toEqual(earlier);
        expect(items[f].earlier_attempts).toEqual(earlier);
        expect(html).toContain(
          `Earlier attempt: generation <span class="mono">${firstGenerations[f]}</span>`,
        );
      } else {
        expect(items[f].generation_id).toBe(firstGenerations[f]);
        expect(items[f].journal).toBe(JOURNAL_TEXTS.done);
        expect(result.earlier_attempts).toEqual([]);
        expect(items[f].earlier_attempts).toEqual([]);
      }
    }
    expect(after.journal).toMatchObject({
      retried: failedFirst.length,
      reused: 12 - failedFirst.length,
      resumed: 0,
      redone: 0,
    });
    await journalAccount(out, r.child.stderr());
    expect(r.child.stderr()).toContain(`${failedFirst.length} retried`);
    expect(html).toContain(`${failedFirst.length} retried`);
  }, 60_000);

  it('redoes nothing on a third run', async () => {
    const r = await run(input, out);
    expect(r.code, r.child.stderr()).toBe(0);
    expect(await generationsOf(emu, CLIENT)).toHaveLength(12 + failedFirst.length);
    expect((await report(out)).journal).toMatchObject({ retried: 0, reused: 12 });
  }, 60_000);
});

describe('a failure that is the file’s own', () => {
  let input: string;
  let out: string;
  let before: number;

  beforeAll(async () => {
    input = join(root, 'moderated');
    out = join(root, 'moderated-out');
    await put(input, 'genpipe.yaml', RECIPE);
    await put(input, 'calm.txt', 'a calm lake at dawn');
    await put(input, 'bad.txt', 'a forbidden door');
  });

  it('fails with content_moderated on the first run', async () => {
    before = (await generationsOf(emu, CLIENT)).length;
    const r = await run(input, out);
    expect(r.code, r.child.stderr()).toBe(1);
    const items = byInput(await report(out));
    expect(items['bad.txt']).toMatchObject({ status: 'failed', failure_code: 'content_moderated' });
    expect(items['calm.txt'].status).toBe('succeeded');
    expect(await generationsOf(emu, CLIENT)).toHaveLength(before + 2);
  }, 60_000);

  it('stays failed on a plain re-run, saying why and how to retry it', async () => {
    const r = await run(input, out);
    expect(r.code, r.child.stderr()).toBe(1);
    expect(await generationsOf(emu, CLIENT)).toHaveLength(before + 2);
    const after = await report(out);
    const items = byInput(after);
    expect(items['bad.txt'].status).toBe('failed');
    expect(items['bad.txt'].journal).toBe(JOURNAL_TEXTS.failedNotRetried('content_moderated'));
    expect(items['bad.txt'].journal).toContain('--retry-failed');
    // Done means succeeded: the file failed again is counted apart, alike in every account.
    expect(after.journal).toMatchObject({ retried: 0, reused: 1, not_retried: 1 });
    expect(await journalAccount(out, r.child.stderr())).toEqual({
      reused: 1,
      resumed: 0,
      redone: 0,
      retried: 0,
      not_retried: 1,
      unknown_outcome: 0,
    });
    expect(r.child.stderr()).toContain(
      'journal: 1 already done in an earlier run, 0 resumed, 0 redone, 0 retried, 1 failed in an earlier run and not retried',
    );
    // Nothing ran for it in this run: its event names no stage, and says it comes from the journal.
    const events = r.child.events.filter((e) => e.type === 'item_state' && e.input === 'bad.txt');
    expect(events.map((e) => [e.state, e.stage, e.from_journal, e.reason])).toEqual([
      ['sniffed', 'sniff', undefined, null],
      ['failed', null, true, JOURNAL_TEXTS.failedNotRetried('content_moderated')],
    ]);
  }, 60_000);

  it('says so in the plain progress lines too', async () => {
    const r = await runToEnd(['run', input, '--out', out, '--poll-interval', '1'], env());
    expect(r.code, r.child.stderr()).toBe(1);
    const lines = r.child.stdout().split('\n');
    const bad = lines.filter(
      (l) => / bad\.txt: /.test(l) && !l.endsWith(': sniffed') && !l.endsWith(': planned'),
    );
    expect(bad.map((l) => l.replace(/^\[[\d:]+\] /, ''))).toEqual([
      'bad.txt: discovered (16 B)',
      `bad.txt: ${JOURNAL_TEXTS.failedNotRetried('content_moderated')}`,
    ]);
    expect(lines).toContainEqual(expect.stringMatching(/ calm\.txt: already done in an earlier run$/));
  }, 60_000);

  it('is retried with --retry-failed, and only it', async () => {
    const r = await run(input, out, ['--retry-failed']);
    expect(r.code, r.child.stderr()).toBe(1);
    const gens = await generationsOf(emu, CLIENT);
    expect(gens).toHaveLength(before + 3);
    const after = await report(out);
    const items = byInput(after);
    expect(items['bad.txt'].generation_id).toBe(gens.at(-1)?.id);
    expect(items['bad.txt'].journal).toBe(JOURNAL_TEXTS.retried('content_moderated', 'flag'));
    expect(items['calm.txt'].journal).toBe(JOURNAL_TEXTS.done);
    expect(after.journal).toMatchObject({ retried: 1, reused: 1 });
  }, 60_000);
});

describe('a version that comes back after failing at the service', () => {
  const inputOf = (name: string) => join(root, name);
  const outOf = (name: string) => join(root, `${name}-out`);

  it('is that version again: a failure of its own is not sent again, and it stays in its own folder', async () => {
    const input = inputOf('back');
    const out = outOf('back');
    await put(input, 'genpipe.yaml', RECIPE);
    const before = (await generationsOf(emu, CLIENT)).length;

    await put(input, 'c.txt', 'a forbidden cow');
    const first = await run(input, out);
    expect(first.code, first.child.stderr()).toBe(1);
    const moderated = byInput(await report(out))['c.txt'];
    expect(moderated).toMatchObject({ place: 'c.txt', status: 'failed', failure_code: 'content_moderated' });

    await put(input, 'c.txt', 'a horse');
    const second = await run(input, out);
    expect(second.code, second.child.stderr()).toBe(0);
    expect(byInput(await report(out))['c.txt']).toMatchObject({
      place: 'c-1.txt',
      status: 'succeeded',
      journal: JOURNAL_TEXTS.contentChanged,
    });
    expect(await generationsOf(emu, CLIENT)).toHaveLength(before + 2);

    await put(input, 'c.txt', 'a forbidden cow');
    const third = await run(input, out);
    expect(third.code, third.child.stderr()).toBe(1);
    expect(await generationsOf(emu, CLIENT)).toHaveLength(before + 2);
    expect(byInput(await report(out))['c.txt']).toMatchObject({
      place: 'c.txt',
      status: 'failed',
      generation_id: moderated.generation_id,
      journal: JOURNAL_TEXTS.failedNotRetried('content_moderated'),
    });
    expect((await readJson(join(out, 'c-1.txt', 'result.json'))).status).toBe('succeeded');

    const fourth = await run(input, out, ['--retry-failed']);
    expect(fourth.code, fourth.child.stderr()).toBe(1);
    const gens = await generationsOf(emu, CLIENT);
    expect(gens).toHaveLength(before + 3);
    expect(byInput(await report(out))['c.txt']).toMatchObject({
      place: 'c.txt',
      generation_id: gens.at(-1)!.id,
      journal: JOURNAL_TEXTS.retried('content_moderated', 'flag'),
    });
  }, 90_000);

  it('is retried on its own when its failure may pass now', async () => {
    const input = inputOf('back-retry');
    const out = outOf('back-retry');
    await put(input, 'genpipe.yaml', RECIPE);
    const before = (await generationsOf(emu, CLIENT)).length;
    await put(input, 'r.txt', 'a quiet bay');
    await faults({ failure_codes: { generation_failed: 1 } });
    try {
      const first = await run(input, out, ['--retries', '0']);
      expect(first.code, first.child.stderr()).toBe(1);
    } finally {
      await faults({});
    }
    await put(input, 'r.txt', 'a busy bay');
    const second = await run(input, out);
    expect(second.code, second.child.stderr()).toBe(0);
    expect(byInput(await report(out))['r.txt'].place).toBe('r-1.txt');

    await put(input, 'r.txt', 'a quiet bay');
    const third = await run(input, out);
    expect(third.code, third.child.stderr()).toBe(0);
    const gens = await generationsOf(emu, CLIENT);
    expect(gens).toHaveLength(before + 3);
    expect(byInput(await report(out))['r.txt']).toMatchObject({
      place: 'r.txt',
      status: 'succeeded',
      generation_id: gens.at(-1)!.id,
      journal: JOURNAL_TEXTS.retried('generation_failed', 'retryable'),
    });
    expect((await readJson(join(out, 'r-1.txt', 'result.json'))).status).toBe('succeeded');
  }, 90_000);
});

describe('a retry whose earlier upload is gone', () => {
  it('uploads the file again instead of submitting a file_id the service no longer has', async () => {
    const input = join(root, 'gone');
    const out = join(root, 'gone-out');
    await put(input, 'genpipe.yaml', RECIPE);
    await makeImage(await put(input, 'pic.png', ''), { width: 40, height: 24 });
    await faults({ failure_codes: { generation_failed: 1 } });
    try {
      const first = await run(input, out, ['--retries', '0']);
      expect(first.code, first.child.stderr()).toBe(1);
    } finally {
      await faults({});
    }
    const fileId = (await readJson(join(out, 'pic.png', 'result.json'))).upload.file_id;
    expect((await call(emu, 'DELETE', `/v1/files/${fileId}`, { key: KEY })).status).toBeLessThan(300);
    const uploads = await inputUploads();
    const r = await run(input, out);
    expect(r.code, r.child.stderr()).toBe(0);
    const item = byInput(await report(out))['pic.png'];
    expect(item.status).toBe('succeeded');
    expect(item.journal).toBe(
      `${JOURNAL_TEXTS.retried('generation_failed', 'retryable')}; ${JOURNAL_TEXTS.uploadGone}`,
    );
    expect(await inputUploads()).toBe(uploads + 1);
  }, 60_000);
});

describe('--retries on a re-run', () => {
  it('counts the resubmissions of this run, not those of earlier runs', async () => {
    const input = join(root, 'retries');
    const out = join(root, 'retries-out');
    await put(input, 'genpipe.yaml', RECIPE);
    await put(input, 'one.txt', 'a quiet harbour');
    await faults({ failure_codes: { generation_failed: 1 } });
    try {
      const before = (await generationsOf(emu, CLIENT)).length;
      const first = await run(input, out, ['--retries', '1']);
      expect(first.code, first.child.stderr()).toBe(1);
      expect(await generationsOf(emu, CLIENT)).toHaveLength(before + 2);
      // The re-run retries it, and resubmits it once more within the run (--retries 1).
      const second = await run(input, out, ['--retries', '1']);
      expect(second.code, second.child.stderr()).toBe(1);
      expect(await generationsOf(emu, CLIENT)).toHaveLength(before + 4);
      expect(byInput(await report(out))['one.txt'].journal).toBe(
        JOURNAL_TEXTS.retried('generation_failed', 'retryable'),
      );
      // Every generation before the last one is among its earlier attempts, across both runs.
      const gens = (await generationsOf(emu, CLIENT)).slice(before);
      const result = await readJson(join(out, 'one.txt', 'result.json'));
      expect(result.generation_id).toBe(gens[3]!.id);
      expect(
        result.earlier_attempts.map((a: Loose) => [a.generation_id, a.request_id, a.failure_code]),
      ).toEqual(gens.slice(0, 3).map((g) => [g.id, g.request_id, 'generation_failed']));
    } finally {
      await faults({});
    }
  }, 60_000);
});
