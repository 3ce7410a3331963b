/**
 * `genpipe run --dry-run` and `genpipe watch --dry-run`, as a user runs them: child processes against an
 * emulator on loopback whose admin view proves that nothing was uploaded or submitted (no file, no
 * generation), with the out dir left as it was (not even created) and the journal not written. Each file
 * gets the request that would be sent or the reason a run would give (a local check's text is the
 * service's own), the generations are counted by type and priced from the emulator's configured costs
 * or a --price-list; a bad price list is refused naming the file and the line.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { imageTooManyPixelsDetail } from '../../src/spec/index.ts';
import { writePng } from '../client/client-helpers.ts';
import { PROMPT_OR_EDIT_ANY_DEPTH } from '../helpers/chain-recipe.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

const RECIPE = PROMPT_OR_EDIT_ANY_DEPTH;

/** Distinct prices, so that a sum says which ones were used. */
const COSTS = { image: 2, image_edit: 3, video: 10, video_edit: 10, video_reframe: 10 };

let emu: RunningEmulator;
let root: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-dry-run-'));
  emu = await startTestEmulator({ costs: COSTS });
  env = cliEnv(emu);
});

afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** A folder: a.txt, b.txt (prompts), photo.png (40x30), big.png (9000x30), notes.md (no rule). */
async function folder(name: string): Promise<{ input: string; out: string }> {
  const input = join(root, name);
  await put(input, 'genpipe.yaml', RECIPE);
  await put(input, 'a.txt', 'a red fox');
  await put(input, 'b.txt', 'a blue bird');
  await put(input, 'notes.md', '# notes');
  await writePng(join(input, 'photo.png'), 40, 30);
  await writePng(join(input, 'big.png'), 9000, 30);
  return { input, out: join(root, `${name}-out`) };
}

