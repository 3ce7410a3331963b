/**
 * `genpipe run` and `genpipe watch` refuse an out dir (or a journal) that overlaps the input tree,
 * whatever the spelling: inside it, equal to it, the input inside the out dir, through a relative path
 * or a symbolic link. Child processes against an emulator on loopback: exit 2, a message naming both
 * paths, the input tree untouched and nothing sent.
 */
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows } from '../client/client-helpers.ts';
import { call, KEY, startTestEmulator } from '../helpers/emulator.ts';
import { cleanEnv, hashTree, runGenpipe } from '../pipeline/run-fixtures.ts';
import { put } from '../pipeline/stage-helpers.ts';

const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
`;

let emu: RunningEmulator;
let root: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  emu = await startTestEmulator();
  root = await mkdtemp(join(tmpdir(), 'genpipe-cli-paths-'));
  env = cleanEnv({ GENPIPE_API_KEY: KEY, GENPIPE_BASE_URL: emu.url });
});

afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** A folder `<root>/<name>/mine` holding a recipe and a prompt file; returns `<root>/<name>`. */
async function place(name: string): Promise<string> {
  const base = join(root, name);
  await put(join(base, 'mine'), 'genpipe.yaml', RECIPE);
  await put(join(base, 'mine'), 'a.txt', 'a red fox');
  return base;
}

/** Nothing reached the service: no file, no generation. */
async function expectNothingSent(): Promise<void> {
  expect(await adminRows(emu)).toEqual([]);
  expect((await call(emu, 'GET', '/v1/files?limit=100')).body.data).toEqual([]);
}

describe('genpipe run refuses overlapping input and out dirs', () => {
  it('an out dir inside the input dir, spelled relatively: exit 2 naming both, the input tree untouched', async () => {
    const base = await place('inside');
    const before = await hashTree(join(base, 'mine'));
    const r = await runGenpipe(['run', 'mine', '--out', 'mine/sub/o'], env, { cwd: base });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`the out dir ${join(base, 'mine', 'sub', 'o')} is inside the input dir`);
    expect(r.stderr).toContain(join(base, 'mine'));
    expect(await hashTree(join(base, 'mine'))).toBe(before);
    await expectNothingSent();
  });

  it('an out dir equal to the input dir, also through a symbolic link', async () => {
    const base = await place('same');
    await symlink(join(base, 'mine'), join(base, 'link'));
    const before = await hashTree(join(base, 'mine'));
    const same = await runGenpipe(['run', 'mine', '--out', './mine/'], env, { cwd: base });
    expect(same.code, same.stderr).toBe(2);
    expect(same.stderr).toContain('the out dir and the input dir are the same folder');
    const linked = await runGenpipe(['run', 'mine', '--out', 'link/out'], env, { cwd: base });
    expect(linked.code, linked.stderr).toBe(2);
    expect(linked.stderr).toContain(`the out dir ${join(base, 'link', 'out')}`);
    expect(linked.stderr).toContain(`(really ${join(base, 'mine', 'out')})`);
    expect(linked.stderr).toContain(`is inside the input dir ${join(base, 'mine')}`);
    expect(await hashTree(join(base, 'mine'))).toBe(before);
    await expectNothingSent();
  });

  it('an input dir inside the out dir', async () => {
    const base = await place('around');
    const before = await hashTree(join(base, 'mine'));
    const r = await runGenpipe(['run', join(base, 'mine'), '--out', base], env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`the input dir ${join(base, 'mine')} is inside the out dir ${base}`);
    expect(await hashTree(join(base, 'mine'))).toBe(before);
    await expectNothingSent();
  });

  it('a journal inside the input dir', async () => {
    const base = await place('journal');
    const before = await hashTree(join(base, 'mine'));
    const r = await runGenpipe(['run', 'mine', '--out', 'out', '--journal', 'mine/state/journal.db'], env, {
      cwd: base,
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(
      `the journal ${join(base, 'mine', 'state', 'journal.db')} is inside the input dir ${join(base, 'mine')}`,
    );
    expect(await hashTree(join(base, 'mine'))).toBe(before);
    await expectNothingSent();
  });

  it('a log file inside the input dir (it would be written among the inputs)', async () => {
    const base = await place('log-file');
    const before = await hashTree(join(base, 'mine'));
    for (const command of ['run', 'watch']) {
      const r = await runGenpipe([command, 'mine', '--out', 'out', '--log-file', 'mine/run.log'], env, {
        cwd: base,
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        `the log file ${join(base, 'mine', 'run.log')} is inside the ${command === 'run' ? 'input dir' : 'watched folder'} ${join(base, 'mine')}`,
      );
    }
    expect(await hashTree(join(base, 'mine'))).toBe(before);
    await expectNothingSent();
  });

  it('an out dir beside the input dir is fine', async () => {
    const base = await place('beside');
    await mkdir(join(base, 'out'));
    const r = await runGenpipe(['run', 'mine', '--out', 'out', '--poll-interval', '1'], env, { cwd: base });
    expect(r.code, r.stderr).toBe(0);
  });
});

describe('genpipe watch refuses the same overlaps as run', () => {
  it('an input dir inside the out dir: exit 2 naming both, before anything is written', async () => {
    const base = await place('watch-around');
    const before = await hashTree(base);
    const r = await runGenpipe(['watch', 'mine', '--out', '.'], env, { cwd: base });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`the watched folder ${join(base, 'mine')} is inside the out dir ${base}`);
    expect(await hashTree(base)).toBe(before);
  });

  it('--on-done move with the out dir processed/ or failed/ beside the inbox, or inside one: exit 2', async () => {
    const base = await place('watch-move');
    const before = await hashTree(base);
    const sent = (await adminRows(emu)).length;
    const cases = [
      ['processed', `the out dir ${join(base, 'processed')} is the folder --on-done move files inputs in`],
      ['failed', `the out dir ${join(base, 'failed')} is the folder --on-done move files inputs in`],
      [
        'processed/o',
        `the out dir ${join(base, 'processed', 'o')} is inside ${join(base, 'processed')}, the folder --on-done move files inputs in`,
      ],
    ];
    for (const [out, said] of cases) {
      const r = await runGenpipe(['watch', 'mine', '--out', out!, '--on-done', 'move'], env, {
        cwd: base,
        timeoutMs: 20_000,
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(said);
      expect(r.stderr).toContain('outputs and moved inputs would mix');
    }
    expect(await hashTree(base)).toBe(before);
    expect(await adminRows(emu)).toHaveLength(sent);
  });
});
