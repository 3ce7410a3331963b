/**
 * A generation in flight when a run died, whose file is processed again by the next run (its recipe
 * changed, its bytes changed, or --force): the earlier version's generation was paid for, so the next
 * run still collects it into the earlier version's folder, besides creating the new version's. Real
 * `genpipe run` children against an emulator whose hold keeps the first generation processing until
 * the first run is killed.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { hold, unhold } from '../helpers/emulator.ts';
import { recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import { envFor, generationsOf, runToEnd, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { noisePng } from './watch-helpers.ts';

const CLIENTS = ['recipe', 'bytes', 'force', 'chain', 'watch'] as const;
type ClientName = (typeof CLIENTS)[number];
const keyOf = (c: ClientName) => `svc-api-earlier-${c}`;

let emu: RunningEmulator;
let root: string;

useChildRunBed({ name: 'earlier', clients: CLIENTS, keyOf }, (bed) => ({ emu, root } = bed));

const recipe = (aspect: string) => `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "${aspect}" }
`;

/** A two-step chain from a PNG; `prompt` is the first step's. */
const chain = (prompt: string) => `rules:
  - match: "*.png"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "${prompt}" }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "slow pan", video: { resolution: 360p, start_frame: { from: stylize } } }
`;

// biome-ignore lint/suspicious/noExplicitAny: result.json read loosely
type Loose = any;

/** Runs `client`'s folder until a.txt's generation is submitted (held at the service), then SIGKILLs it. */
async function killWhileInFlight(client: ClientName): Promise<{ input: string; out: string; first: string }> {
  const { input, out } = await recipeFolder(root, client, recipe('1:1'), { 'a.txt': 'a lighthouse at dusk' });
  const held = await hold(emu, { client });
  const child = spawnGenpipe(runArgs(input, out), envFor(emu.url, keyOf(client)));
  await child.until(
    (ev) => ev.some((e) => e.type === 'item_state' && e.input === 'a.txt' && e.state === 'submitted'),
    'a.txt submitted',
  );
  child.proc.kill('SIGKILL');
  await child.exited;
  await unhold(emu, held);
  const gens = await generationsOf(emu, client);
  expect(gens).toHaveLength(1);
  return { input, out, first: gens[0]!.id };
}

/** The second run: exit 0, two generations in all, each version's outputs in its own folder. */
async function expectBothCollected(
  client: ClientName,
  dirs: { input: string; out: string; first: string },
  extra: string[] = [],
): Promise<void> {
  const second = await runToEnd(runArgs(dirs.input, dirs.out, extra), envFor(emu.url, keyOf(client)));
  expect(second.code, second.child.stderr()).toBe(0);
  const gens = await generationsOf(emu, client);
  expect(gens).toHaveLength(2);
  const earlier: Loose = await readJson(join(dirs.out, 'a.txt', 'result.json'));
  expect(earlier.state).toBe('completed');
  expect(earlier.generation_id).toBe(dirs.first);
  expect(earlier.outputs.length).toBeGreaterThan(0);
  expect(earlier.journal.reason).toContain(JOURNAL_TEXTS.earlierVersionCollected);
  const later: Loose = await readJson(join(dirs.out, 'a-1.txt', 'result.json'));
  expect(later.state).toBe('completed');
  expect(later.generation_id).toBe(gens.find((g) => g.id !== dirs.first)!.id);
  // Nothing is left to collect: a third run creates nothing.
  const third = await runToEnd(
    runArgs(
      dirs.input,
      dirs.out,
      extra.filter((a) => a !== '--force'),
    ),
    {
      ...envFor(emu.url, keyOf(client)),
    },
  );
  expect(third.code, third.child.stderr()).toBe(0);
  expect(await generationsOf(emu, client)).toHaveLength(2);
}

