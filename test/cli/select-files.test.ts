/**
 * `genpipe run --include/--exclude/--max-files` choose among the files discovery finds: child processes
 * against the embedded emulator (`--emulator`), checking which files were processed and what report.json
 * lists as ignored, with why; bad values exit 2 with a message naming the flag, before anything is written.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, readJson, runGenpipe } from '../pipeline/run-fixtures.ts';
import { put } from '../pipeline/stage-helpers.ts';

const RECIPE = `rules:
  - match: "**/*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
`;

let root: string;
const env = cleanEnv();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-select-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** A folder of prompts: a.txt, b.txt, c.md, keep/d.txt, raw/e.txt, raw/f.txt, .hidden.txt. */
async function folder(name: string): Promise<string> {
  const dir = join(root, name);
  await put(dir, 'genpipe.yaml', RECIPE);
  for (const f of ['a.txt', 'b.txt', 'c.md', '.hidden.txt']) await put(dir, f, `a fox called ${f}`);
  for (const f of ['d.txt']) await put(join(dir, 'keep'), f, `a fox called ${f}`);
  for (const f of ['e.txt', 'f.txt']) await put(join(dir, 'raw'), f, `a fox called ${f}`);
  return dir;
}

interface Report {
  items: Array<{ input: string; status: string }>;
  ignored: {
    total: number;
    by_reason: Record<string, number>;
    entries: Array<{ input: string; reason: string }>;
  };
}

async function run(name: string, flags: string[]): Promise<{ report: Report; stderr: string }> {
  const dir = await folder(name);
  const out = join(root, `${name}-out`);
  const r = await runGenpipe(['run', dir, '--out', out, '--emulator', '--quiet', ...flags], env);
  expect(r.code, r.stderr).toBe(0);
  return { report: await readJson(join(out, 'report.json')), stderr: r.stderr };
}

const inputs = (report: Report) => report.items.map((i) => i.input);
const ignoredOf = (report: Report) =>
  report.ignored.entries.filter((e) => e.reason !== 'recipe file' && !e.input.startsWith('.'));

describe('genpipe run --include / --exclude', () => {
  it('takes the files an --include matches and no --exclude does; the rest are ignored with why', async () => {
    const { report } = await run('incl-excl', [
      '--include',
      '**/*.txt',
      '--include',
      'c.MD',
      '--exclude',
      'raw/**',
      '--exclude',
      'b.txt',
    ]);
    expect(inputs(report)).toEqual(['a.txt', 'c.md', 'keep/d.txt']);
    // c.md is taken, and skipped by the recipe (no rule for it): the selection is not the recipe's.
    expect(report.items.map((i) => i.status)).toEqual(['succeeded', 'skipped', 'succeeded']);
    expect(ignoredOf(report)).toEqual([
      { input: 'b.txt', reason: "excluded by --exclude 'b.txt'" },
      // A folder an exclude leaves out entirely is not walked into: one entry for it.
      { input: 'raw', reason: "excluded by --exclude 'raw/**' (the whole folder, not looked into)" },
    ]);
    // Discovery's own skips keep their reason.
    expect(report.ignored.entries).toContainEqual({
      input: '.hidden.txt',
      reason: 'hidden (name starts with a dot)',
    });
  });

  it('a file no --include matches is ignored as such', async () => {
    const { report } = await run('incl-only', ['--include', './keep/*']);
    expect(inputs(report)).toEqual(['keep/d.txt']);
    expect(ignoredOf(report)).toEqual(
      ['a.txt', 'b.txt', 'c.md', 'raw/e.txt', 'raw/f.txt'].map((input) => ({
        input,
        reason: 'not matched by any --include',
      })),
    );
  });
});

describe('genpipe run --max-files', () => {
  it('takes the first n files in discovery order and lists the rest as beyond it', async () => {
    const { report, stderr } = await run('max', ['--max-files', '3', '--exclude', 'b.txt']);
    // Discovery order: names sorted in each folder, a subfolder's files at its place.
    expect(inputs(report)).toEqual(['a.txt', 'c.md', 'keep/d.txt']);
    expect(ignoredOf(report)).toEqual([
      { input: 'b.txt', reason: "excluded by --exclude 'b.txt'" },
      { input: 'raw/e.txt', reason: 'beyond --max-files 3' },
      { input: 'raw/f.txt', reason: 'beyond --max-files 3' },
    ]);
    expect(report.ignored.by_reason['beyond --max-files 3']).toBe(2);
    expect(stderr).toContain('2 beyond --max-files 3');
  });
});

describe('bad values', () => {
  it.each([
    [['--max-files', '0'], /--max-files <n>.*expected a whole number of at least 1/],
    [['--max-files', 'abc'], /--max-files <n>.*expected a whole number of at least 1/],
    [
      ['--include', '../x/*'],
      /--include '\.\.\/x\/\*': the glob is matched on the path relative to the input dir/,
    ],
    [['--exclude', '/abs/*'], /--exclude '\/abs\/\*': .*cannot start with \//],
    [['--exclude', ''], /--exclude needs a glob/],
  ])('%j: exit 2 with a message naming the flag, nothing written', async (flags, message) => {
    const dir = await folder(`bad-${flags.join('-').replace(/[^a-z0-9]/gi, '_')}`);
    const out = join(root, `bad-out-${flags.join('-').replace(/[^a-z0-9]/gi, '_')}`);
    const r = await runGenpipe(['run', dir, '--out', out, '--emulator', ...flags], env);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(existsSync(out)).toBe(false);
  });
});

describe('a name with a newline in it', () => {
  it('is taken by --include "photos/**" and by a rule matching "**"', async () => {
    const dir = join(root, 'newline');
    await put(dir, 'genpipe.yaml', RECIPE.replace('"**/*.txt"', '"**"'));
    await put(join(dir, 'photos'), 'new\nline.txt', 'a fox on two lines');
    await put(join(dir, 'photos'), 'plain.txt', 'a plain fox');
    await put(dir, 'outside.txt', 'a fox outside');
    const out = join(root, 'newline-out');
    const outcomes = async (flags: string[]) => {
      const r = await runGenpipe(
        ['run', dir, '--out', out, '--emulator', '--dry-run', '--json', ...flags],
        env,
      );
      expect(r.code, r.stderr).toBe(0);
      return r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; input?: string; outcome?: string })
        .filter((e) => e.type === 'dry_run_item')
        .map((e) => [e.input, e.outcome])
        .sort();
    };
    expect(await outcomes([])).toEqual([
      ['outside.txt', 'send'],
      ['photos/new\nline.txt', 'send'],
      ['photos/plain.txt', 'send'],
    ]);
    expect(await outcomes(['--include', 'photos/**'])).toEqual([
      ['photos/new\nline.txt', 'send'],
      ['photos/plain.txt', 'send'],
    ]);
  }, 60_000);
});
