/**
 * A file that changes after its check and its upload, while it waits for a job slot: real child
 * processes (`--concurrency 1`) against an emulator started here, whose hold keeps the other file's
 * job processing — so the slot stays taken — until the test has changed the waiting file. What the
 * create sends must be what was checked: the upload of the earlier bytes (or the text a prompt file
 * held) is not used, the upload is deleted at the service, and the file is processed again from the
 * start (`run`) or taken again once stable (`watch`). A file only touched goes on as it was.
 */
import { utimesSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import type { PipelineEvent } from '../../src/pipeline/events.ts';
import { INPUT_CHANGED_TEXTS } from '../../src/pipeline/input-changed.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import { runBatch } from '../../src/pipeline/runner.ts';
import { adminRows, heldGenerations, hold, unhold, until } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE, recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import { type ChildEvent, envFor, type GenpipeChild, lastStates, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { bufferHash, fileHash, noisePng } from './watch-helpers.ts';

const CLIENTS = ['png', 'txt', 'watch', 'touch'] as const;
type ClientName = (typeof CLIENTS)[number];
const keyOf = (c: ClientName) => `svc-api-waiting-${c}`;

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'waiting',
    clients: CLIENTS,
    keyOf,
    config: { queue_ms: 20, processing_ms: { image: 100, video: 200 } },
  },
  (bed) => ({ emu, root } = bed),
);

/** The events of `input` with `state`. */
const statesOf = (events: readonly ChildEvent[], input: string, state: string) =>
  events.filter((e) => e.type === 'item_state' && e.input === input && e.state === state);

/** The generations of `client` as the emulator recorded them, oldest first (request bodies included). */
const generationRecords = (client: ClientName) =>
  [...emu.app.emu.store.generations.values()]
    .filter((g) => g.clientId === client)
    .sort((a, b) => a.seq - b.seq);

/** The input uploads of `client` named `filename`, oldest first. */
const uploadsOf = (client: ClientName, filename: string) =>
  [...emu.app.emu.store.files.values()]
    .filter((f) => f.clientId === client && f.purpose === 'input' && f.filename === filename)
    .sort((a, b) => a.seq - b.seq);

/**
 * Waits until one of `inputs` has its job submitted (and held at the service) and the other one is
 * uploaded: with one job slot, it waits for that slot. Returns which is which.
 */
async function oneWaitingForTheSlot(
  child: GenpipeChild,
  client: ClientName,
  inputs: readonly [string, string],
): Promise<{ holder: string; waiting: string }> {
  await child.until((events) => {
    const states = [...inputs].map((i) => lastStates(events).get(i));
    return states.includes('submitted') && states.includes('uploaded');
  }, 'one job submitted and the other file uploaded');
  await heldGenerations(emu, 1, client);
  const last = lastStates(child.events);
  const holder = inputs.find((i) => last.get(i) === 'submitted')!;
  return { holder, waiting: inputs.find((i) => i !== holder)! };
}

describe('a file changed while it waited for a job slot (genpipe run)', () => {
  it('an upload made of the earlier bytes is not created from, and is deleted; the new bytes are', async () => {
    const first = { 'a.png': await noisePng(48, 48), 'b.png': await noisePng(44, 44) };
    const { input, out } = await recipeFolder(root, 'png', EDIT_OR_PROMPT_RECIPE, first);
    const holdId = await hold(emu, { client: 'png' });
    const child = spawnGenpipe(runArgs(input, out, ['--concurrency', '1']), envFor(emu.url, keyOf('png')));
    const { holder, waiting } = await oneWaitingForTheSlot(child, 'png', ['a.png', 'b.png']);
    const replacement = await noisePng(40, 40);
    await writeFile(join(input, waiting), replacement);
    await unhold(emu, holdId);
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(0);

    // Two generations: the holder's, and one of the replacement's own upload.
    expect(await adminRows(emu, 'png')).toHaveLength(2);
    const [earlier, again] = uploadsOf('png', waiting);
    expect(uploadsOf('png', waiting)).toHaveLength(2);
    expect(earlier!.state).toBe('deleted');
    expect(await fileHash(again!.blobPath!)).toBe(bufferHash(replacement));
    const sources = generationRecords('png').map((g) => g.request.source);
    expect(sources).toEqual([{ file_id: uploadsOf('png', holder)[0]!.id }, { file_id: again!.id }]);
    expect(statesOf(child.events, waiting, 'discovered').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.again,
    ]);
    const report = await readJson(join(out, 'report.json'));
    expect(report.items.map((i: { input: string; status: string }) => [i.input, i.status])).toEqual([
      ['a.png', 'succeeded'],
      ['b.png', 'succeeded'],
    ]);
  }, 60_000);

  it('a prompt file: the text it holds now is sent, not the text read at plan', async () => {
    const texts = { 'a.txt': 'a red fox in the snow', 'b.txt': 'a blue whale at sea' };
    const { input, out } = await recipeFolder(root, 'txt', EDIT_OR_PROMPT_RECIPE, texts);
    const holdId = await hold(emu, { client: 'txt' });
    const child = spawnGenpipe(runArgs(input, out, ['--concurrency', '1']), envFor(emu.url, keyOf('txt')));
    const { holder, waiting } = await oneWaitingForTheSlot(child, 'txt', ['a.txt', 'b.txt']);
    const now = `${texts[waiting as keyof typeof texts]}, at dusk`;
    await writeFile(join(input, waiting), now);
    await unhold(emu, holdId);
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(0);

    expect(await adminRows(emu, 'txt')).toHaveLength(2);
    expect(generationRecords('txt').map((g) => g.request.prompt)).toEqual([
      texts[holder as keyof typeof texts],
      now,
    ]);
    expect(statesOf(child.events, waiting, 'discovered').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.again,
    ]);
    const result = await readJson(join(out, waiting, 'result.json'));
    expect(result).toMatchObject({ status: 'succeeded', request: { prompt: now } });
  }, 60_000);
});

