/**
 * `genpipe watch --on-done move --delete-empty-src-dirs`, as a user runs it: a folder of the inbox that
 * a moved file leaves empty is removed, up to (never including) the inbox itself; a folder that got a
 * new file while its input was processed stays. Without the flag the inbox's folders stay, as before;
 * the flag without `--on-done move` is refused.
 */
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { heldGenerations, hold, unhold, until } from '../helpers/emulator.ts';
import { useChildRunBed } from './child-run.ts';
import { envFor, lastStates, runToEnd, spawnGenpipe } from './resume-helpers.ts';
import { put } from './stage-helpers.ts';

const CLIENT = 'prune';
const KEY = 'svc-api-watch-prune';
const RECIPE = `rules:
  - match: "**/*.txt"
    input_as: prompt
    request: { type: image, model: uni-1 }
`;

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'watch-prune',
    clients: [CLIENT],
    keyOf: () => KEY,
    config: { queue_ms: 20, processing_ms: { image: 100 } },
  },
  (bed) => ({ emu, root } = bed),
);

const exists = (p: string | Buffer) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** The inbox's tree: every path under it, '/'-separated, folders ending in '/'. */
async function tree(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .map((e) => {
      const rel = join(e.parentPath, e.name).slice(dir.length + 1);
      return e.isDirectory() ? `${rel}/` : rel;
    })
    .sort();
}

describe('genpipe watch --delete-empty-src-dirs', () => {
  it('removes the folders moved files leave empty, never the inbox, never one that got a new file', async () => {
    const base = join(root, 'prune');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    // The recipe outside the inbox: once its files are moved, the inbox itself is empty, and stays.
    const recipe = await put(base, 'genpipe.yaml', RECIPE);
    await put(inbox, 'top.txt', 'a red fox');
    await put(inbox, 'trip/day1/a.txt', 'a green heron');
    await put(inbox, 'late/c.txt', 'a lighthouse at night');
    // late/c.txt's generation is held at the service until the folder got a new file.
    await hold(emu, { prompt: 'lighthouse' });
    const args = ['watch', inbox, '--out', out, '--recipe', recipe, '--json', '--quiet-ms', '200'];
    const child = spawnGenpipe(
      [...args, '--rescan-ms', '300', '--poll-interval', '1', '--on-done', 'move', '--delete-empty-src-dirs'],
      envFor(emu.url, KEY),
    );
    await heldGenerations(emu, 1, CLIENT);
    await until(
      async () => (await exists(join(base, 'processed', 'top.txt'))) && !(await exists(join(inbox, 'trip'))),
    );
    // A new file in late/ while c.txt is processed: no rule takes it, so it stays (and so does late/).
    await put(inbox, 'late/notes.md', 'shot at dusk');
    await unhold(emu);
    await until(async () => exists(join(base, 'processed', 'late', 'c.txt')));
    await child.until((events) => lastStates(events).get('late/c.txt') === 'reported', 'late/c.txt reported');
    child.proc.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(0);

    expect(await tree(inbox)).toEqual(['late/', 'late/notes.md']);
    expect(await tree(join(base, 'processed'))).toEqual([
      'late/',
      'late/c.txt',
      'top.txt',
      'trip/',
      'trip/day1/',
      'trip/day1/a.txt',
    ]);
  }, 90_000);

  it('keeps the inbox itself when its last file is moved away', async () => {
    const base = join(root, 'root');
    const inbox = join(base, 'inbox');
    const recipe = await put(base, 'genpipe.yaml', RECIPE);
    await put(inbox, 'only/one.txt', 'a grey owl');
    const child = spawnGenpipe(
      [
        ...['watch', inbox, '--out', join(base, 'out'), '--recipe', recipe, '--json', '--quiet-ms', '200'],
        ...['--rescan-ms', '300', '--poll-interval', '1', '--on-done', 'move', '--delete-empty-src-dirs'],
      ],
      envFor(emu.url, KEY),
    );
    await until(async () => exists(join(base, 'processed', 'only', 'one.txt')));
    await child.until(
      (events) => lastStates(events).get('only/one.txt') === 'reported',
      'only/one.txt reported',
    );
    child.proc.kill('SIGINT');
    expect((await child.exited).code, child.stderr()).toBe(0);
    expect(await tree(inbox)).toEqual([]);
    expect((await stat(inbox)).isDirectory()).toBe(true);
  }, 60_000);

  it('removes an emptied folder whose name is not valid UTF-8', async () => {
    const base = join(root, 'raw');
    const inbox = join(base, 'inbox');
    const recipe = await put(base, 'genpipe.yaml', RECIPE);
    await mkdir(inbox, { recursive: true });
    // dir\xe9/p.txt (Latin-1): refused at once, moved to failed/ under its own bytes.
    const dir = Buffer.concat([Buffer.from(`${inbox}/dir`), Buffer.from([0xe9])]);
    await mkdir(dir);
    await writeFile(Buffer.concat([dir, Buffer.from('/p.txt')]), 'a blue whale');
    const filed = Buffer.concat([
      Buffer.from(`${base}/failed/dir`),
      Buffer.from([0xe9, 0x2f]),
      Buffer.from('p.txt'),
    ]);
    const child = spawnGenpipe(
      [
        ...['watch', inbox, '--out', join(base, 'out'), '--recipe', recipe, '--json', '--quiet-ms', '200'],
        ...['--rescan-ms', '300', '--poll-interval', '1', '--on-done', 'move', '--delete-empty-src-dirs'],
      ],
      envFor(emu.url, KEY),
    );
    await until(async () => exists(filed));
    await child.until((events) => [...lastStates(events).values()].includes('failed'), 'p.txt failed');
    child.proc.kill('SIGINT');
    expect((await child.exited).code, child.stderr()).toBe(0);
    expect(await readdir(inbox)).toEqual([]);
  }, 60_000);

  it('without --on-done move, the flag is refused (exit 2)', async () => {
    const base = join(root, 'alone');
    await put(join(base, 'inbox'), 'genpipe.yaml', RECIPE);
    const r = await runToEnd(
      ['watch', join(base, 'inbox'), '--out', join(base, 'out'), '--delete-empty-src-dirs'],
      envFor(emu.url, KEY),
    );
    expect(r.code, r.child.stderr()).toBe(2);
    expect(r.child.stderr()).toContain('--delete-empty-src-dirs removes the folders --on-done move empties');
  }, 30_000);
});
