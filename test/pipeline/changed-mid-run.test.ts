/**
 * A file that changes after it was checked and before it is sent, with real child processes against an
 * emulator started here, through the test proxy (resume-helpers.ts) that holds uploads: the recipe's
 * shared reference is uploaded by the first item that reaches the upload stage, so holding that upload
 * holds the item after its check and before its own bytes are read or sent. The test changes the file
 * then, and releases the upload. What travels must be what was checked and journaled: a changed file is
 * checked again (and fails locally when it breaks a limit) and its output is recorded under the content
 * hash it was made from; nothing is paid for bytes that were not checked.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { appendFile, open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import type { PipelineEvent } from '../../src/pipeline/events.ts';
import { INPUT_CHANGED_TEXTS } from '../../src/pipeline/input-changed.ts';
import { stepOf } from '../../src/pipeline/item.ts';
import { plainLine } from '../../src/pipeline/progress/plain.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import { RUN_DEFAULTS, runBatch } from '../../src/pipeline/runner.ts';
import { JOURNAL_TEXTS, openJournal } from '../../src/pipeline/store/sqlite/index.ts';
import { call, until } from '../helpers/emulator.ts';
import { flatView } from '../helpers/item-patch.ts';
import { recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import {
  type ChildEvent,
  envFor,
  type GenpipeChild,
  lastStates,
  runToEnd,
  type SlowProxy,
  spawnGenpipe,
} from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';
import { bufferHash, noisePng } from './watch-helpers.ts';

const CLIENTS = ['toolarge', 'replaced', 'presigned', 'midstream', 'grown', 'watch', 'runner'] as const;
type ClientName = (typeof CLIENTS)[number];
const keyOf = (c: ClientName) => `svc-api-changed-${c}`;

/** Every PNG is an image_edit source, with the shared reference `style` as its image_ref. */
const recipe = (upload: 'base64' | 'presigned', ref = true) => `rules:
  - match: "*.png"
    input_as: source
    upload: ${upload}
    request: { type: image_edit, model: uni-1, prompt: "watercolor"${ref ? ', image_ref: [{ ref: style }]' : ''} }
${ref ? 'references:\n  style: refs/style.png\n' : ''}`;

let emu: RunningEmulator;
let proxy: SlowProxy;
let root: string;

useChildRunBed(
  {
    name: 'changed',
    clients: CLIENTS,
    keyOf,
    config: { queue_ms: 20, processing_ms: { image: 100, video: 200 } },
    proxy: true,
  },
  (bed) => ({ emu, proxy, root } = bed),
);

/** A folder with the recipe, the reference and `files`; returns it and its out dir. */
async function folder(name: string, yaml: string, files: Record<string, Buffer>) {
  return recipeFolder(root, name, yaml, { 'refs/style.png': await noisePng(24, 24), ...files });
}

/** The events of `input` with `state`. */
const statesOf = (events: readonly ChildEvent[], input: string, state: string) =>
  events.filter((e) => e.type === 'item_state' && e.input === input && e.state === state);

/** The uploads the proxy saw from its `since`-th flow on. */
const uploadsSince = (since: number) => proxy.flows.slice(since).filter((f) => f.kind === 'upload');

/** True once `input` was checked and an upload since flow `since` is held at the proxy (uploadRate 0). */
const checkedAndHeld = (events: readonly ChildEvent[], input: string, since: number) =>
  statesOf(events, input, 'checked').length > 0 && uploadsSince(since).some((f) => !f.done);

/** The agents generations of `client` as the emulator recorded them (request bodies included). */
function generationRecords(client: ClientName) {
  return [...emu.app.emu.store.generations.values()].filter((g) => g.clientId === client);
}

/** A PNG of random pixels stored without compression: its size depends on its dimensions alone. */
async function storedPng(width: number, height: number): Promise<Buffer> {
  return sharp(randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 0, adaptiveFiltering: false })
    .toBuffer();
}

/** The length of the base64 text of `bytes`, as the emulator's record notes an elided `data`. */
const elided = (bytes: Buffer) => `<${Math.ceil(bytes.length / 3) * 4} base64 characters elided>`;

