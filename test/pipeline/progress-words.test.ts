/**
 * The words of `genpipe run` and `genpipe watch` say what happened, as a user reads them: real child
 * processes against an emulator started here. A prompt file and an image sent inline as base64 are not
 * said to be uploaded (neither on the plain lines nor in the --json events' reasons), a generation an
 * earlier run created and whose outputs are only downloaded again is not said to be submitted, a file
 * resumed before its create is not said to be "already uploaded" when nothing was, watch's first line
 * is its own, and watch's closing summary counts the files still settling when it stopped.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator, until } from '../helpers/emulator.ts';
import { envFor, killChildren, runToEnd, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const KEY = 'svc-api-words-key';
/** A client whose balance is gone: its first create is refused (402) and the batch stops. */
const POOR_KEY = 'svc-api-words-poor';

/** Prompt files, images sent as base64, and images uploaded as files. */
const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1 }
  - match: "inline-*.png"
    input_as: source
    upload: base64
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
  - match: "*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
`;

let emu: RunningEmulator;
let root: string;

beforeAll(async () => {
  emu = await startTestEmulator({
    clients: [
      { id: 'words', state: 'active', rpm: 1000, concurrency: 50, balance: 1_000_000 },
      { id: 'poor', state: 'active', rpm: 1000, concurrency: 50, balance: 0 },
    ],
    keys: [
      { key: KEY, client: 'words' },
      { key: POOR_KEY, client: 'poor' },
    ],
  });
  root = await mkdtemp(join(tmpdir(), 'genpipe-words-'));
});

afterAll(async () => {
  killChildren();
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

const png = (color: string) =>
  sharp({ create: { width: 16, height: 12, channels: 3, background: color } })
    .png()
    .toBuffer();

/** An inbox with the recipe and a prompt file, an image sent as base64 and one uploaded as a file. */
async function folder(name: string): Promise<{ input: string; out: string }> {
  const input = join(root, name);
  await put(input, 'genpipe.yaml', RECIPE);
  await put(input, 'fox.txt', 'a red fox in the snow');
  await put(input, 'inline-a.png', await png('#c83c1e'));
  await put(input, 'file-b.png', await png('#1e3cc8'));
  return { input, out: join(root, `${name}-out`) };
}

/** The plain progress lines of one input, without their time. */
function linesOf(stdout: string, input: string): string[] {
  return stdout
    .split('\n')
    .map((l) => l.replace(/^\[\d\d:\d\d:\d\d\] /, ''))
    .filter((l) => l.startsWith(`${input}: `))
    .map((l) => l.slice(input.length + 2));
}

describe('genpipe run says what happened at upload', () => {
  it('a prompt file is ready, an image sent as base64 goes inline, only a file upload is "uploaded"', async () => {
    const { input, out } = await folder('plain');
    const run = await runToEnd(['run', input, '--out', out, '--poll-interval', '1'], envFor(emu.url, KEY));
    const stdout = run.child.stdout();
    expect(run.code, run.child.stderr()).toBe(0);

    expect(linesOf(stdout, 'fox.txt')).toContain('prompt ready: the text goes in the request');
    expect(linesOf(stdout, 'fox.txt')).not.toContain('uploaded');
    expect(linesOf(stdout, 'inline-a.png')).toContain('inline (base64): the image goes in the request');
    expect(linesOf(stdout, 'inline-a.png')).not.toContain('uploaded');
    expect(linesOf(stdout, 'file-b.png')).toContain('uploaded');
    for (const name of ['fox.txt', 'inline-a.png', 'file-b.png']) {
      expect(linesOf(stdout, name)).toContain('submitted');
    }
  }, 60_000);

  it('--json keeps the state names and gives the same words as the reason', async () => {
    const { input, out } = await folder('json');
    const run = await runToEnd(
      ['run', input, '--out', out, '--json', '--poll-interval', '1'],
      envFor(emu.url, KEY),
    );
    expect(run.code, run.child.stderr()).toBe(0);
    const atUpload = (name: string) =>
      run.child.events.find((e) => e.type === 'item_state' && e.input === name && e.stage === 'upload');
    expect(atUpload('fox.txt')).toMatchObject({
      state: 'uploaded',
      reason: 'prompt ready: the text goes in the request',
    });
    expect(atUpload('inline-a.png')).toMatchObject({
      state: 'uploaded',
      reason: 'inline (base64): the image goes in the request',
    });
    expect(atUpload('file-b.png')).toMatchObject({ state: 'uploaded', reason: null });
  }, 60_000);
});

describe('a re-run says what it does with work the service already has', () => {
  it('outputs downloaded again from an existing generation are not said to be submitted', async () => {
    const { input, out } = await folder('again');
    const env = envFor(emu.url, KEY);
    const args = ['run', input, '--out', out, '--poll-interval', '1'];
    const first = await runToEnd(args, env);
    expect(first.code, first.child.stderr()).toBe(0);
    const generationId = (await readJson(join(out, 'file-b.png', 'result.json'))).generation_id as string;
    expect(generationId).toMatch(/^[0-9a-f-]{36}$/);
    await rm(join(out, 'file-b.png', 'output-0.png'));

    const second = await runToEnd(args, env);
    expect(second.code, second.child.stderr()).toBe(0);
    const lines = linesOf(second.child.stdout(), 'file-b.png');
    expect(lines).not.toContain('submitted');
    expect(lines[2]).toMatch(
      new RegExp(`^resumed: downloading the outputs of generation ${generationId} again \\(.*missing\\)$`),
    );
    expect(lines.slice(3)).toEqual(['completed', 'downloaded', 'reported']);
    expect(linesOf(second.child.stdout(), 'fox.txt').at(-1)).toBe('already done in an earlier run');
  }, 60_000);

  it('a file taken up before its create is "already uploaded" only when something was uploaded', async () => {
    // One file a folder: its create is the first, refused with 402, and the batch stops with the file
    // at `uploaded`; the next run (with a key that can pay) takes it up there: continued, not resumed,
    // since nothing was sent to the service for it.
    const cases = [
      { name: 'fox.txt', content: 'a red fox in the snow', said: 'continued: prompt ready, submitting' },
      {
        name: 'inline-a.png',
        content: await png('#c83c1e'),
        said: 'continued: inline (base64), submitting',
      },
    ];
    for (const c of cases) {
      const input = join(root, `resume-${c.name}`);
      const out = `${input}-out`;
      await put(input, 'genpipe.yaml', RECIPE);
      await put(input, c.name, c.content);
      const args = ['run', input, '--out', out, '--poll-interval', '1'];
      const stopped = await runToEnd(args, envFor(emu.url, POOR_KEY));
      expect(stopped.code, stopped.child.stderr()).toBe(3);

      const resumed = await runToEnd(args, envFor(emu.url, KEY));
      expect(resumed.code, resumed.child.stderr()).toBe(0);
      expect(linesOf(resumed.child.stdout(), c.name)).toContain(c.said);
      const report = await readJson(join(out, 'report.json'));
      expect(report.items[0]).toMatchObject({ input: c.name, status: 'succeeded', journal: c.said });
    }
  }, 60_000);
});

describe('genpipe watch', () => {
  it('says watch on its first line, and counts the files still settling when it stopped', async () => {
    const inbox = join(root, 'watch-inbox');
    const out = join(root, 'watch-out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    // A quiet period no test reaches: the file is still settling when the watch stops.
    const child = spawnGenpipe(
      ['watch', inbox, '--out', out, '--quiet-ms', '600000', '--rescan-ms', '200', '--poll-interval', '1'],
      envFor(emu.url, KEY),
    );
    await until(async () => child.stderr().includes('watching '));
    await put(inbox, 'late.txt', 'a lighthouse at night');
    await until(async () => child.stderr().includes(' · 1 settling'));
    child.proc.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(0);

    expect(child.stdout().split('\n')[0]).toMatch(/^\[\d\d:\d\d:\d\d\] watch: .*watch-inbox -> .*watch-out$/);
    const closing = child
      .stderr()
      .split('\n')
      .filter((l) => l.startsWith('genpipe: '));
    // The inbox's recipe is not an input: listed as ignored, as its rescans found it.
    expect(closing).toContain('genpipe: 0 files: 0 succeeded, 0 failed, 0 skipped; 1 ignored: 1 recipe file');
    expect(closing).toContain(
      'genpipe: 1 file still settling (being written) when the watch stopped was not taken: the next session takes it once it is complete',
    );
  }, 60_000);
});