describe('a file changed while it waited for a job slot (genpipe watch)', () => {
  it('the earlier version ends not processed, its upload deleted; the new one is taken once stable', async () => {
    const first = { 'a.png': await noisePng(48, 48), 'b.png': await noisePng(44, 44) };
    const { input: inbox, out } = await recipeFolder(root, 'watch', EDIT_OR_PROMPT_RECIPE, first);
    const holdId = await hold(emu, { client: 'watch' });
    const args = ['watch', inbox, '--out', out, '--json', '--quiet-ms', '300', '--rescan-ms', '400'];
    const child = spawnGenpipe(
      [...args, '--concurrency', '1', '--poll-interval', '1'],
      envFor(emu.url, keyOf('watch')),
    );
    const { holder, waiting } = await oneWaitingForTheSlot(child, 'watch', ['a.png', 'b.png']);
    const replacement = await noisePng(40, 40);
    await writeFile(join(inbox, waiting), replacement);
    await unhold(emu, holdId);
    await child.until(
      (events) =>
        statesOf(events, waiting, 'reported').length === 1 &&
        statesOf(events, holder, 'reported').length === 1,
      'both files reported',
    );
    child.proc.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(0);

    expect(statesOf(child.events, waiting, 'stopped').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.watch,
    ]);
    expect(await adminRows(emu, 'watch')).toHaveLength(2);
    const [earlier, again] = uploadsOf('watch', waiting);
    expect(uploadsOf('watch', waiting)).toHaveLength(2);
    expect(earlier!.state).toBe('deleted');
    expect(await fileHash(again!.blobPath!)).toBe(bufferHash(replacement));
    const gens = generationRecords('watch');
    expect(gens.map((g) => g.request.source)).toEqual([
      { file_id: uploadsOf('watch', holder)[0]!.id },
      { file_id: again!.id },
    ]);
    const report = await until(async () => {
      const r = await readJson(join(out, 'report.json')).catch(() => null);
      return r?.totals.succeeded === 2 ? r : null;
    }, 10_000);
    // The report lists inputs by name: the new version in the changed file's place.
    const expected = [
      { input: holder, place: holder, status: 'succeeded', generation_id: gens[0]!.id },
      { input: waiting, place: waiting, status: 'succeeded', generation_id: gens[1]!.id },
    ].sort((x, y) => x.input.localeCompare(y.input));
    expect(report.items).toMatchObject(expected);
  }, 90_000);
});

describe('a file touched, not changed, after its upload (the runner)', () => {
  it('goes on: its upload is created from, nothing is processed again', async () => {
    const { input } = await recipeFolder(root, 'touch', EDIT_OR_PROMPT_RECIPE, {
      'a.png': await noisePng(48, 48),
    });
    const path = join(input, 'a.png');
    const events: PipelineEvent[] = [];
    const client = createClient({
      apiKey: keyOf('touch'),
      baseUrl: emu.url,
      polling: { intervalMs: 20, floorMs: 10 },
    });
    try {
      const result = await runBatch({
        inputDir: input,
        outDir: join(root, 'touch-out'),
        recipe: await loadRecipe({ inputDir: input }),
        client,
        reportIntervalMs: 0,
        keepItems: true,
        // The event of a transition is emitted before the runner goes on: touched before submit.
        onEvent: (e) => {
          events.push(e);
          if (e.type === 'item_state' && e.state === 'uploaded')
            utimesSync(path, new Date(), new Date(Date.now() + 60_000));
        },
      });
      expect(result.items.map((i) => i.state)).toEqual(['reported']);
    } finally {
      await client.close();
    }
    expect(events.some((e) => e.type === 'item_state' && e.state === 'discovered')).toBe(false);
    const uploads = uploadsOf('touch', 'a.png');
    expect(uploads.map((u) => u.state)).toEqual(['ready']);
    expect(generationRecords('touch').map((g) => g.request.source)).toEqual([{ file_id: uploads[0]!.id }]);
  }, 60_000);
});
