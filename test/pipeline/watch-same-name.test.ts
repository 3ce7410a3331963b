/**
 * Inputs that come back under a name already used, as a user of `genpipe watch --on-done move` drops
 * them: a child process watching a temporary inbox against an emulator started here (outside the
 * child). A different `scan.png` dropped after the first one finished gets an out folder of its own
 * (`out/scan-1.png/`) and an entry of its own in report.json; the first one's outputs are never
 * overwritten, nor is its result.json by a later file of that name that fails before it is planned. The
 * same bytes dropped again under the same name are recognised as done: nothing is uploaded or
 * submitted (the emulator's admin view counts the generations). And `genpipe run` on a
 * changed file keeps the outputs of the first run where they were.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { call, until } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE, runArgs, useChildRunBed } from './child-run.ts';
import { envFor, type GenpipeChild, generationsOf, runToEnd, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';
import { bufferHash, fileHash, noisePng } from './watch-helpers.ts';

const CLIENTS = ['differ', 'same', 'run', 'failed', 'keep'] as const;
const keyOf = (c: (typeof CLIENTS)[number]) => `svc-api-same-name-${c}`;

const RECIPE = EDIT_OR_PROMPT_RECIPE;

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'same-name',
    clients: CLIENTS,
    keyOf,
    config: { queue_ms: 20, processing_ms: { image: 100, video: 200 }, blocked_words: ['cow'] },
  },
  (bed) => ({ emu, root } = bed),
);

const watchArgs = (inbox: string, out: string, onDone: 'move' | 'keep' = 'move') => [
  'watch',
  inbox,
  '--out',
  out,
  '--json',
  '--on-done',
  onDone,
  '--quiet-ms',
  '300',
  '--rescan-ms',
  '400',
  '--poll-interval',
  '1',
];

interface ReportLine {
  input: string;
  place?: string;
  status: string;
  generation_id: string | null;
  outputs: string[];
  result: string | null;
  journal?: string | null;
}

// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
async function reportOf(out: string): Promise<any> {
  return readJson(join(out, 'report.json')).catch(() => null);
}

/** The files in processed/ beside the inbox. */
const processed = async (base: string) => (await readdir(join(base, 'processed')).catch(() => [])).sort();

/** Drops `bytes` into the inbox as `name` and waits until --on-done moved it: the n-th file of processed/. */
async function dropAndSettle(base: string, name: string, bytes: Buffer, n: number): Promise<void> {
  await put(join(base, 'inbox'), name, bytes);
  await until(async () => (await processed(base)).length === n, 30_000);
}

/** The files in failed/ beside the inbox. */
const failedDir = async (base: string) => (await readdir(join(base, 'failed')).catch(() => [])).sort();

/** Waits until the watch's running summary line (stderr) counts `done`, e.g. `2 done (2 succeeded, …)`. */
async function summarySays(child: GenpipeChild, done: string): Promise<void> {
  await until(async () => child.stderr().includes(` ${done} · `), 10_000).catch(() => {
    throw new Error(`the summary line never said '${done}'\nstderr:\n${child.stderr()}`);
  });
}

/** Uploads of input files the emulator received from a client. */
async function uploadCount(key: string): Promise<number> {
  const r = await call(emu, 'GET', '/v1/files?limit=100&purpose=input', { key });
  return (r.body.data as unknown[]).length;
}

async function stop(child: GenpipeChild): Promise<void> {
  child.proc.kill('SIGINT');
  const exit = await child.exited;
  expect(exit.code, child.stderr()).toBe(0);
}

