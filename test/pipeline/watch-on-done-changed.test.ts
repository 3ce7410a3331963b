/**
 * `genpipe watch --on-done move` when a file is rewritten while its earlier version is in flight: a
 * child process watching a temporary inbox against an emulator started here, whose hold keeps the
 * earlier version's job processing until the new version was handed over. The earlier version's
 * completion moves only a file that is still that version: the new bytes stay in the inbox (with a
 * note), are processed in their turn and moved when they are done.
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { ON_DONE_TEXTS } from '../../src/pipeline/watch/on-done.ts';
import { adminRows, heldGenerations, hold, unhold, until } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE, useChildRunBed } from './child-run.ts';
import { type ChildEvent, envFor, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const CLIENT = 'moved';
const KEY = 'svc-api-on-done-changed';

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'on-done-changed',
    clients: [CLIENT],
    keyOf: () => KEY,
    config: { queue_ms: 20, processing_ms: { image: 100, video: 200 } },
  },
  (bed) => ({ emu, root } = bed),
);

/** The events of `input` of `type`, or with `state`. */
const eventsOf = (events: readonly ChildEvent[], input: string, what: { type?: string; state?: string }) =>
  events.filter(
    (e) =>
      e.input === input &&
      (what.type === undefined || e.type === what.type) &&
      (what.state === undefined || e.state === what.state),
  );

const FINAL = new Set(['reported', 'failed', 'skipped']);

describe('genpipe watch --on-done move, a file rewritten while its earlier version is in flight', () => {
  it('leaves the newer bytes to their own completion, which moves them; nothing fails', async () => {
    const base = join(root, 'rewritten');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    await put(inbox, 'genpipe.yaml', EDIT_OR_PROMPT_RECIPE);
    const v1 = 'v1: a red fox in the snow';
    const v2 = 'v2: a grey owl on a branch, at night';
    const holdId = await hold(emu, { client: CLIENT, prompt: '^v1' });
    const args = ['watch', inbox, '--out', out, '--json', '--on-done', 'move'];
    const child = spawnGenpipe(
      [...args, '--quiet-ms', '300', '--rescan-ms', '400', '--poll-interval', '1'],
      envFor(emu.url, KEY),
    );
    await until(async () => child.stderr().includes('watching'), 15_000);
    await put(inbox, 'a.txt', v1);
    await heldGenerations(emu, 1, CLIENT);
    await writeFile(join(inbox, 'a.txt'), v2);
    // The new version is handed over (it waits for the earlier one's drive to end).
    await child.until(
      (events) => eventsOf(events, 'a.txt', { type: 'item_discovered' }).length === 2,
      'the new version of a.txt handed over',
    );
    await unhold(emu, holdId);
    await child.until(
      (events) => events.filter((e) => e.input === 'a.txt' && FINAL.has(e.state ?? '')).length === 2,
      'both versions of a.txt final',
    );
    expect(
      child.events.filter((e) => e.input === 'a.txt' && FINAL.has(e.state ?? '')).map((e) => e.state),
      child.stderr(),
    ).toEqual(['reported', 'reported']);
    // The new version's completion moves it; the earlier one's left it in the inbox, with a note.
    const processedDir = join(base, 'processed');
    await until(async () => (await readdir(processedDir).catch(() => [])).length === 1, 10_000);
    child.proc.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(0);

    expect(await readdir(processedDir)).toEqual(['a.txt']);
    expect(await readFile(join(processedDir, 'a.txt'), 'utf8')).toBe(v2);
    expect((await readdir(inbox)).sort()).toEqual(['genpipe.yaml']);
    expect(child.stderr().split(ON_DONE_TEXTS.leftChanged('a.txt'))).toHaveLength(2);

    // One generation of each version, each reported in its own place.
    const gens = await adminRows(emu, CLIENT);
    expect(gens).toHaveLength(2);
    const prompts = [...emu.app.emu.store.generations.values()]
      .sort((a, b) => a.seq - b.seq)
      .map((g) => g.request.prompt);
    expect(prompts).toEqual([v1, v2]);
    const report = await readJson(join(out, 'report.json'));
    expect(report.items).toMatchObject([
      { input: 'a.txt', place: 'a.txt', status: 'succeeded', generation_id: gens[0]!.id },
      { input: 'a.txt', place: 'a-1.txt', status: 'succeeded', generation_id: gens[1]!.id },
    ]);
  }, 90_000);
});
