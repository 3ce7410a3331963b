/**
 * `genpipe watch` as a user runs it: a child process watching a temporary inbox against an emulator
 * started here. Files arrive slowly in chunks, by rename, and one is half written when the watcher
 * starts: the half-written file is never uploaded (every upload the emulator received has the file's
 * final size), each file is processed once, report.json is refreshed while the watch runs, the running
 * summary line is on stderr, and `--on-done move` files inputs into processed/ and failed/. A restarted
 * watch (`--poll`, `--on-done keep`) does not process finished files again. And `genpipe run` refuses
 * a half-copied faststart MP4 at check, before any upload (ffprobe alone would let it through).
 * A watch restarted over many finished files takes them from the journal without a completeness
 * check, so a new file is checked and processed without waiting behind them.
 */
import { appendFile, mkdir, readdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { runFfmpeg } from '../../src/media/index.ts';
import { call, until } from '../helpers/emulator.ts';
import { EDIT_OR_PROMPT_RECIPE, useChildRunBed } from './child-run.ts';
import { type ChildEvent, envFor, generationsOf, runToEnd, spawnGenpipe } from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';
import { noisePng, writeSlowly } from './watch-helpers.ts';

const CLIENTS = ['move', 'keep', 'run', 'restart'] as const;
const keyOf = (c: (typeof CLIENTS)[number]) => `svc-api-watch-cli-${c}`;

const RECIPE = `${EDIT_OR_PROMPT_RECIPE}  - match: "*.mp4"
    request: { type: video_reframe, model: ray-3.2, aspect_ratio: "9:16", video: { resolution: 360p } }
`;

let emu: RunningEmulator;
let root: string;

useChildRunBed(
  {
    name: 'watch-cli',
    clients: CLIENTS,
    keyOf,
    config: { queue_ms: 20, processing_ms: { image: 200, video: 300 } },
  },
  (bed) => ({ emu, root } = bed),
);

const watchArgs = (inbox: string, out: string, extra: string[]) => [
  'watch',
  inbox,
  '--out',
  out,
  '--json',
  '--quiet-ms',
  '400',
  '--rescan-ms',
  '500',
  '--poll-interval',
  '1',
  ...extra,
];

/** Input files the emulator received from a client: filename → sizes of every upload. */
async function uploadsOf(key: string): Promise<Map<string, number[]>> {
  const r = await call(emu, 'GET', '/v1/files?limit=100&purpose=input', { key });
  const by = new Map<string, number[]>();
  for (const f of r.body.data as Array<{ filename: string; size_bytes: number }>) {
    by.set(f.filename, [...(by.get(f.filename) ?? []), f.size_bytes]);
  }
  return by;
}

// biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
async function reportOf(out: string): Promise<any> {
  return readJson(join(out, 'report.json')).catch(() => null);
}

describe('genpipe watch', () => {
  it('takes files only once complete, processes each once, and moves them to processed/ and failed/', async () => {
    const base = join(root, 'move');
    const inbox = join(base, 'inbox');
    const out = join(base, 'out');
    const scratch = join(base, 'scratch');
    await put(inbox, 'genpipe.yaml', RECIPE);
    await mkdir(scratch, { recursive: true });
    const halfBytes = await noisePng(160, 160);
    const slowBytes = await noisePng(96, 96);
    const renamedBytes = await noisePng(64, 64);
    // Half written before the watcher starts, and the writer stalls for longer than the quiet period.
    await writeFile(join(inbox, 'half.png'), halfBytes.subarray(0, halfBytes.length >> 1));

    const child = spawnGenpipe(watchArgs(inbox, out, ['--on-done', 'move']), envFor(emu.url, keyOf('move')));
    // The half file is stable, but it does not parse: the watcher holds it back (and says so).
    await until(async () => child.stderr().includes('1 incomplete, held back'));
    expect(await uploadsOf(keyOf('move'))).toEqual(new Map());
    expect(child.events.filter((e) => e.input === 'half.png')).toEqual([]);

    await appendFile(join(inbox, 'half.png'), halfBytes.subarray(halfBytes.length >> 1));
    await writeSlowly(join(inbox, 'slow.png'), slowBytes, 6, 120);
    await writeFile(join(scratch, 'renamed.png'), renamedBytes);
    await rename(join(scratch, 'renamed.png'), join(inbox, 'renamed.png'));
    await sharp({ create: { width: 8001, height: 10, channels: 3, background: '#808080' } })
      .png()
      .toFile(join(scratch, 'wide.png'));
    await rename(join(scratch, 'wide.png'), join(inbox, 'wide.png'));

    // report.json is refreshed while the watch runs.
    const running = await until(async () => {
      const r = await reportOf(out);
      return r && r.totals.succeeded === 3 && r.totals.failed === 1 ? r : null;
    }, 30_000);
    expect(running.finished_at).toBeNull();
    await until(async () => (await readdir(join(base, 'processed')).catch(() => [])).length === 3);
    await until(async () => child.stderr().includes('3 succeeded, 1 failed'));

    child.proc.kill('SIGINT');
    const exit = await child.exited;
    expect(exit.code, child.stderr()).toBe(0);

    // Each file was uploaded once, at its final size: the half-written one never went out.
    expect(await uploadsOf(keyOf('move'))).toEqual(
      new Map([
        ['half.png', [halfBytes.length]],
        ['renamed.png', [renamedBytes.length]],
        ['slow.png', [slowBytes.length]],
      ]),
    );
    expect(await generationsOf(emu, 'move')).toHaveLength(3);
    const report = await reportOf(out);
    // A signal is how a watch ends: it was stopped, not stopped early.
    expect(report.stopped_early).toBeNull();
    expect(report.stopped).toEqual({ reason: 'stopped by Ctrl-C / SIGINT', by: 'Ctrl-C / SIGINT' });
    expect(
      Object.fromEntries(report.items.map((i: { input: string; status: string }) => [i.input, i.status])),
    ).toEqual({
      'half.png': 'succeeded',
      'renamed.png': 'succeeded',
      'slow.png': 'succeeded',
      'wide.png': 'failed',
    });
    expect(report.items.find((i: { input: string }) => i.input === 'wide.png')).toMatchObject({
      stage: 'check',
      reason: 'source: image is 8001x10px but each side must be <= 8000px. Resize and try again.',
    });
    expect((await readdir(join(base, 'processed'))).sort()).toEqual(['half.png', 'renamed.png', 'slow.png']);
    expect(await readdir(join(base, 'failed'))).toEqual(['wide.png']);
    expect(await readdir(inbox)).toEqual(['genpipe.yaml']);
    expect(await readFile(join(base, 'processed', 'half.png'))).toEqual(halfBytes);
    expect((await stat(join(out, 'half.png', 'output-0.png'))).size).toBeGreaterThan(0);
  }, 90_000);

  it('restarted with --poll and --on-done keep, does not process finished files again', async () => {
    const inbox = join(root, 'keep', 'inbox');
    const out = join(root, 'keep', 'out');
    await put(inbox, 'genpipe.yaml', RECIPE);
    await put(inbox, 'a.txt', 'a red fox');
    await put(inbox, 'b.txt', 'a blue bird');
    const env = envFor(emu.url, keyOf('keep'));
    const args = watchArgs(inbox, out, ['--poll']);

    const first = spawnGenpipe(args, env);
    await until(async () => (await reportOf(out))?.totals.succeeded === 2, 30_000);
    first.proc.kill('SIGTERM');
    expect((await first.exited).code, first.stderr()).toBe(0);
    expect(await generationsOf(emu, 'keep')).toHaveLength(2);

    const second = spawnGenpipe(args, env);
    await until(async () => second.events.filter((e) => e.state === 'reported').length === 2, 30_000);
    await put(inbox, 'c.txt', 'a green frog');
    await until(async () => second.events.filter((e) => e.state === 'reported').length === 3, 30_000);
    second.proc.kill('SIGTERM');
    expect((await second.exited).code, second.stderr()).toBe(0);

    expect(await generationsOf(emu, 'keep')).toHaveLength(3);
    const report = await reportOf(out);
    expect(report.journal).toMatchObject({ reused: 2 });
    expect(
      Object.fromEntries(report.items.map((i: { input: string; journal: string }) => [i.input, i.journal])),
    ).toEqual({
      'a.txt': 'already done in an earlier run',
      'b.txt': 'already done in an earlier run',
      'c.txt': null,
    });
    expect((await readdir(inbox)).sort()).toEqual(['a.txt', 'b.txt', 'c.txt', 'genpipe.yaml']);
  }, 90_000);
});

describe('genpipe watch restarted over finished files', () => {
  it('takes files the journal finished without a completeness check, and processes a new one', async () => {
    const N = 200;
    const inbox = join(root, 'restart', 'inbox');
    const out = join(root, 'restart', 'out');
    const scratch = join(root, 'restart', 'scratch');
    await put(
      inbox,
      'genpipe.yaml',
      'rules:\n  - match: "*.png"\n    input_as: source\n    upload: base64\n' +
        '    request: { type: image_edit, model: uni-1, prompt: "watercolor" }\n',
    );
    await mkdir(scratch, { recursive: true });
    for (let i = 0; i < N; i++) {
      await writeFile(join(inbox, `old-${String(i).padStart(3, '0')}.png`), await noisePng(8, 8));
    }
    const env = envFor(emu.url, keyOf('restart'));
    const first = await runToEnd(
      ['run', inbox, '--out', out, '--concurrency', '50', '--poll-interval', '1', '-q'],
      env,
    );
    expect(first.code, first.child.stderr()).toBe(0);
    expect(await generationsOf(emu, 'restart')).toHaveLength(N);

    const second = spawnGenpipe(watchArgs(inbox, out, []), env);
    const reported = (events: ChildEvent[], input?: string) =>
      events.filter((e) => e.state === 'reported' && (input === undefined || e.input === input)).length;
    await second.until((events) => reported(events) >= 1, 'a finished file reported', 60_000);
    await writeFile(join(scratch, 'new.png'), await noisePng(16, 16));
    await rename(join(scratch, 'new.png'), join(inbox, 'new.png'));
    await second.until((events) => reported(events, 'new.png') === 1, 'the new file reported', 60_000);
    await second.until((events) => reported(events) === N + 1, 'every file reported', 60_000);
    second.proc.kill('SIGINT');
    expect((await second.exited).code, second.stderr()).toBe(0);

    // Only the new file was decoded to see whether it is complete; only it went to the service.
    expect(second.stderr()).toContain(
      `genpipe: 1 completeness check; ${N} files finished in an earlier session taken without one\n`,
    );
    expect(await generationsOf(emu, 'restart')).toHaveLength(N + 1);
    const report = await reportOf(out);
    expect(report.totals).toMatchObject({ inputs: N + 1, succeeded: N + 1 });
    expect(report.journal).toMatchObject({ reused: N });
  }, 180_000);
});

describe('genpipe watch refusals', () => {
  it('refuses an out dir inside the watched folder with exit 2, leaving the inbox untouched', async () => {
    const inbox = join(root, 'inside', 'inbox');
    await put(inbox, 'genpipe.yaml', RECIPE);
    await put(inbox, 'a.txt', 'a red fox');
    const r = await runToEnd(['watch', inbox, '--out', join(inbox, 'out')], envFor(emu.url, keyOf('run')));
    expect(r.code).toBe(2);
    expect(r.child.stderr()).toContain('outputs must live outside the watched tree');
    expect((await readdir(inbox)).sort()).toEqual(['a.txt', 'genpipe.yaml']);
  }, 30_000);
});

describe('genpipe run and a half-copied video', () => {
  it('fails a cut-off faststart MP4 at check, before any upload', async () => {
    const input = join(root, 'video-in');
    await put(input, 'genpipe.yaml', RECIPE);
    const whole = join(root, 'whole.mp4');
    await runFfmpeg([
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=64x48:rate=10:duration=1',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      '-movflags',
      '+faststart',
      whole,
    ]);
    const bytes = await readFile(whole);
    await put(input, 'clip.mp4', bytes.subarray(0, Math.floor(bytes.length * 0.7)));
    const out = join(root, 'video-out');
    const r = await runToEnd(['run', input, '--out', out, '--json'], envFor(emu.url, keyOf('run')));
    expect(r.code, r.child.stderr()).toBe(1);
    const report = await reportOf(out);
    expect(report.items[0]).toMatchObject({ input: 'clip.mp4', status: 'failed', stage: 'check' });
    expect(report.items[0].reason).toMatch(
      /^video is incomplete: its 'mdat' box runs \d+ bytes past the end/,
    );
    expect(await uploadsOf(keyOf('run'))).toEqual(new Map());
  }, 30_000);
});