/** Nothing reached the emulator: no file, no generation, by its admin view and by the files list. */
async function expectNothingSent(): Promise<void> {
  const stats = (await call(emu, 'GET', '/_emulator/stats', { key: null })).body;
  expect(Object.values(stats.files as Record<string, number>).every((n) => n === 0)).toBe(true);
  expect(Object.values(stats.generations.agents as Record<string, number>).every((n) => n === 0)).toBe(true);
  expect((await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data).toEqual([]);
  expect((await call(emu, 'GET', '/v1/files')).body.data).toEqual([]);
}

/**
 * Every file under `dir` with its size, mtime and sha256: the same list, the same files. (A folder's own
 * mtime is left out: SQLite makes and removes its -wal / -shm files beside a journal it reads.)
 */
async function filesOf(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const name of (await readdir(join(dir, rel))).sort()) {
      const path = rel ? `${rel}/${name}` : name;
      const st = await lstat(join(dir, path));
      if (st.isDirectory()) await walk(path);
      else {
        const sha = createHash('sha256')
          .update(await readFile(join(dir, path)))
          .digest('hex');
        out.push(`${path} ${st.size} ${st.mtimeMs} ${sha}`);
      }
    }
  };
  await walk('');
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON lines loosely
function jsonLines(stdout: string): any[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('genpipe run --dry-run', () => {
  it('says what would be sent for each file and why the others would not, counts and prices the generations, and sends nothing', async () => {
    const { input, out } = await folder('plain');
    const r = await runCli(['run', input, '--out', out, '--dry-run'], env);
    expect(r.code, r.stderr).toBe(1); // big.png would fail its check
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe(`dry run of run: ${input} -> ${out}: nothing is uploaded or submitted`);
    expect(lines.slice(1)).toEqual([
      'a.txt: would send image (uni-1), the text as the prompt: {"type":"image","model":"uni-1","aspect_ratio":"1:1","prompt":"a red fox"}',
      'b.txt: would send image (uni-1), the text as the prompt: {"type":"image","model":"uni-1","aspect_ratio":"1:1","prompt":"a blue bird"}',
      // The service's own text for the position the file takes, as a run fails it at check.
      `big.png: would fail at check: ${imageTooManyPixelsDetail('source', 9000, 30)}`,
      'notes.md: skipped: matches no recipe rule',
      expect.stringMatching(
        /^photo\.png: would send image_edit \(uni-1\), the file uploaded inline \(\d+ B\): \{"type":"image_edit","model":"uni-1","prompt":"watercolor","source":\{"file_id":"<the file, uploaded inline>"\}\}$/,
      ),
    ]);
    expect(r.stderr).toContain(
      'genpipe: dry run: 5 files: 3 would be sent, 1 would fail, 1 skipped; 1 ignored: 1 recipe file\n',
    );
    expect(r.stderr).toContain('genpipe: generations: 2 image, 1 image_edit (3 in all)\n');
    expect(r.stderr).toContain(
      `genpipe: estimated cost: 7 credits (2 image × 2, 1 image_edit × 3), from the emulator's configured costs (${emu.url}/_emulator/costs)\n`,
    );
    await expectNothingSent();
    // The out dir is not even created: no journal, no lock, no report.
    expect(existsSync(out)).toBe(false);
  });

  it('--json: one line per file and a summary line; exit 0 when every file would be sent', async () => {
    const { input, out } = await folder('json');
    const r = await runCli(
      ['run', input, '--out', out, '--dry-run', '--json', '--exclude', 'big.png', '--max-files', '2'],
      env,
    );
    expect(r.code, r.stderr).toBe(0);
    const events = jsonLines(r.stdout);
    expect(events.map((e) => [e.type, e.input, e.outcome])).toEqual([
      ['dry_run_item', 'a.txt', 'send'],
      ['dry_run_item', 'b.txt', 'send'],
      ['dry_run_finished', undefined, undefined],
    ]);
    expect(events[0]).toMatchObject({
      stage: null,
      reason: null,
      generation_type: 'image',
      model: 'uni-1',
      media: 'prompt',
      request: { type: 'image', model: 'uni-1', aspect_ratio: '1:1', prompt: 'a red fox' },
    });
    expect(events[2]).toEqual({
      type: 'dry_run_finished',
      files: 2,
      outcomes: { send: 2, fail: 0, skip: 0, done: 0, collect: 0, reuse: 0 },
      generations: { image: 2 },
      references: [],
      cost: {
        credits: 4,
        source: `the emulator's configured costs (${emu.url}/_emulator/costs)`,
        unpriced: {},
      },
      // recipe file, big.png (--exclude), notes.md and photo.png (beyond --max-files 2)
      ignored: 4,
      interrupted: false,
    });
    await expectNothingSent();
  });

  it('a file that fails a local check: its --json line has the stage and the service detail', async () => {
    const { input, out } = await folder('fails');
    const r = await runCli(['run', input, '--out', out, '--dry-run', '--json', '--include', 'big.png'], env);
    expect(r.code, r.stderr).toBe(1);
    const [item, summary] = jsonLines(r.stdout);
    expect(item).toMatchObject({
      type: 'dry_run_item',
      input: 'big.png',
      outcome: 'fail',
      stage: 'check',
      reason: imageTooManyPixelsDetail('source', 9000, 30),
      request: null,
    });
    expect(summary).toMatchObject({ outcomes: { fail: 1, send: 0 }, generations: {}, cost: { credits: 0 } });
    await expectNothingSent();
  });

  it('--price-list prices the generations (YAML or JSON); a type it does not name is said to have no price', async () => {
    const { input, out } = await folder('prices');
    const yaml = join(root, 'prices.yaml');
    await writeFile(yaml, '# credits per generation\nimage: 0.5\nimage_edit: 4\n');
    const a = await runCli(['run', input, '--out', out, '--dry-run', '--price-list', yaml], env);
    expect(a.stderr).toContain(
      `genpipe: estimated cost: 5 credits (2 image × 0.5, 1 image_edit × 4), from the price list ${yaml}\n`,
    );
    const json = join(root, 'prices.json');
    await writeFile(json, JSON.stringify({ image: 1.25 }));
    const b = await runCli(['run', input, '--out', out, '--dry-run', '--json', '--price-list', json], env);
    const summary = jsonLines(b.stdout).at(-1);
    expect(summary.cost).toEqual({
      credits: 2.5,
      source: `the price list ${json}`,
      unpriced: { image_edit: 1 },
    });
    expect(b.stderr).toContain(
      `genpipe: estimated cost: at least 2.5 credits (2 image × 1.25), from the price list ${json}; no price there for 1 image_edit\n`,
    );
    await expectNothingSent();
  });

  it('an invalid price list is refused before anything runs: exit 2, naming the file, the line and the rule', async () => {
    const { input, out } = await folder('bad-prices');
    const bad = join(root, 'bad-prices.yaml');
    await writeFile(bad, 'image: 1\nvidoe: 10\nimage_edit: -2\n');
    const r = await runCli(['run', input, '--out', out, '--dry-run', '--price-list', bad], env);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      [
        'genpipe: the price list has 2 problems:',
        `${bad}:2: vidoe: not a generation type (types: image, image_edit, video, video_edit, video_reframe)`,
        `${bad}:3: image_edit: Expected a number of credits of at least 0 but received -2`,
        '',
      ].join('\n'),
    );
    const missing = await runCli(
      ['run', input, '--out', out, '--dry-run', '--price-list', join(root, 'nope.yaml')],
      env,
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(`genpipe: ${join(root, 'nope.yaml')}: cannot be read: no such file\n`);
    const without = await runCli(['run', input, '--out', out, '--price-list', bad], env);
    expect(without.code).toBe(2);
    expect(without.stderr).toBe(
      "genpipe: --price-list prices a dry run or the credits of a dashboard: add --dry-run or --dashboard\nRun 'genpipe run --help' for usage.\n",
    );
    await expectNothingSent();
    expect(existsSync(out)).toBe(false);
  });

  it('with a journal: says what a re-run would do with each file, and leaves the out dir and the journal as they were', async () => {
    const { input, out } = await folder('journal');
    const embedded = cliEnv(emu); // the real run goes to the embedded emulator: this one stays empty
    const first = await runCli(
      ['run', input, '--out', out, '--emulator', '--quiet', '--include', '*.txt'],
      embedded,
    );
    expect(first.code, first.stderr).toBe(0);
    await put(input, 'b.txt', 'a blue bird, singing');
    const before = await filesOf(out);
    const r = await runCli(
      ['run', input, '--out', out, '--emulator', '--dry-run', '--json', '--include', '*.txt'],
      embedded,
    );
    expect(r.code, r.stderr).toBe(0);
    const [a, b, summary] = jsonLines(r.stdout);
    expect(a).toMatchObject({
      input: 'a.txt',
      outcome: 'done',
      reason: 'already done in an earlier run',
      journal: { action: 'done' },
      from_journal: true,
      request: null,
    });
    expect(b).toMatchObject({
      input: 'b.txt',
      outcome: 'send',
      reason: 'the file changed since the last run: processed again',
      journal: { action: 'fresh' },
      request: { prompt: 'a blue bird, singing' },
    });
    expect(summary).toMatchObject({ outcomes: { send: 1, done: 1 }, generations: { image: 1 } });
    expect(r.stderr).toContain(
      "genpipe: estimated cost: 1 credit (1 image × 1), from the embedded emulator's costs\n",
    );
    expect(await filesOf(out)).toEqual(before);
    // The journal still says what it said: the real re-run does what the dry run said it would.
    const again = await runCli(
      ['run', input, '--out', out, '--emulator', '--json', '--include', '*.txt'],
      embedded,
    );
    expect(again.code, again.stderr).toBe(0);
    const finals = jsonLines(again.stdout).filter((e) => e.type === 'item_state' && e.input === 'a.txt');
    expect(finals.at(-1)).toMatchObject({ reason: 'already done in an earlier run', from_journal: true });
    await expectNothingSent();
  });
});

describe('the out dir of a running watch', () => {
  it('a dry run takes no lock: it runs beside the runner holding the out dir, reading its journal', async () => {
    const inbox = join(root, 'held');
    const out = join(root, 'held-out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    await put(inbox, 'a.txt', 'a red fox');
    const watch = spawnGenpipe(
      ['watch', inbox, '--out', out, '--emulator', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
      env,
    );
    try {
      await watch.until(
        (events) => events.some((e) => e.input === 'a.txt' && e.state === 'reported'),
        'a.txt reported by the watch',
      );
      const r = await runCli(['run', inbox, '--out', out, '--emulator', '--dry-run', '--json'], env);
      expect(r.code, r.stderr).toBe(0);
      expect(jsonLines(r.stdout).map((e) => [e.type, e.input, e.outcome])).toEqual([
        ['dry_run_item', 'a.txt', 'done'],
        ['dry_run_finished', undefined, undefined],
      ]);
    } finally {
      watch.proc.kill('SIGTERM');
    }
    expect((await watch.exited).code, watch.stderr()).toBe(0);
  }, 60_000);
});

describe('genpipe watch --dry-run', () => {
  it('evaluates the files present and each settled arrival, sends nothing, and exits 0 on SIGTERM', async () => {
    const inbox = join(root, 'inbox');
    const out = join(root, 'inbox-out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    await put(inbox, 'a.txt', 'a red fox');
    const child = spawnGenpipe(
      ['watch', inbox, '--out', out, '--dry-run', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
      env,
    );
    const told = (input: string) => () =>
      child.events.some((e) => e.type === 'dry_run_item' && e.input === input);
    await child.until(told('a.txt'), 'the dry run of a.txt');
    await put(inbox, 'c.txt', 'a green frog');
    await child.until(told('c.txt'), 'the dry run of c.txt');
    child.proc.kill('SIGTERM');
    expect((await child.exited).code, child.stderr()).toBe(0);
    const items = child.events.filter((e) => e.type === 'dry_run_item');
    expect(items.map((e) => [e.input, e.outcome])).toEqual([
      ['a.txt', 'send'],
      ['c.txt', 'send'],
    ]);
    expect(child.events.at(-1)).toMatchObject({
      type: 'dry_run_finished',
      files: 2,
      generations: { image: 2 },
      cost: { credits: 4 },
      interrupted: false,
    });
    expect(child.stderr()).toContain(
      'genpipe: nothing was uploaded or submitted, and nothing was written to the out dir or the journal\n',
    );
    await expectNothingSent();
    expect(existsSync(out)).toBe(false);
  }, 60_000);
});