describe('genpipe watch --on-done move, a name dropped again', () => {
  it('gives a different file of the same name its own out folder and report entry', async () => {
    const base = join(root, 'differ');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    const first = await noisePng(48, 48);
    const second = await noisePng(40, 40);
    const child = spawnGenpipe(watchArgs(inbox, out), envFor(emu.url, keyOf('differ')));
    await until(async () => child.stderr().includes('watching'), 15_000);

    await dropAndSettle(base, 'scan.png', first, 1);
    const firstOutput = join(out, 'scan.png', 'output-0.png');
    const firstOutputHash = await fileHash(firstOutput);
    const firstResult = await readFile(join(out, 'scan.png', 'result.json'), 'utf8');

    await dropAndSettle(base, 'scan.png', second, 2);
    expect(await processed(base)).toEqual(['scan-1.png', 'scan.png']);
    expect(bufferHash(await readFile(join(base, 'processed', 'scan-1.png')))).toBe(bufferHash(second));
    const gens = await generationsOf(emu, 'differ');
    expect(gens).toHaveLength(2);

    // The running summary counts the two inputs, as the report does.
    await summarySays(child, '2 done (2 succeeded, 0 failed, 0 skipped)');

    // The first result is untouched; the second has its own folder.
    expect(await fileHash(firstOutput)).toBe(firstOutputHash);
    expect(await readFile(join(out, 'scan.png', 'result.json'), 'utf8')).toBe(firstResult);
    expect(existsSync(join(out, 'scan-1.png', 'output-0.png'))).toBe(true);
    const secondResult = await readJson(join(out, 'scan-1.png', 'result.json'));
    expect(secondResult).toMatchObject({
      input: 'scan.png',
      place: 'scan-1.png',
      generation_id: gens[1]!.id,
      outputs: ['scan-1.png/output-0.png'],
    });

    // Both are in the report, each with its own place, outputs and result.
    const report = await until(async () => {
      const r = await reportOf(out);
      return r?.totals.succeeded === 2 ? r : null;
    }, 10_000);
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect(
      report.items.map((i: ReportLine) => ({
        input: i.input,
        place: i.place,
        generation_id: i.generation_id,
        outputs: i.outputs,
        result: i.result,
        journal: i.journal,
      })),
    ).toEqual([
      {
        input: 'scan.png',
        place: 'scan.png',
        generation_id: gens[0]!.id,
        outputs: ['scan.png/output-0.png'],
        result: 'scan.png/result.json',
        journal: null,
      },
      {
        input: 'scan.png',
        place: 'scan-1.png',
        generation_id: gens[1]!.id,
        outputs: ['scan-1.png/output-0.png'],
        result: 'scan-1.png/result.json',
        // the same watch: not "since the last run"
        journal: 'the file changed during this run: processed again',
      },
    ]);
    // report.html is written right after report.json.
    const html = await until(async () => {
      const page = await readFile(join(out, 'report.html'), 'utf8');
      return page.includes('scan-1.png/output-0.png') ? page : null;
    }, 10_000);
    expect(html).toContain('href="scan.png/output-0.png"');
    expect(html).toContain('href="scan-1.png/output-0.png"');
    expect(html).toContain('scan.png (out folder scan-1.png/)');

    // The first bytes again: the same distinct input as the first drop, done, nothing sent.
    const uploadsBefore = await uploadCount(keyOf('differ'));
    await dropAndSettle(base, 'scan.png', first, 3);
    expect(await generationsOf(emu, 'differ')).toHaveLength(2);
    expect(await uploadCount(keyOf('differ'))).toBe(uploadsBefore);
    expect(await fileHash(firstOutput)).toBe(firstOutputHash);
    const again = await until(async () => {
      const r = await reportOf(out);
      return r?.items[0]?.journal === JOURNAL_TEXTS.done ? r : null;
    }, 10_000);
    expect(again.items.map((i: ReportLine) => [i.place, i.generation_id])).toEqual([
      ['scan.png', gens[0]!.id],
      ['scan-1.png', gens[1]!.id],
    ]);

    // Not an image at all: it fails before the journal plans it, and its result.json goes beside the
    // others, not over the first one's.
    await put(inbox, 'scan.png', 'not an image');
    await until(async () => (await readdir(join(base, 'failed')).catch(() => [])).length === 1, 30_000);
    expect(await readFile(join(out, 'scan.png', 'result.json'), 'utf8')).toBe(firstResult);
    expect(await readJson(join(out, 'scan-2.png', 'result.json'))).toMatchObject({
      input: 'scan.png',
      place: 'scan-2.png',
      status: 'failed',
      failed_stage: 'plan',
    });
    const last = await until(async () => {
      const r = await reportOf(out);
      return r?.totals.failed === 1 ? r : null;
    }, 10_000);
    expect(last.items.map((i: ReportLine) => [i.input, i.place, i.status])).toEqual([
      ['scan.png', 'scan.png', 'succeeded'],
      ['scan.png', 'scan-1.png', 'succeeded'],
      ['scan.png', 'scan-2.png', 'failed'],
    ]);
    expect(await generationsOf(emu, 'differ')).toHaveLength(2);
    await summarySays(child, '3 done (2 succeeded, 1 failed, 0 skipped)');
    await stop(child);
    expect(child.stderr()).toContain('genpipe: 3 files: 2 succeeded, 1 failed, 0 skipped');
    expect((await readdir(out)).filter((n) => !n.startsWith('.')).sort()).toEqual([
      'report.html',
      'report.json',
      'scan-1.png',
      'scan-2.png',
      'scan.png',
    ]);
  }, 120_000);

  it('recognises the same bytes dropped again under the same name as done, sending nothing', async () => {
    const base = join(root, 'same');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    const bytes = await noisePng(48, 48);
    const child = spawnGenpipe(watchArgs(inbox, out), envFor(emu.url, keyOf('same')));
    await until(async () => child.stderr().includes('watching'), 15_000);

    await dropAndSettle(base, 'scan.png', bytes, 1);
    const gens = await generationsOf(emu, 'same');
    expect(gens).toHaveLength(1);
    const outputHash = await fileHash(join(out, 'scan.png', 'output-0.png'));
    expect(await uploadCount(keyOf('same'))).toBe(1);

    await dropAndSettle(base, 'scan.png', bytes, 2);
    expect(await processed(base)).toEqual(['scan-1.png', 'scan.png']);
    await child.until(
      (events) =>
        events.filter((e) => e.input === 'scan.png' && e.state === 'reported').length === 2 &&
        events.some((e) => e.input === 'scan.png' && e.reason === JOURNAL_TEXTS.done),
      'the second scan.png reported as done',
      10_000,
    );
    expect(await generationsOf(emu, 'same')).toHaveLength(1);
    expect(await uploadCount(keyOf('same'))).toBe(1);
    expect(await fileHash(join(out, 'scan.png', 'output-0.png'))).toBe(outputHash);
    const report = await until(async () => {
      const r = await reportOf(out);
      return r?.items[0]?.journal === JOURNAL_TEXTS.done ? r : null;
    }, 10_000);
    expect(report.items).toHaveLength(1);
    expect(report.items[0]).toMatchObject({
      input: 'scan.png',
      place: 'scan.png',
      status: 'succeeded',
      generation_id: gens[0]!.id,
    });
    await stop(child);
    expect(existsSync(join(out, 'scan-1.png'))).toBe(false);
  }, 120_000);
});

