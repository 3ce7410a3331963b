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
