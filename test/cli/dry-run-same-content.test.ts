/**
 * A dry run of files with the same content: a file whose bytes and recipe are those of another input
 * of the out dir that an earlier run did is said to be reused from it, and of two or more copies no run
 * did yet the first (in discovery order) is sent and each other one reused from it — none of them a
 * generation, so none priced. --redo-same-content sends every copy. Run through the CLI against an
 * emulator whose admin view proves the dry run sent nothing.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adminRows, useTestEmulator } from '../helpers/emulator.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const emu = useTestEmulator();
const promptFolder = usePromptFolders();

/** Generations the emulator created so far. */
async function generations(): Promise<number> {
  return (await adminRows(emu())).length;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON lines loosely
function jsonLines(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** `genpipe run input --out out --dry-run [extra]`, exit 0 expected. */
async function dryRun(input: string, out: string, extra: string[] = []) {
  const r = await runCli(['run', input, '--out', out, '--dry-run', ...extra], cliEnv(emu()), 60_000);
  expect(r.code, r.stderr).toBe(0);
  return r;
}

describe('a dry run of files with the same content', () => {
  it('copies no run did yet: the first is sent, the other reused from it and not priced; --redo-same-content sends each', async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a red fox, a copy',
      'b.txt': 'a red fox, a copy',
      'c.txt': 'a blue bird, alone',
    });
    const before = await generations();
    const r = await dryRun(input, out, ['--json']);
    const events = jsonLines(r.stdout);
    expect(events.map((e) => [e.type, e.input, e.outcome])).toEqual([
      ['dry_run_item', 'a.txt', 'send'],
      ['dry_run_item', 'b.txt', 'reuse'],
      ['dry_run_item', 'c.txt', 'send'],
      ['dry_run_finished', undefined, undefined],
    ]);
    expect(events[1]).toMatchObject({
      reason: 'reused: same content as a.txt (in this run)',
      generation_type: null,
      request: null,
    });
    // No journal yet: the entries carry no journal's note.
    expect(events[1].journal).toBeUndefined();
    expect(events[3]).toMatchObject({
      files: 3,
      outcomes: { send: 2, reuse: 1, fail: 0, skip: 0, done: 0, collect: 0 },
      generations: { image: 2 },
      cost: { credits: 2 },
    });

    const words = await dryRun(input, out);
    expect(words.stdout.split('\n')[2]).toBe(
      'b.txt: reused: same content as a.txt (in this run): nothing is sent',
    );
    expect(words.stderr).toContain(
      'genpipe: dry run: 3 files: 2 would be sent, 1 would be reused from the same content under another name, 0 would fail, 0 skipped; 1 ignored: 1 recipe file\n',
    );
    expect(words.stderr).toContain('genpipe: generations: 2 image (2 in all)\n');

    const redo = jsonLines((await dryRun(input, out, ['--json', '--redo-same-content'])).stdout);
    expect(redo.map((e) => e.outcome)).toEqual(['send', 'send', 'send', undefined]);
    expect(redo.at(-1)).toMatchObject({ outcomes: { send: 3, reuse: 0 }, generations: { image: 3 } });
    expect((await generations()) - before).toBe(0);

    // The run does what the dry run said: two generations, one of the pair reused from the other. Which
    // one goes first is the order the two files reach the journal, which a run's concurrency decides
    // (the dry run takes them one after the other); the reviewers' CI once saw a.txt reused from b.txt.
    const run = await runCli(['run', input, '--out', out], cliEnv(emu()), 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect((await generations()) - before).toBe(2);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    const pair = report.items.filter((i: { input: string }) => i.input === 'a.txt' || i.input === 'b.txt');
    const reused = pair.filter((i: { journal?: unknown }) => typeof i.journal === 'string');
    expect(reused, JSON.stringify(pair)).toHaveLength(1);
    const other = reused[0].input === 'a.txt' ? 'b' : 'a';
    expect(reused[0].journal).toMatch(new RegExp(`^reused: same content as ${other}\\.txt `));
  });

  it('after a real run: a copy of a done file is reused from it, a new pair sends once; a rename is said as such', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a lighthouse, done once' });
    const first = await runCli(['run', input, '--out', out], cliEnv(emu()), 60_000);
    expect(first.code, first.stderr).toBe(0);
    writeFileSync(join(input, 'b.txt'), 'a lighthouse, done once');
    writeFileSync(join(input, 'c.txt'), 'a harbour, new');
    writeFileSync(join(input, 'd.txt'), 'a harbour, new');
    const before = await generations();
    const events = jsonLines((await dryRun(input, out, ['--json'])).stdout);
    expect(events.map((e) => [e.input, e.outcome])).toEqual([
      ['a.txt', 'done'],
      ['b.txt', 'reuse'],
      ['c.txt', 'send'],
      ['d.txt', 'reuse'],
      [undefined, undefined],
    ]);
    expect(events[1].reason).toMatch(/^reused: same content as a\.txt \(done .* UTC, generation \S+\)$/);
    expect(events[1]).toMatchObject({ journal: { action: 'reuse', same_as: 'a.txt' }, request: null });
    expect(events[3]).toMatchObject({
      reason: 'reused: same content as c.txt (in this run)',
      journal: { action: 'reuse', same_as: 'c.txt' },
    });
    expect(events[4]).toMatchObject({ outcomes: { send: 1, reuse: 2, done: 1 }, generations: { image: 1 } });

    // Only the copy of the done file: nothing would be created.
    const copyOnly = await dryRun(input, out, ['--include', 'b.txt']);
    expect(copyOnly.stderr).toContain('genpipe: generations: none\n');
    expect(copyOnly.stderr).toContain('genpipe: estimated cost: 0 credits (no generation)\n');

    renameSync(join(input, 'a.txt'), join(input, 'renamed.txt'));
    const renamed = jsonLines((await dryRun(input, out, ['--json', '--include', 'renamed.txt'])).stdout);
    expect(renamed[0]).toMatchObject({ input: 'renamed.txt', outcome: 'reuse' });
    expect(renamed[0].reason).toMatch(/^renamed from a\.txt: its outputs reused/);
    expect((await generations()) - before).toBe(0);
    // The dry run wrote nothing: the report is the first run's.
    expect(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')).totals).toMatchObject({ inputs: 1 });
  });

  it("watch --dry-run: a copy found beside its twin is said in the watch's words, not a run's", async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a watched wren, a copy',
      'b.txt': 'a watched wren, a copy',
    });
    const child = spawnGenpipe(
      ['watch', input, '--out', out, '--dry-run', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
      cliEnv(emu()),
    );
    await child.until(
      (ev) => ev.filter((e) => e.type === 'dry_run_item').length === 2,
      'the dry run of both files',
    );
    child.proc.kill('SIGTERM');
    expect((await child.exited).code, child.stderr()).toBe(0);
    // The two settle in either order: the first found is sent, the other reuses it.
    const items = child.events.filter((e) => e.type === 'dry_run_item');
    const [first, second] = items.map((e) => e.input as string);
    expect([first, second].sort()).toEqual(['a.txt', 'b.txt']);
    expect(items.map((e) => [e.input, e.outcome])).toEqual([
      [first, 'send'],
      [second, 'reuse'],
    ]);
    expect(items[1]?.reason).toBe(`reused: same content as ${first} (in this session)`);
  }, 60_000);
});