describe('genpipe watch, versions of a name that failed at the service', () => {
  it('keeps the folder and report entry of a failed version, and knows it when it comes back', async () => {
    const base = join(root, 'failed');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    const child = spawnGenpipe(watchArgs(inbox, out), envFor(emu.url, keyOf('failed')));
    await until(async () => child.stderr().includes('watching'), 15_000);

    // Both versions are moderated at the service (a blocked word): each one's generation was made.
    await put(inbox, 'x.txt', 'v1 a cow in a field');
    await until(async () => (await failedDir(base)).length === 1, 30_000);
    await put(inbox, 'x.txt', 'v2 another cow, at dusk');
    await until(async () => (await failedDir(base)).length === 2, 30_000);
    expect(await failedDir(base)).toEqual(['x-1.txt', 'x.txt']);
    const gens = await generationsOf(emu, 'failed');
    expect(gens.map((g) => g.state)).toEqual(['failed', 'failed']);

    // Each version keeps its own out folder and report entry.
    expect(await readJson(join(out, 'x.txt', 'result.json'))).toMatchObject({
      place: 'x.txt',
      status: 'failed',
      generation_id: gens[0]!.id,
      failure_code: 'content_moderated',
    });
    expect(await readJson(join(out, 'x-1.txt', 'result.json'))).toMatchObject({
      place: 'x-1.txt',
      status: 'failed',
      generation_id: gens[1]!.id,
      failure_code: 'content_moderated',
    });
    const report = await until(async () => {
      const r = await reportOf(out);
      return r?.totals.failed === 2 ? r : null;
    }, 10_000);
    expect(report.totals).toMatchObject({ inputs: 2, failed: 2 });
    expect(report.items.map((i: ReportLine) => [i.input, i.place, i.status, i.generation_id])).toEqual([
      ['x.txt', 'x.txt', 'failed', gens[0]!.id],
      ['x.txt', 'x-1.txt', 'failed', gens[1]!.id],
    ]);
    await summarySays(child, '2 done (0 succeeded, 2 failed, 0 skipped)');

    // The first version again: that version, failed for its own reason, not sent again.
    await put(inbox, 'x.txt', 'v1 a cow in a field');
    await until(async () => (await failedDir(base)).length === 3, 30_000);
    expect(await generationsOf(emu, 'failed')).toHaveLength(2);
    const again = await until(async () => {
      const r = await reportOf(out);
      return r?.items[0]?.journal === JOURNAL_TEXTS.failedNotRetried('content_moderated') ? r : null;
    }, 10_000);
    expect(again.items.map((i: ReportLine) => [i.place, i.status, i.generation_id])).toEqual([
      ['x.txt', 'failed', gens[0]!.id],
      ['x-1.txt', 'failed', gens[1]!.id],
    ]);
    await stop(child);
    expect(child.stderr()).toContain('genpipe: 2 files: 0 succeeded, 2 failed, 0 skipped');
  }, 120_000);
});