/** The active journal row of `input` in `out`, read without taking the out dir. */
async function journalRow(out: string, input: string) {
  const journal = openJournal({ outDir: out, lock: false });
  try {
    return journal.get(input);
  } finally {
    await journal.close();
  }
}

/**
 * Runs genpipe (`args`) with uploads held until `input` was checked, then `change`s the file and lets
 * the uploads go; resolves with the child once it exited.
 */
async function changeAfterCheck(
  args: string[],
  client: ClientName,
  input: string,
  change: () => Promise<void>,
): Promise<GenpipeChild> {
  proxy.uploadRate = 0;
  const since = proxy.flows.length;
  const child = spawnGenpipe(args, envFor(proxy.url, keyOf(client)));
  try {
    await child.until((ev) => checkedAndHeld(ev, input, since), `${input} checked and an upload held`);
    await change();
  } finally {
    proxy.uploadRate = null;
  }
  return child;
}

describe('a file changed after its check, before it is sent (genpipe run)', () => {
  it('base64: a replacement breaking a limit is checked again and fails locally; nothing is sent', async () => {
    const { input, out } = await folder('toolarge', recipe('base64'), { 'i6.png': await noisePng(48, 48) });
    const wide = await sharp({ create: { width: 9000, height: 30, channels: 3, background: '#00ff00' } })
      .png()
      .toBuffer();
    const child = await changeAfterCheck(runArgs(input, out), 'toolarge', 'i6.png', () =>
      writeFile(join(input, 'i6.png'), wide),
    );
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(1);

    // Nothing of 9000 px went out: no 413, no generation at all.
    const stats = await call(emu, 'GET', '/_emulator/stats', { key: null });
    expect(stats.body.responses['413']).toBeUndefined();
    expect(generationRecords('toolarge')).toEqual([]);
    // Handed back, checked again, failed at check with the service's own text.
    expect(statesOf(child.events, 'i6.png', 'discovered').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.again,
    ]);
    expect(statesOf(child.events, 'i6.png', 'checked')).toHaveLength(1);
    const failed = statesOf(child.events, 'i6.png', 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ stage: 'check' });
    expect(failed[0]!.reason).toMatch(/8000/);
    const report = await readJson(join(out, 'report.json'));
    expect(report.items).toHaveLength(1);
    expect(report.items[0]).toMatchObject({ input: 'i6.png', status: 'failed', stage: 'check' });
  }, 60_000);

  it('base64: the output of a valid replacement is made from it and recorded under its hash', async () => {
    const original = await noisePng(48, 48);
    const green = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#00ff00' } })
      .png()
      .toBuffer();
    const { input, out } = await folder('replaced', recipe('base64'), { 'i6.png': original });
    const child = await changeAfterCheck(runArgs(input, out), 'replaced', 'i6.png', () =>
      writeFile(join(input, 'i6.png'), green),
    );
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(0);

    // One generation, of the new bytes; none of the old ones.
    const gens = generationRecords('replaced');
    expect(gens).toHaveLength(1);
    expect((gens[0]!.request.source as { data: string }).data).toBe(elided(green));
    expect(statesOf(child.events, 'i6.png', 'discovered').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.again,
    ]);
    expect(lastStates(child.events).get('i6.png')).toBe('reported');
    expect((await readJson(join(out, 'report.json'))).items).toMatchObject([
      { input: 'i6.png', journal: 'the file changed during this run: processed again' },
    ]);
    // The journal holds the output under the content hash it was made from.
    const row = await journalRow(out, 'i6.png');
    expect(row).toMatchObject({ contentHash: bufferHash(green), phase: 'reported' });
    expect(stepOf(row!.item).generationId).toBe(gens[0]!.id);

    // A re-run finds it done: nothing is paid again.
    const again = await runToEnd(runArgs(input, out), envFor(proxy.url, keyOf('replaced')));
    expect(again.code, again.child.stderr()).toBe(0);
    expect(generationRecords('replaced')).toHaveLength(1);
    const report = await readJson(join(out, 'report.json'));
    expect(report.items).toMatchObject([{ input: 'i6.png', place: 'i6.png', journal: JOURNAL_TEXTS.done }]);
  }, 60_000);

  it('presigned: an upload of other bytes than were checked is not created, and is deleted', async () => {
    const original = await noisePng(48, 48);
    const green = await noisePng(40, 40);
    const { input, out } = await folder('presigned', recipe('presigned'), { 'i6.png': original });
    const child = await changeAfterCheck(runArgs(input, out), 'presigned', 'i6.png', () =>
      writeFile(join(input, 'i6.png'), green),
    );
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(0);

    const files = [...emu.app.emu.store.files.values()].filter(
      (f) => f.clientId === 'presigned' && f.purpose === 'input',
    );
    // Two uploads of i6.png: the one made while the file was not what had been checked, deleted, and
    // the one after it was checked again.
    expect(files.map((f) => f.state)).toEqual(['deleted', 'ready']);
    const gens = generationRecords('presigned');
    expect(gens).toHaveLength(1);
    expect(gens[0]!.request.source).toEqual({ file_id: files[1]!.id });
    expect(statesOf(child.events, 'i6.png', 'discovered').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.again,
    ]);
    const row = await journalRow(out, 'i6.png');
    expect(row).toMatchObject({ contentHash: bufferHash(green), phase: 'reported' });
    expect(stepOf(row!.item).upload?.fileId).toBe(files[1]!.id);
  }, 60_000);

  /**
   * Runs genpipe on `big` (presigned) with uploads held until the PUT of its bytes is under way, then
   * `change`s the file and lets the upload go; returns the emulator's files of `client` and the child.
   */
  async function changeWhileStreaming(
    client: ClientName,
    big: Buffer,
    change: (path: string) => Promise<void>,
  ) {
    const { input, out } = await folder(client, recipe('presigned', false), { 'big.png': big });
    const path = join(input, 'big.png');
    proxy.uploadRate = 0;
    const since = proxy.flows.length;
    const child = spawnGenpipe(runArgs(input, out), envFor(proxy.url, keyOf(client)));
    try {
      await child.until(
        (ev) =>
          statesOf(ev, 'big.png', 'checked').length > 0 &&
          uploadsSince(since).some((f) => f.path.startsWith('/_storage/uploads/')),
        'the upload of big.png under way',
      );
      await change(path);
    } finally {
      proxy.uploadRate = null;
    }
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(0);
    const files = [...emu.app.emu.store.files.values()].filter((f) => f.clientId === client);
    const gens = generationRecords(client);
    expect(gens).toHaveLength(1);
    expect(gens[0]!.request.source).toEqual({ file_id: files.at(-1)!.id });
    expect(statesOf(child.events, 'big.png', 'discovered').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.again,
    ]);
    expect(await journalRow(out, 'big.png')).toMatchObject({
      contentHash: bufferHash(await readFile(path)),
      phase: 'reported',
    });
    return files;
  }

  // 17 MB, of one size whatever the pixels: more than the socket buffers between genpipe and the proxy
  // hold while the proxy reads nothing, so genpipe is still reading the file when it changes.
  it('presigned: a file rewritten while it streams is not created, and is processed again', async () => {
    const rewritten = await storedPng(2400, 2400);
    const files = await changeWhileStreaming('midstream', await storedPng(2400, 2400), async (path) => {
      // Rewritten in place (no truncation, the same size): the rest of what streams is the new bytes.
      const fh = await open(path, 'r+');
      try {
        await fh.write(rewritten, 0, rewritten.length, 0);
      } finally {
        await fh.close();
      }
    });
    expect(files.map((f) => f.state)).toEqual(['deleted', 'ready']);
  }, 90_000);

  it('presigned: a file that grows while it streams is not completed, and is processed again', async () => {
    const files = await changeWhileStreaming('grown', await storedPng(2400, 2400), (path) =>
      appendFile(path, Buffer.alloc(1024 * 1024)),
    );
    // The cut-short upload was never completed; the second one holds the grown file.
    expect(files.map((f) => [f.state, f.size_bytes])).toEqual([
      ['pending', 17_310_197],
      ['ready', 17_310_197 + 1024 * 1024],
    ]);
  }, 90_000);
});

