/**
 * `genpipe run` with its journal, as a user re-runs it: a finished batch run again redoes nothing (no
 * new generation at the emulator, the report still lists every input once); a changed file or a changed
 * recipe redoes that item only (the shared reference's upload is reused); --force redoes everything;
 * --journal puts the journal elsewhere; a second runner on the same out dir and a journal on a network
 * filesystem are refused with exit 2 and the journal's own message.
 */
import { existsSync } from 'node:fs';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openRunJournal } from '../../src/cli/batch-setup.ts';
import { UsageError } from '../../src/cli/usage-error.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS, NetworkFilesystemError, openJournal } from '../../src/pipeline/store/sqlite/index.ts';
import { call } from '../helpers/emulator.ts';
import { makeImage } from '../media/fixtures.ts';
import { runArgs, useChildRunBed } from './child-run.ts';
import { envFor, generationsOf, runToEnd } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const KEY = 'svc-api-rerun-key';

const recipe = (prompt: string) => `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1 }
  - match: "*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "${prompt}", image_ref: [{ ref: style }] }
references:
  style: refs/style.png
`;

let emu: RunningEmulator;
let root: string;
let input: string;
let out: string;

useChildRunBed(
  {
    name: 'rerun',
    clients: ['rerun'],
    keyOf: () => KEY,
    config: { queue_ms: 20, processing_ms: { image: 200, video: 300 } },
  },
  (bed) => ({ emu, root } = bed),
);

beforeAll(async () => {
  input = join(root, 'in');
  out = join(root, 'out');
  await put(input, 'genpipe.yaml', recipe('watercolor'));
  await put(input, 'a.txt', 'a red fox');
  await put(input, 'b.txt', 'a blue bird');
  await makeImage(await put(input, 'photo.png', ''), { width: 48, height: 32 });
  await makeImage(await put(input, 'refs/style.png', ''), { width: 16, height: 16 });
});

const env = () => envFor(emu.url, KEY);
const args = (extra: string[] = []) => runArgs(input, out, extra);
// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
const report = (): Promise<any> => readJson(join(out, 'report.json'));
// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
const journalOf = (r: any) => Object.fromEntries(r.items.map((i: any) => [i.input, i.journal]));
const referenceUploads = async () =>
  (await call(emu, 'GET', '/v1/files?purpose=reference&limit=100', { key: KEY })).body.data.length;