describe('genpipe watch --on-done keep, a file edited', () => {
  it('counts each version in the running summary, as the report does', async () => {
    const base = join(root, 'keep');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    const child = spawnGenpipe(watchArgs(inbox, out, 'keep'), envFor(emu.url, keyOf('keep')));
    await until(async () => child.stderr().includes('watching'), 15_000);
    await put(inbox, 'a.txt', 'a red fox');
    await child.until(
      (events) => events.some((e) => e.input === 'a.txt' && e.state === 'reported'),
      'a.txt reported',
    );
    await put(inbox, 'a.txt', 'a red fox at dusk');
    await child.until(
      (events) => events.filter((e) => e.input === 'a.txt' && e.state === 'reported').length === 2,
      'the edited a.txt reported',
    );
    expect(await generationsOf(emu, 'keep')).toHaveLength(2);
    await summarySays(child, '2 done (2 succeeded, 0 failed, 0 skipped)');
    const report = await until(async () => {
      const r = await reportOf(out);
      return r?.totals.succeeded === 2 ? r : null;
    }, 10_000);
    expect(report.items.map((i: ReportLine) => i.place)).toEqual(['a.txt', 'a-1.txt']);
    await stop(child);
    expect(child.stderr()).toContain('genpipe: 2 files: 2 succeeded, 0 failed, 0 skipped');
  }, 120_000);
});

describe('genpipe run, a file changed between runs', () => {
  it('puts the new result in a folder of its own and keeps the first outputs', async () => {
    const input = join(root, 'run-in');
    const out = join(root, 'run-out');
    await put(input, 'genpipe.yaml', RECIPE);
    await put(input, 'fox.txt', 'a red fox');
    await put(input, 'owl.txt', 'an owl');
    const env = envFor(emu.url, keyOf('run'));
    const args = runArgs(input, out);

    const first = await runToEnd(args, env);
    expect(first.code, first.child.stderr()).toBe(0);
    const firstOutputHash = await fileHash(join(out, 'fox.txt', 'output-0.png'));
    const firstResult = await readFile(join(out, 'fox.txt', 'result.json'), 'utf8');

    await writeFile(join(input, 'fox.txt'), 'a red fox at dusk');
    const second = await runToEnd(args, env);
    expect(second.code, second.child.stderr()).toBe(0);
    const gens = await generationsOf(emu, 'run');
    expect(gens).toHaveLength(3);
    expect(await fileHash(join(out, 'fox.txt', 'output-0.png'))).toBe(firstOutputHash);
    expect(await readFile(join(out, 'fox.txt', 'result.json'), 'utf8')).toBe(firstResult);
    const report = await reportOf(out);
    expect(report.items.map((i: ReportLine) => [i.input, i.place, i.outputs, i.journal])).toEqual([
      ['fox.txt', 'fox-1.txt', ['fox-1.txt/output-0.png'], JOURNAL_TEXTS.contentChanged],
      ['owl.txt', 'owl.txt', ['owl.txt/output-0.png'], JOURNAL_TEXTS.done],
    ]);
    expect(report.items[0].generation_id).toBe(gens[2]!.id);

    // Run again unchanged: nothing redone, the new folder is the one reported.
    const third = await runToEnd(args, env);
    expect(third.code, third.child.stderr()).toBe(0);
    expect(await generationsOf(emu, 'run')).toHaveLength(3);
    expect((await reportOf(out)).items.map((i: ReportLine) => [i.place, i.journal])).toEqual([
      ['fox-1.txt', JOURNAL_TEXTS.done],
      ['owl.txt', JOURNAL_TEXTS.done],
    ]);
  }, 90_000);
});