describe('a file changed after its check, before it is sent (genpipe watch)', () => {
  it('base64: the earlier version is not sent; the file is taken again once stable and paid once', async () => {
    const base = join(root, 'watch');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    await put(inbox, 'genpipe.yaml', recipe('base64'));
    await put(inbox, 'refs/style.png', await noisePng(24, 24));
    const original = await noisePng(48, 48);
    const green = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#00ff00' } })
      .png()
      .toBuffer();
    const args = ['watch', inbox, '--out', out, '--json', '--quiet-ms', '300', '--rescan-ms', '400'];
    proxy.uploadRate = 0;
    const since = proxy.flows.length;
    const child = spawnGenpipe([...args, '--poll-interval', '1'], envFor(proxy.url, keyOf('watch')));
    try {
      await until(async () => child.stderr().includes('watching'), 15_000);
      await put(inbox, 'i6.png', original);
      await child.until((ev) => checkedAndHeld(ev, 'i6.png', since), 'i6.png checked and an upload held');
      await writeFile(join(inbox, 'i6.png'), green);
    } finally {
      proxy.uploadRate = null;
    }
    // Done once the journal holds the new bytes' result.
    await until(
      async () => {
        const row = await journalRow(out, 'i6.png');
        return row?.contentHash === bufferHash(green) && row.phase === 'reported';
      },
      30_000,
      100,
    );
    child.proc.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(0);

    const gens = generationRecords('watch');
    expect(gens).toHaveLength(1);
    expect((gens[0]!.request.source as { data: string }).data).toBe(elided(green));
    expect(statesOf(child.events, 'i6.png', 'stopped').map((e) => e.reason)).toEqual([
      INPUT_CHANGED_TEXTS.watch,
    ]);
    const report = await readJson(join(out, 'report.json'));
    expect(report.items).toMatchObject([
      { input: 'i6.png', place: 'i6.png', status: 'succeeded', generation_id: gens[0]!.id },
    ]);
  }, 90_000);
});