describe('re-running a batch with its journal', () => {
  it('runs the batch once', async () => {
    const r = await runToEnd(args(), env());
    expect(r.code, r.child.stderr()).toBe(0);
    expect(await generationsOf(emu, 'rerun')).toHaveLength(3);
    expect(existsSync(join(out, '.genpipe', 'journal.db'))).toBe(true);
    expect(await referenceUploads()).toBe(1);
  }, 30_000);

  it('redoes nothing when run again, and still reports every input once', async () => {
    const before = await report();
    const r = await runToEnd(args(), env());
    expect(r.code, r.child.stderr()).toBe(0);
    expect(await generationsOf(emu, 'rerun')).toHaveLength(3);
    expect(r.child.events.filter((e) => e.state === 'submitted' || e.state === 'uploaded')).toEqual([]);
    const after = await report();
    expect(after.totals).toMatchObject({ inputs: 3, succeeded: 3, failed: 0 });
    expect(after.items.map((i: { generation_id: string }) => i.generation_id)).toEqual(
      before.items.map((i: { generation_id: string }) => i.generation_id),
    );
    expect(journalOf(after)).toEqual({
      'a.txt': JOURNAL_TEXTS.done,
      'b.txt': JOURNAL_TEXTS.done,
      'photo.png': JOURNAL_TEXTS.done,
    });
    expect(after.journal).toMatchObject({ reused: 3, resumed: 0, redone: 0 });
    expect(r.child.stderr()).toContain('journal: 3 already done in an earlier run');
  }, 30_000);

  it('redoes only the file whose content changed', async () => {
    await writeFile(join(input, 'b.txt'), 'a blue bird at dawn');
    const r = await runToEnd(args(), env());
    expect(r.code, r.child.stderr()).toBe(0);
    const gens = await generationsOf(emu, 'rerun');
    expect(gens).toHaveLength(4);
    const after = await report();
    expect(journalOf(after)).toEqual({
      'a.txt': JOURNAL_TEXTS.done,
      'b.txt': JOURNAL_TEXTS.contentChanged,
      'photo.png': JOURNAL_TEXTS.done,
    });
    expect(after.items.find((i: { input: string }) => i.input === 'b.txt').generation_id).toBe(gens[3]!.id);
  }, 30_000);

  it('redoes only the files whose recipe changed, reusing the shared reference upload', async () => {
    await writeFile(join(input, 'genpipe.yaml'), recipe('ink drawing'));
    const r = await runToEnd(args(), env());
    expect(r.code, r.child.stderr()).toBe(0);
    expect(await generationsOf(emu, 'rerun')).toHaveLength(5);
    expect(journalOf(await report())).toEqual({
      'a.txt': JOURNAL_TEXTS.done,
      'b.txt': JOURNAL_TEXTS.done,
      'photo.png': JOURNAL_TEXTS.recipeChanged,
    });
    expect(await referenceUploads()).toBe(1);
  }, 30_000);

  it('redoes everything with --force', async () => {
    const r = await runToEnd(args(['--force']), env());
    expect(r.code, r.child.stderr()).toBe(0);
    expect(await generationsOf(emu, 'rerun')).toHaveLength(8);
    const after = await report();
    expect(Object.values(journalOf(after))).toEqual([
      JOURNAL_TEXTS.forced,
      JOURNAL_TEXTS.forced,
      JOURNAL_TEXTS.forced,
    ]);
    expect(after.journal.redone).toBe(3);
    expect(await referenceUploads()).toBe(2);
  }, 30_000);
});

describe('where the journal lives, and when it is refused', () => {
  it('puts the journal at --journal PATH', async () => {
    const elsewhere = join(root, 'state', 'batch.db');
    const otherOut = join(root, 'out-journal-flag');
    const r = await runToEnd(runArgs(input, otherOut, ['--journal', elsewhere]), env());
    expect(r.code, r.child.stderr()).toBe(0);
    expect(existsSync(elsewhere)).toBe(true);
    // Only the out dir's runner lock stays in it.
    expect(await readdir(join(otherOut, '.genpipe'))).toEqual(['runner.lock']);
    expect((await readJson(join(otherOut, 'report.json'))).journal.file).toBe(elsewhere);
  }, 30_000);

  it('refuses a second runner on the same out dir with exit 2, sending nothing', async () => {
    const held = openJournal({ outDir: out });
    try {
      const before = (await generationsOf(emu, 'rerun')).length;
      const r = await runToEnd(args(['--force']), env());
      expect(r.code).toBe(2);
      expect(r.child.stderr()).toContain(`another genpipe (pid ${process.pid}`);
      expect(await generationsOf(emu, 'rerun')).toHaveLength(before);
    } finally {
      await held.close();
    }
  }, 30_000);

  it('refuses a journal on a network filesystem with exit 2 and the journal module message', () => {
    const mountInfo = '22 1 0:21 / / rw,relatime - nfs4 server:/export rw\n';
    let caught: unknown;
    try {
      openRunJournal({ outDir: join(root, 'nfs-out'), mountInfo });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(UsageError);
    expect((caught as UsageError).exitCode).toBe(2);
    const path = join(root, 'nfs-out', '.genpipe', 'journal.db');
    expect((caught as Error).message).toBe(
      new NetworkFilesystemError(path, { mountPoint: '/', fsType: 'nfs4', source: 'server:/export' }).message,
    );
    expect((caught as Error).message).toContain('--journal PATH');
    expect(existsSync(join(root, 'nfs-out'))).toBe(false);
  });
});
