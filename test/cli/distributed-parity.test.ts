/**
 * `genpipe run --store` (distributed: enqueued, worked on by the run's own worker, followed) and `genpipe
 * run` (the journal) on the same folder say the same: the same `--json` event types in the same order
 * for each file, the same closing totals, and a report.json with the same keys for each item. Against
 * the emulator over loopback and an embedded PostgreSQL.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { writePng } from '../client/client-helpers.ts';
import { PROMPT_OR_EDIT_ANY_DEPTH } from '../helpers/chain-recipe.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

const RECIPE = PROMPT_OR_EDIT_ANY_DEPTH;

const pg = usePostgres();
let emu: RunningEmulator;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-parity-'));
  emu = await startTestEmulator();
});
afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: events and reports are read loosely
type Json = any;

/** The `--json` lines of a run's stdout. */
function eventsOf(stdout: string): Json[] {
  return stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
}

/**
 * The event types of each file, in order, a run of one type said once (how many `item_state` events a
 * file gets depends on when it is looked at), and the batch's own events in order.
 */
function typesPerFile(events: Json[]): { batch: string[]; files: Record<string, string[]> } {
  const files: Record<string, string[]> = {};
  const batch: string[] = [];
  for (const e of events) {
    const list = e.input === undefined ? batch : (files[e.input] ?? []);
    if (e.input !== undefined) files[e.input] = list;
    if (list.at(-1) !== e.type) list.push(e.type);
  }
  return { batch, files };
}

/** Each file's last event: its state, its reason, whether it came from the journal, its keys. */
function finalEvents(events: Json[]): Record<string, Json> {
  const finals: Record<string, Json> = {};
  for (const e of events) {
    if (e.type !== 'item_state') continue;
    // Not the stage: a delegated file ran none here (the metrics count a process's own creates).
    const { at: _, stage, generation_id, request_id, ...said } = e;
    finals[e.input] = { ...said, keys: Object.keys(e).sort() };
  }
  return finals;
}

/** The keys of each report item (and of its steps), by input. */
function reportKeys(out: string): Record<string, { item: string[]; steps: string[][] }> {
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  const keys: Record<string, { item: string[]; steps: string[][] }> = {};
  for (const i of report.items as Json[]) {
    keys[i.input] = {
      item: Object.keys(i).sort(),
      steps: ((i.steps ?? []) as Json[]).map((s) => Object.keys(s).sort()),
    };
  }
  return keys;
}

describe('run --store and run on the same folder', () => {
  it('print the same event types per file in the same order and write report.json with the same keys per item', async () => {
    const input = join(root, 'in');
    await put(input, 'genpipe.yaml', RECIPE);
    await put(input, 'a.txt', 'a red fox in the snow');
    await put(input, 'b.txt', 'a blue bird on a wire');
    await put(input, 'empty.txt', '');
    await put(input, 'notes.md', '# notes');
    await writePng(join(input, 'photo.png'), 40, 30);
    await writePng(join(input, 'wide.png'), 64, 24);
    // A name that is not valid UTF-8: failed as it is found, no job (no worker could open it).
    await writeFile(
      Buffer.concat([Buffer.from(`${input}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]),
      'x',
    );
    const url = await pg.freshDatabase();

    const local = join(root, 'local');
    const store = join(root, 'store');
    const runLocal = () => runCli(['run', input, '--out', local, '--json'], cliEnv(emu), 120_000);
    const runStore = () =>
      runCli(['run', input, '--out', store, '--store', url, '--json'], cliEnv(emu), 120_000);
    await expectSameSay(await runLocal(), await runStore(), local, store);
    expect(readFileSync(join(store, 'empty.txt', 'result.json'), 'utf8')).toMatch(/file is empty/);
    // Again: the same words for what an earlier run did (done, failed and tried again, skipped).
    await expectSameSay(await runLocal(), await runStore(), local, store);
  }, 240_000);
});

/** Both runs exited 1 (empty.txt failed) and said the same (see the module comment). */
async function expectSameSay(
  local: { code: number | null; stdout: string; stderr: string },
  store: { code: number | null; stdout: string; stderr: string },
  localOut: string,
  storeOut: string,
): Promise<void> {
  expect(local.code, local.stderr).toBe(1);
  expect(store.code, store.stderr).toBe(1);
  expect(store.stderr).toMatch(/enqueued 6 files in the store's queue/);
  const localEvents = eventsOf(local.stdout);
  const storeEvents = eventsOf(store.stdout);
  const localTypes = typesPerFile(localEvents);
  const storeTypes = typesPerFile(storeEvents);
  expect(Object.keys(storeTypes.files).sort()).toEqual([
    'a.txt',
    'b.txt',
    "caf$'\\xe9'.txt",
    'empty.txt',
    'notes.md',
    'photo.png',
    'wide.png',
  ]);
  expect(storeTypes).toEqual(localTypes);
  expect(finalEvents(storeEvents)).toEqual(finalEvents(localEvents));
  expect(storeEvents.at(-1).totals).toEqual(localEvents.at(-1).totals);
  // Every state a file is shown in by the store's run is one the run alone shows it in, in its order.
  for (const input of Object.keys(storeTypes.files)) {
    const shownBy = (events: Json[]) =>
      events.filter((e) => e.input === input && e.type === 'item_state').map((e) => e.state);
    const all = shownBy(localEvents);
    let at = 0;
    for (const state of shownBy(storeEvents)) {
      const found = all.indexOf(state, at);
      expect(
        found,
        `${input}: ${state} not shown by run after ${all.slice(0, at).join(', ')}`,
      ).toBeGreaterThanOrEqual(0);
      at = found + 1;
    }
  }
  expect(reportKeys(storeOut)).toEqual(reportKeys(localOut));
}
