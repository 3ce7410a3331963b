/**
 * `genpipe watch --include/--exclude`: a child process watching an inbox against the embedded emulator;
 * a file the globs leave out is never taken, the others are processed, also those arriving later.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../helpers/emulator.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { cleanEnv, readJson } from '../pipeline/run-fixtures.ts';
import { put } from '../pipeline/stage-helpers.ts';

const RECIPE = `rules:
  - match: "**/*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
`;

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-select-watch-'));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

it('genpipe watch takes only the files --include matches and no --exclude does', async () => {
  const inbox = join(root, 'inbox');
  const out = join(root, 'out');
  await put(inbox, 'genpipe.yaml', RECIPE);
  await put(inbox, 'a.txt', 'a red fox');
  await put(inbox, 'b.txt', 'a blue bird');
  await put(join(inbox, 'raw'), 'c.txt', 'a green frog');
  const child = spawnGenpipe(
    [
      ...['watch', inbox, '--out', out, '--emulator', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
      ...['--include', '**/*.txt', '--exclude', 'raw/**', '--exclude', 'B.TXT'],
    ],
    cleanEnv(),
  );
  const reported = () => child.events.filter((e) => e.state === 'reported').map((e) => e.input);
  await until(async () => reported().includes('a.txt'), 30_000);
  // A file arriving later goes the same way: taken when included, never when excluded.
  await put(join(inbox, 'raw'), 'e.txt', 'a grey cat');
  await put(inbox, 'd.txt', 'a black dog');
  await until(async () => reported().includes('d.txt'), 30_000);
  child.proc.kill('SIGTERM');
  expect((await child.exited).code, child.stderr()).toBe(0);

  expect(reported().sort()).toEqual(['a.txt', 'd.txt']);
  expect(child.events.filter((e) => ['b.txt', 'raw/c.txt', 'raw/e.txt'].includes(e.input ?? ''))).toEqual([]);
  const report = await readJson(join(out, 'report.json'));
  expect(report.items.map((i: { input: string }) => i.input).sort()).toEqual(['a.txt', 'd.txt']);
}, 90_000);

it("genpipe watch's reports list what the inbox holds that is not an input, with why, as run's do", async () => {
  const inbox = join(root, 'inbox-ignored');
  const out = join(root, 'out-ignored');
  await put(inbox, 'genpipe.yaml', RECIPE);
  await put(inbox, 'a.txt', 'a red fox');
  await put(inbox, '.hidden.txt', 'a secret');
  await put(inbox, 'b.txt.part', 'still coming');
  await put(join(inbox, 'raw'), 'c.txt', 'a green frog');
  const child = spawnGenpipe(
    [
      ...['watch', inbox, '--out', out, '--emulator', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
      ...['--exclude', 'raw/**'],
    ],
    cleanEnv(),
  );
  await child.until((es) => es.some((e) => e.input === 'a.txt' && e.state === 'reported'), 'a.txt reported');
  child.proc.kill('SIGTERM');
  expect((await child.exited).code, child.stderr()).toBe(0);

  const report = await readJson(join(out, 'report.json'));
  expect(report.ignored.entries).toEqual([
    { input: '.hidden.txt', reason: 'hidden (name starts with a dot)' },
    { input: 'b.txt.part', reason: 'temporary file name' },
    { input: 'genpipe.yaml', reason: 'recipe file' },
    { input: 'raw', reason: "excluded by --exclude 'raw/**' (the whole folder, not looked into)" },
  ]);
  expect(report.ignored.total).toBe(4);
  expect(child.stderr()).toMatch(/1 file: 1 succeeded, 0 failed, 0 skipped; 4 ignored: /);
  const finished = child.events.find((e) => e.type === 'batch_finished') as { totals?: { ignored?: number } };
  expect(finished.totals?.ignored).toBe(4);
}, 90_000);
