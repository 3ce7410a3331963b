/**
 * Same content, never paid twice: a rename, a copy, a symlink, two copies in one batch — each file
 * whose bytes and recipe are those of another file of the out dir gets that file's outputs and sends
 * nothing. Counted in the emulator's admin view, run through the CLI as a user runs it.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/index.ts';
import { adminRows, testConfig, useTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const emu = useTestEmulator();
const promptFolder = usePromptFolders();

/** Generations the emulator created so far. */
async function generations(): Promise<number> {
  return (await adminRows(emu())).length;
}

/** `genpipe run input --out out` and its report.json. */
async function run(input: string, out: string, extra: string[] = []) {
  const r = await runCli(['run', input, '--out', out, ...extra], cliEnv(emu()), 60_000);
  expect(r.code, r.stderr).toBe(0);
  return { ...r, report: JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) };
}

function result(out: string, place: string) {
  return JSON.parse(readFileSync(join(out, place, 'result.json'), 'utf8'));
}

/** The output files of a place (its result.json's), each present. */
function outputsOf(out: string, place: string): string[] {
  const outputs = result(out, place).outputs as string[];
  for (const o of outputs) expect(existsSync(join(out, o)), o).toBe(true);
  return outputs;
}

describe('same content under another name', () => {
  it('two copies and a copy in a subfolder in one batch: one generation, each gets the outputs', async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a red fox, same content',
      'b.txt': 'a red fox, same content',
    });
    mkdirSync(join(input, 'sub'));
    writeFileSync(join(input, 'sub', 'c.txt'), 'a red fox, same content');
    const recipe = join(input, 'genpipe.yaml');
    writeFileSync(recipe, readFileSync(recipe, 'utf8').replace('"*.txt"', '"**/*.txt"'));
    const before = await generations();
    const { report, stderr, stdout } = await run(input, out, ['--no-verbose-for-tests']);
    expect((await generations()) - before).toBe(1);
    expect(report.totals).toMatchObject({ inputs: 3, succeeded: 3 });
    // A progress line per outcome: the copies say whose outputs they took, not just "succeeded".
    expect(
      stdout.match(/\] (a|b|sub\/c)\.txt: reused: same content as (a|b|sub\/c)\.txt \(done /g),
    ).toHaveLength(2);
    expect(stdout.match(/\.txt: succeeded$/gm)).toHaveLength(1);
    expect(report.journal.same_content).toBe(2);
    expect(stderr).toMatch(/2 reused from the same content under another name/);
    const outs = ['a.txt', 'b.txt', 'sub/c.txt'].map((p) => outputsOf(out, p));
    for (const o of outs) expect(o).toHaveLength(1);
    // Hard links: the same file, not a copy.
    const [a, b] = [statSync(join(out, outs[0]![0]!)), statSync(join(out, outs[1]![0]!))];
    expect(a.ino).toBe(b.ino);
    // One thumbnail for the three places' one output (keyed by the file, not its path).
    const thumbs = readFileSync(join(out, 'report.html'), 'utf8').match(/\.thumbs\/[0-9a-f]+\.(jpg|png)/g);
    expect(new Set(thumbs).size).toBe(1);
    expect(readdirSync(join(out, '.thumbs'))).toHaveLength(1);
    const reused = ['a.txt', 'b.txt', 'sub/c.txt'].map((p) => result(out, p).journal?.reason ?? null);
    expect(
      reused.filter((r) => /^reused: same content as (a|b|sub\/c)\.txt \(done .* UTC, generation /.test(r)),
    ).toHaveLength(2);
  });

  it('a rename, then a re-run: nothing sent, the outputs at the new place, said as renamed', async () => {
    const { input, out } = promptFolder({ 'old.txt': 'a lighthouse at dusk, renamed' });
    const before = await generations();
    await run(input, out);
    renameSync(join(input, 'old.txt'), join(input, 'new.txt'));
    const { report, stdout } = await run(input, out);
    // Every stage a line (-v): the reuse said once, as the file ends.
    expect(stdout.match(/new\.txt: renamed from old\.txt/g)).toHaveLength(1);
    expect((await generations()) - before).toBe(1);
    const item = report.items.find((i: { input: string }) => i.input === 'new.txt');
    expect(item.status).toBe('succeeded');
    expect(item.journal).toMatch(/^renamed from old\.txt: its outputs reused/);
    expect(outputsOf(out, 'new.txt')).toHaveLength(1);
    expect(result(out, 'new.txt').journal).toMatchObject({ action: 'reuse' });
    // Nothing was sent for it: the generation is the earlier file's.
    expect(result(out, 'new.txt')).toMatchObject({ request_sent: false, generation_id: expect.any(String) });
  });

  it('a rename beside a copy is said as a rename from the old name; the copy, whose own outputs were deleted, is never "renamed"', async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a harbour crane, renamed beside its copy',
      'b.txt': 'a harbour crane, renamed beside its copy',
    });
    const before = await generations();
    await run(input, out);
    renameSync(join(input, 'a.txt'), join(input, 'c.txt'));
    const second = await run(input, out);
    const journalOf = (report: { items: { input: string; journal?: string }[] }, input: string) =>
      report.items.find((i) => i.input === input)?.journal ?? '';
    expect(journalOf(second.report, 'c.txt')).toMatch(/^renamed from a\.txt: its outputs reused/);
    renameSync(join(input, 'c.txt'), join(input, 'd.txt'));
    for (const o of outputsOf(out, 'b.txt')) rmSync(join(out, o));
    const third = await run(input, out);
    expect(journalOf(third.report, 'd.txt')).toMatch(/^renamed from c\.txt: its outputs reused/);
    // b.txt keeps its name: it takes the outputs again, never as a file renamed. Which of the pair the
    // first run sent depends on its concurrency: a copy reuses them again, the one sent downloads its
    // own generation's outputs again (CI-65 saw b.txt sent).
    expect(journalOf(third.report, 'b.txt')).toMatch(
      /^(reused: same content as |resumed: downloading the outputs of generation \S+ again \(b\.txt\/output-0\.png is missing\))/,
    );
    expect(outputsOf(out, 'b.txt')).toHaveLength(1);
    expect((await generations()) - before).toBe(1);
  });

  it('a rename whose earlier generation the service no longer has: failed once, then a re-run sends it, as any file', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a tin robot, its generation forgotten' });
    const first = await startEmulator({ config: testConfig() });
    const port = Number(new URL(first.url).port);
    try {
      const r = await runCli(['run', input, '--out', out], cliEnv(first), 60_000);
      expect(r.code, r.stderr).toBe(0);
    } finally {
      await first.close();
    }
    // The service forgot it (a fresh emulator at the same address); the outputs deleted, the file renamed.
    const fresh = await startEmulator({ config: testConfig(), port });
    try {
      for (const o of outputsOf(out, 'a.txt')) rmSync(join(out, o));
      renameSync(join(input, 'a.txt'), join(input, 'b.txt'));
      const failed = await runCli(['run', input, '--out', out], cliEnv(fresh), 60_000);
      expect(failed.code, failed.stderr).toBe(1);
      expect(failed.stdout).toMatch(/b\.txt: failed at wait: generation \S+ is unknown to the service/);
      expect(await adminRows(fresh)).toHaveLength(0);
      const again = await runCli(['run', input, '--out', out], cliEnv(fresh), 60_000);
      expect(again.code, again.stdout + again.stderr).toBe(0);
      expect(await adminRows(fresh)).toHaveLength(1);
      expect(outputsOf(out, 'b.txt')).toHaveLength(1);
    } finally {
      await fresh.close();
    }
  });

  it('a symlink to a file of the folder is that file: nothing sent for it', async () => {
    const { input, out } = promptFolder({ 'hero.txt': 'a hero shot, linked' });
    symlinkSync(join(input, 'hero.txt'), join(input, 'hero-link.txt'));
    const before = await generations();
    const { report } = await run(input, out);
    expect((await generations()) - before).toBe(1);
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect(outputsOf(out, 'hero-link.txt')).toHaveLength(1);
  });

  it('outputs that cannot be linked or copied into the place: a local failure naming why, nothing sent, the next run links them', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a kettle, blocked place' });
    const recipe = join(input, 'genpipe.yaml');
    writeFileSync(recipe, readFileSync(recipe, 'utf8').replace('"*.txt"', '"**/*.txt"'));
    const before = await generations();
    await run(input, out);
    mkdirSync(join(input, 'sub'));
    writeFileSync(join(input, 'sub', 'b.txt'), 'a kettle, blocked place');
    // A file where the copy's folder would go: nothing can be written under it.
    writeFileSync(join(out, 'sub'), 'in the way');
    const r = await runCli(['run', input, '--out', out], cliEnv(emu()), 60_000);
    expect(r.code, r.stderr).toBe(1);
    expect((await generations()) - before).toBe(1);
    const failed = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')).items.find(
      (i: { input: string }) => i.input === 'sub/b.txt',
    );
    expect(failed.status).toBe('failed');
    expect(failed.reason).toMatch(
      /^the outputs of a\.txt \(same content\) could not be linked or copied here: .*ENOTDIR.*; nothing was sent, and the next run tries again$/,
    );
    rmSync(join(out, 'sub'));
    const { report } = await run(input, out);
    expect((await generations()) - before).toBe(1);
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect(outputsOf(out, 'sub/b.txt')).toHaveLength(1);
  });

  it('--redo-same-content sends a copy anyway; changed bytes or a changed recipe are new work', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a teapot, another take' });
    const before = await generations();
    await run(input, out);
    writeFileSync(join(input, 'b.txt'), 'a teapot, another take');
    await run(input, out, ['--redo-same-content']);
    expect((await generations()) - before).toBe(2);
    // Changed bytes: new work.
    writeFileSync(join(input, 'c.txt'), 'a teapot, another take!');
    await run(input, out);
    expect((await generations()) - before).toBe(3);
    // A changed recipe: new work for every file, each content once.
    const recipe = join(input, 'genpipe.yaml');
    writeFileSync(recipe, readFileSync(recipe, 'utf8').replace('"1:1"', '"16:9"'));
    writeFileSync(join(input, 'd.txt'), 'a teapot, another take');
    const { report } = await run(input, out);
    // a, b and d share their bytes (one generation); c has its own.
    expect((await generations()) - before).toBe(5);
    expect(report.journal.same_content).toBe(2);
  });

  it('the earlier outputs deleted: a rename collects the generation again, for free, not a new one', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a bridge in fog, deleted outputs' });
    const before = await generations();
    await run(input, out);
    rmSync(join(out, 'a.txt'), { recursive: true });
    renameSync(join(input, 'a.txt'), join(input, 'b.txt'));
    const { report } = await run(input, out);
    expect((await generations()) - before).toBe(1);
    expect(report.journal.same_content).toBe(1);
    expect(outputsOf(out, 'b.txt')).toHaveLength(1);
    const item = report.items.find((i: { input: string }) => i.input === 'b.txt');
    // A rename, said as one (a copy's would say `same content as a.txt: collecting its generation`).
    expect(item.journal).toMatch(/^renamed from a\.txt: collecting its generation /);
  });

  it("a copy's own folder deleted: linked again from the other file, still nothing sent for it", async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a lantern, copy folder deleted',
      'b.txt': 'a lantern, copy folder deleted',
    });
    const before = await generations();
    await run(input, out);
    const copy = result(out, 'b.txt').journal?.same_as ? 'b.txt' : 'a.txt';
    const other = copy === 'b.txt' ? 'a.txt' : 'b.txt';
    rmSync(join(out, copy), { recursive: true });
    const { report } = await run(input, out);
    expect((await generations()) - before).toBe(1);
    expect(outputsOf(out, copy)).toHaveLength(1);
    const again = result(out, copy);
    expect(again.request_sent).toBe(false);
    expect(again.journal.same_as).toBe(other);
    expect(report.journal.same_content).toBe(1);
    expect(report.journal.resumed ?? 0).toBe(0);
  });

  it('--force redoes each content once: copies within the run share the new result', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a forced kite', 'b.txt': 'a forced kite' });
    const before = await generations();
    await run(input, out);
    expect((await generations()) - before).toBe(1);
    const { report } = await run(input, out, ['--force']);
    expect((await generations()) - before).toBe(2);
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
  });

  it('a copy of a copy names the file whose generation made the outputs, not the copy', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a heron, copied twice' });
    const before = await generations();
    await run(input, out);
    const generation = result(out, 'a.txt').generation_id as string;
    writeFileSync(join(input, 'b.txt'), 'a heron, copied twice');
    await run(input, out);
    writeFileSync(join(input, 'c.txt'), 'a heron, copied twice');
    const { report } = await run(input, out);
    expect((await generations()) - before).toBe(1);
    const c = report.items.find((i: { input: string }) => i.input === 'c.txt');
    expect(c.journal).toBe(result(out, 'c.txt').journal.reason);
    expect(c.journal).toMatch(
      new RegExp(`^reused: same content as a\\.txt \\(done .* UTC, generation ${generation}\\)$`),
    );
    expect(result(out, 'c.txt').journal.same_as).toBe('a.txt');
  });
});