describe('a file that changes every time it is processed again (the runner, without a journal)', () => {
  it('is given up after changedAgainMax times, failed retryably, and nothing of it is sent', async () => {
    const dir = join(root, 'runner');
    await put(dir, 'genpipe.yaml', recipe('base64', false));
    const versions = [await noisePng(48, 48), await noisePng(40, 40)];
    const path = await put(dir, 'i6.png', versions[0]!);
    let shown = 0;
    const client = createClient({
      apiKey: keyOf('runner'),
      baseUrl: emu.url,
      polling: { intervalMs: 20, floorMs: 10 },
    });
    const events: PipelineEvent[] = [];
    // The event of a transition is emitted before the runner goes on: the file is replaced by the
    // other version after its check, before submit reads it, every time.
    const onEvent = (e: PipelineEvent) => {
      events.push(e);
      if (e.type === 'item_state' && e.state === 'uploaded') {
        shown = 1 - shown;
        writeFileSync(path, versions[shown]!);
      }
    };
    try {
      const result = await runBatch({
        inputDir: dir,
        outDir: join(root, 'runner-out'),
        recipe: await loadRecipe({ inputDir: dir }),
        client,
        reportIntervalMs: 0,
        keepItems: true,
        onEvent,
      });
      const reasons = events.flatMap((e) =>
        e.type === 'item_state' && e.state === 'discovered' ? [e.reason] : [],
      );
      expect(reasons).toEqual(Array(RUN_DEFAULTS.changedAgainMax).fill(INPUT_CHANGED_TEXTS.again));
      expect(result.items).toHaveLength(1);
      expect(flatView(result.items[0]!)).toMatchObject({
        state: 'failed',
        failedAt: 'submit',
        reason: INPUT_CHANGED_TEXTS.tooOften(RUN_DEFAULTS.changedAgainMax + 1),
        failure: { kind: INPUT_CHANGED_TEXTS.failureKind, retryable: true },
        requestId: null,
      });
      expect(generationRecords('runner')).toEqual([]);
    } finally {
      await client.close();
    }
  }, 60_000);

  it('says why in a plain progress line', () => {
    const line = plainLine(
      {
        type: 'item_state',
        at: 0,
        input: 'i6.png',
        state: 'discovered',
        stage: 'submit',
        reason: INPUT_CHANGED_TEXTS.again,
      },
      { utc: true },
    );
    expect(line).toBe(`[00:00:00] i6.png: ${INPUT_CHANGED_TEXTS.again}`);
  });
});