describe('a generation in flight when the run died, its file processed again by the next run', () => {
  it('is collected into its own folder when the recipe changed meanwhile', async () => {
    const dirs = await killWhileInFlight('recipe');
    await writeFile(join(dirs.input, 'genpipe.yaml'), recipe('16:9'));
    await expectBothCollected('recipe', dirs);
  }, 60_000);

  it('is collected into its own folder when the file changed meanwhile', async () => {
    const dirs = await killWhileInFlight('bytes');
    await writeFile(join(dirs.input, 'a.txt'), 'a lighthouse at dawn');
    await expectBothCollected('bytes', dirs);
  }, 60_000);

  it('is collected into its own folder with --force', async () => {
    const dirs = await killWhileInFlight('force');
    await expectBothCollected('force', dirs, ['--force']);
  }, 60_000);

  it("collects a chain's step in flight and sends none of its later steps for the earlier version", async () => {
    const { input, out } = await recipeFolder(root, 'chain', chain('watercolor'), {
      'a.png': await noisePng(64, 48),
    });
    const env = envFor(emu.url, keyOf('chain'));
    const held = await hold(emu, { client: 'chain' });
    const child = spawnGenpipe(runArgs(input, out), env);
    await child.until(
      (ev) => ev.some((e) => e.type === 'item_state' && e.input === 'a.png' && e.state === 'submitted'),
      'stylize submitted',
    );
    child.proc.kill('SIGKILL');
    await child.exited;
    await unhold(emu, held);
    const [first] = await generationsOf(emu, 'chain');
    await writeFile(join(input, 'genpipe.yaml'), chain('ink'));
    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    // The earlier version's stylize, then the newer version's two steps: nothing else.
    const gens = await generationsOf(emu, 'chain');
    expect(gens.map((g) => g.type).sort()).toEqual(['image_edit', 'image_edit', 'video']);
    const earlier: Loose = await readJson(join(out, 'a.png', 'result.json'));
    expect(earlier.steps.map((s: Loose) => [s.name, s.generation_id])).toEqual([['stylize', first!.id]]);
    expect(earlier.journal.reason).toContain(JOURNAL_TEXTS.earlierVersionCollected);
    const later: Loose = await readJson(join(out, 'a-1.png', 'result.json'));
    expect(later.steps.map((s: Loose) => s.name)).toEqual(['stylize', 'animate']);
  }, 60_000);

  it('is collected by a watch in the session that takes the file again', async () => {
    const { input, out } = await recipeFolder(root, 'watch', recipe('1:1'), {
      'a.txt': 'a lighthouse at dusk',
    });
    const env = envFor(emu.url, keyOf('watch'));
    const args = ['watch', input, '--out', out, '--json', '--poll-interval', '1'];
    const held = await hold(emu, { client: 'watch' });
    const first = spawnGenpipe(args, env);
    await first.until(
      (ev) => ev.some((e) => e.type === 'item_state' && e.input === 'a.txt' && e.state === 'submitted'),
      'a.txt submitted',
    );
    first.proc.kill('SIGKILL');
    await first.exited;
    await unhold(emu, held);
    const [gen] = await generationsOf(emu, 'watch');
    await writeFile(join(input, 'genpipe.yaml'), recipe('16:9'));
    const second = spawnGenpipe(args, env);
    const reportedAt = (place: string) => (ev: readonly { type: string; [k: string]: unknown }[]) =>
      ev.some((e) => e.type === 'item_state' && e.place === place && e.state === 'reported');
    await second.until(
      (ev) => reportedAt('a.txt')(ev) && reportedAt('a-1.txt')(ev),
      'both versions reported',
    );
    second.proc.kill('SIGINT');
    await second.exited;
    expect(await generationsOf(emu, 'watch')).toHaveLength(2);
    const earlier: Loose = await readJson(join(out, 'a.txt', 'result.json'));
    expect(earlier.generation_id).toBe(gen!.id);
    expect(earlier.journal.reason).toContain(JOURNAL_TEXTS.earlierVersionCollected);
  }, 60_000);
});
