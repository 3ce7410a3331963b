/**
 * `genpipe run` end to end, as a user runs it: the CLI as a child process over a generated folder
 * mixing good and bad files, against an emulator started here (connection through GENPIPE_* variables)
 * and against the embedded one (--emulator, and `genpipe demo`). Checks every item's status, reason and
 * outputs in report.json and result.json, the composite's pixels against the source, the exit codes
 * (0, 1, 2, 3), and that the input dir is never modified.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { CHOICES, imageTooManyPixelsDetail, sourceVideoTooLongDetail } from '../../src/spec/index.ts';
import { call, hold, KEY, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { killChildren, spawnGenpipe } from './resume-helpers.ts';
import {
  BLOCKED_WORD,
  type CliResult,
  cleanEnv,
  hashTree,
  MIXED_EXPECTED,
  readJson,
  runGenpipe,
  writeMixedFolder,
} from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const REVOKED_KEY = 'svc-api-test-revoked';
const SUSPENDED_KEY = 'svc-api-test-suspended';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ROOT = join(import.meta.dirname, '..', '..');

let emu: RunningEmulator;
let root: string;

beforeAll(async () => {
  emu = await startTestEmulator({
    clients: [
      { id: 'a', state: 'active', rpm: 1000, concurrency: 50, balance: 1_000_000 },
      { id: 'c', state: 'suspended', rpm: 1000, concurrency: 50, balance: 1_000_000 },
    ],
    keys: [
      { key: KEY, client: 'a' },
      { key: REVOKED_KEY, client: 'a', revoked: true },
      { key: SUSPENDED_KEY, client: 'c' },
    ],
    blocked_words: [BLOCKED_WORD],
  });
  root = await mkdtemp(join(tmpdir(), 'genpipe-run-e2e-'));
});

afterAll(async () => {
  killChildren();
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

function envFor(key: string): NodeJS.ProcessEnv {
  return cleanEnv({ GENPIPE_API_KEY: key, GENPIPE_BASE_URL: emu.url });
}

describe('genpipe run over a mixed folder (emulator given by GENPIPE_* variables)', () => {
  let input: string;
  let out: string;
  let before: string;
  let run: CliResult;
  // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
  let report: any;
  // biome-ignore lint/suspicious/noExplicitAny: report items read loosely
  const line = (input: string): any => report.items.find((i: { input: string }) => i.input === input);
  const result = (input: string) => readJson(join(out, input, 'result.json'));

  beforeAll(async () => {
    input = join(root, 'mixed');
    out = join(root, 'mixed-out');
    await writeMixedFolder(input, join(root, 'scratch'));
    before = await hashTree(input);
    run = await runGenpipe(
      ['run', input, '--out', out, '--json', '--poll-interval', '1', '--concurrency', '4'],
      envFor(KEY),
    );
    report = await readJson(join(out, 'report.json'));
  }, 120_000);

  it('exits 1 because some files failed, and leaves the input dir as it was', async () => {
    expect(run.code, run.stderr).toBe(1);
    expect(await hashTree(input)).toBe(before);
    expect(run.stderr).not.toContain(KEY);
  });

  it('reports every input exactly once with its status, leaving out dotfiles, .part files and the recipe', () => {
    const statuses = Object.fromEntries(
      report.items.map((i: { input: string; status: string }) => [i.input, i.status]),
    );
    expect(statuses).toEqual(MIXED_EXPECTED);
    const values = Object.values(MIXED_EXPECTED) as string[];
    expect(report.totals).toMatchObject({
      inputs: values.length,
      succeeded: values.filter((s) => s === 'succeeded').length,
      failed: values.filter((s) => s === 'failed').length,
      skipped: values.filter((s) => s === 'skipped').length,
      unprocessed: 0,
    });
    expect(report.finished_at).not.toBeNull();
    expect(report.stopped_early).toBeNull();
  });

  it('gives each bad file a plain reason, or the exact detail the service would give', async () => {
    expect(line('photos/empty.png')).toMatchObject({ stage: 'plan', reason: 'file is empty' });
    expect(line('photos/truncated.png').stage).toBe('check');
    expect(line('photos/truncated.png').reason).toMatch(/truncated|could not be decoded/i);
    expect(line('photos/wide.png')).toMatchObject({
      stage: 'check',
      reason: imageTooManyPixelsDetail('source', 8001, 10),
    });
    expect(line('clips/long.mp4')).toMatchObject({
      stage: 'check',
      reason: sourceVideoTooLongDetail('source', 31, 30, 'video_reframe', false),
    });
    expect(line('clips/not-a-video.mp4').stage).toBe('plan');
    expect(line('clips/not-a-video.mp4').reason).toMatch(/^wrong type: the file is an image \(image\/png\)/);
    expect(line('misc/blob.bin')).toMatchObject({
      stage: 'plan',
      reason: expect.stringMatching(
        /^unknown type: the bytes are not an image, a video or UTF-8 text \(matched rules\[5\] "misc\/\*\*"\); .*--exclude 'misc\/blob.bin'/,
      ),
    });
    expect(line('other/notes.md').reason).toBe('matches no recipe rule');
    // Nothing was sent for files that failed locally.
    for (const name of ['photos/empty.png', 'photos/wide.png', 'clips/long.mp4', 'misc/blob.bin']) {
      const r = await result(name);
      expect(r).toMatchObject({ status: 'failed', request_sent: false, generation_id: null, outputs: [] });
    }
  });

  it('fails a moderated generation with the service failure_code and failure_reason', async () => {
    const reason = CHOICES.failureReasons.content_moderated;
    expect(line('prompts/blocked.txt')).toMatchObject({
      status: 'failed',
      stage: 'wait',
      failure_code: 'content_moderated',
      reason: `content_moderated: ${reason}`,
    });
    const r = await result('prompts/blocked.txt');
    expect(r).toMatchObject({ state: 'failed', failure_code: 'content_moderated', failure_reason: reason });
    expect(r.generation_id).toMatch(UUID);
    expect(r.request_id).toMatch(UUID);
  });

  it('downloads every output and writes result.json with the request as sent and timings', async () => {
    for (const [name, status] of Object.entries(MIXED_EXPECTED)) {
      if (status !== 'succeeded') continue;
      const r = await result(name);
      expect(r).toMatchObject({ input: name, status: 'succeeded', state: 'completed', request_sent: true });
      expect(r.generation_id).toMatch(UUID);
      expect(r.request_id).toMatch(UUID);
      expect(r.outputs.length).toBeGreaterThan(0);
      expect(line(name).outputs).toEqual(r.outputs);
      for (const o of r.outputs) expect((await stat(join(out, o))).size).toBeGreaterThan(0);
      for (const stage of ['sniff', 'plan', 'check', 'upload', 'submit', 'wait', 'download']) {
        expect(r.timings[stage].duration_ms, `${name} ${stage}`).toBeGreaterThanOrEqual(0);
      }
    }
    expect((await result('clips/ok.mp4')).outputs).toEqual(['clips/ok.mp4/output-0.mp4']);
    expect((await result('prompts/fox.txt')).request.prompt).toBe('a red fox in the snow');
    // The sidecar's prompt overrides the rule's.
    expect((await result('photos/sidecar.jpg')).request.prompt).toBe('pencil sketch');
    // The service generation knows the request id genpipe recorded.
    const admin = await call(emu, 'GET', '/_emulator/generations');
    const fox = await result('prompts/fox.txt');
    const gen = admin.body.data.find((g: { id: string }) => g.id === fox.generation_id);
    expect(JSON.stringify(gen)).toContain(fox.request_id);
  });

  it("records each input's sha256, sniffed type, dimensions and duration in result.json", async () => {
    const sha256 = async (name: string) =>
      createHash('sha256')
        .update(await readFile(join(input, name)))
        .digest('hex');
    const size = async (name: string) => (await stat(join(input, name))).size;
    expect((await result('photos/good.png')).input_facts).toEqual({
      sha256: await sha256('photos/good.png'),
      mime: 'image/png',
      bytes: await size('photos/good.png'),
      width: 64,
      height: 48,
      duration_s: null,
    });
    // The type is the one the bytes have, not the name's.
    expect((await result('photos/really-a-jpeg.png')).input_facts).toMatchObject({
      sha256: await sha256('photos/really-a-jpeg.png'),
      mime: 'image/jpeg',
    });
    const clip = (await result('clips/ok.mp4')).input_facts;
    expect(clip).toMatchObject({
      sha256: await sha256('clips/ok.mp4'),
      mime: 'video/mp4',
      width: 64,
      height: 36,
    });
    expect(clip.duration_s).toBeCloseTo(1, 1);
    expect((await result('prompts/fox.txt')).input_facts).toEqual({
      sha256: await sha256('prompts/fox.txt'),
      mime: 'text/plain',
      bytes: await size('prompts/fox.txt'),
      width: null,
      height: null,
      duration_s: null,
    });
    // A file the check failed keeps what it learned: the 31 s video's length.
    const long = (await result('clips/long.mp4')).input_facts;
    expect(long.mime).toBe('video/mp4');
    expect(long.duration_s).toBeGreaterThan(30);
  });

  it('uploads the shared reference once, the mislabelled JPEG as what it is, and small images as base64', async () => {
    const good = await result('photos/good.png');
    const jpeg = await result('photos/really-a-jpeg.png');
    const inline = await result('inline/small.png');
    const refId = good.request.image_ref[0].file_id;
    expect(refId).toMatch(UUID);
    expect(jpeg.request.image_ref[0].file_id).toBe(refId);
    expect(inline.request.image_ref[0].file_id).toBe(refId);
    expect(good.upload.mode).toBe('inline');
    expect(good.request.source.file_id).toBe(good.upload.file_id);
    expect(inline.upload).toEqual({ mode: 'base64', file_id: null });
    expect(inline.request.source).toEqual({ data: '$input', media_type: 'image/png' });
    const refs = await call(emu, 'GET', '/v1/files?purpose=reference&limit=100');
    expect(refs.body.data).toHaveLength(1);
    const file = await call(emu, 'GET', `/v1/files/${jpeg.upload.file_id}`);
    expect(file.body).toMatchObject({ state: 'ready', mime_type: 'image/jpeg' });
  });

  it('composites the layer stack back into the source pixels', async () => {
    const r = await result('layers/stack.png');
    expect(r.layers).toHaveLength(3);
    expect(r.layers.map((l: { path: string }) => l.path)).toEqual([
      'layers/stack.png/layer-0.png',
      'layers/stack.png/layer-1.png',
      'layers/stack.png/layer-2.png',
    ]);
    expect(r.composite).toBe('layers/stack.png/composite.png');
    expect(line('layers/stack.png').composite).toBe(r.composite);
    const source = await sharp(join(input, 'layers', 'stack.png'))
      .removeAlpha()
      .raw()
      .toBuffer({
        resolveWithObject: true,
      });
    const comp = await sharp(join(out, r.composite)).raw().toBuffer({ resolveWithObject: true });
    expect([comp.info.width, comp.info.height]).toEqual([source.info.width, source.info.height]);
    expect(comp.info.channels).toBe(4);
    let alphaBelow255 = 0;
    const rgb = Buffer.alloc(source.info.width * source.info.height * 3);
    for (let p = 0; p < source.info.width * source.info.height; p++) {
      if (comp.data[p * 4 + 3] !== 255) alphaBelow255++;
      comp.data.copy(rgb, p * 3, p * 4, p * 4 + 3);
    }
    expect(alphaBelow255).toBe(0);
    expect(rgb.equals(source.data)).toBe(true);
  });

  it('prints one JSON object per event on stdout, from batch_started to batch_finished', () => {
    const events = run.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events[0].type).toBe('batch_started');
    expect(events.at(-1)).toMatchObject({ type: 'batch_finished', totals: { failed: report.totals.failed } });
    const states = events.filter((e) => e.type === 'item_state' && e.input === 'prompts/fox.txt');
    expect(states.map((e) => e.state)).toEqual([
      'sniffed',
      'planned',
      'checked',
      'uploaded',
      'submitted',
      'completed',
      'downloaded',
      'reported',
    ]);
  });
});

describe('genpipe run and genpipe demo with the embedded emulator', () => {
  it('runs a folder with --emulator, saying so loudly', async () => {
    const input = join(root, 'small');
    const out = join(root, 'small-out');
    await put(input, 'genpipe.yaml', 'rules:\n  - match: "*.txt"\n    request: { type: image }\n');
    await put(input, 'a.txt', 'a lighthouse at night');
    await put(input, 'b.txt', 'a boat at sea');
    const before = await hashTree(input);
    const r = await runGenpipe(['run', input, '--out', out, '--emulator'], cleanEnv());
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('EMULATOR MODE');
    expect(r.stdout).toContain('(EMULATOR: not the real service)');
    const report = await readJson(join(out, 'report.json'));
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2, failed: 0 });
    expect(await readdir(join(out, 'a.txt'))).toEqual(
      expect.arrayContaining(['output-0.png', 'result.json']),
    );
    expect(await hashTree(input)).toBe(before);
  }, 60_000);

  it('genpipe demo processes samples/ into out/demo and says where to look', async () => {
    const cwd = join(root, 'demo-cwd');
    await put(cwd, '.keep', '');
    const samplesBefore = await hashTree(join(ROOT, 'samples'));
    const r = await runGenpipe(['demo'], cleanEnv(), { cwd });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('EMULATOR MODE');
    expect(r.stderr).toContain(join('out', 'demo', 'report.html'));
    const report = await readJson(join(cwd, 'out', 'demo', 'report.json'));
    expect(report.totals.failed).toBe(0);
    expect(report.totals.succeeded).toBe(report.totals.inputs);
    expect(report.totals.inputs).toBeGreaterThanOrEqual(7);
    // The chain: a product photo → stylized → animated → reframed 9:16 and 1:1, every step done.
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    const chain = report.items.find((i: any) => i.input === 'chain/product.jpg');
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    expect(chain.steps.map((s: any) => [s.name, s.state])).toEqual([
      ['stylize', 'downloaded'],
      ['animate', 'succeeded'],
      ['social', 'downloaded'],
      ['shop', 'downloaded'],
    ]);
    expect(chain.outputs).toEqual([
      'chain/product.jpg/stylize/output-0.png',
      'chain/product.jpg/social/output-0.mp4',
      'chain/product.jpg/shop/output-0.mp4',
    ]);
    const layered = report.items.find((i: { composite: string | null }) => i.composite !== null);
    expect(layered).toBeDefined();
    const html = await readFile(join(cwd, 'out', 'demo', 'report.html'), 'utf8');
    expect(html.toLowerCase()).toContain('emulator');
    // report.html draws the chain left to right: a thumbnail or video poster per downloaded step.
    const card = html.match(/<article class="card succeeded chain"[\s\S]*?<\/article>/)?.[0] ?? '';
    expect([...card.matchAll(/<figcaption>([^<]*)<\/figcaption>/g)].map((m) => m[1]).slice(1)).toEqual([
      'stylize · done',
      'animate · succeeded',
      'social · done',
      'shop · done',
    ]);
    expect([...card.matchAll(/<img src="\.thumbs\//g)]).toHaveLength(4);
    expect(card.match(/▶ video/g)).toHaveLength(2);
    expect(await hashTree(join(ROOT, 'samples'))).toBe(samplesBefore);
  }, 60_000);
});

describe('genpipe run exit codes', () => {
  async function promptFolder(name: string): Promise<string> {
    const dir = join(root, name);
    await put(dir, 'genpipe.yaml', 'rules:\n  - match: "*.txt"\n    request: { type: image }\n');
    for (const n of ['one', 'two', 'three']) await put(dir, `${n}.txt`, `prompt ${n}`);
    return dir;
  }

  it('exits 2 with the line and field of a recipe error', async () => {
    const dir = await promptFolder('bad-recipe');
    const recipe = await put(
      root,
      'bad.yaml',
      'rules:\n  - match: "*.txt"\n    input_as: sideways\n    request: { type: image }\n',
    );
    const r = await runGenpipe(['run', dir, '--out', join(root, 'bad-out'), '--recipe', recipe], envFor(KEY));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `${recipe}:3: rules[0].input_as: must be one of source, start_frame, end_frame, image_ref, prompt`,
    );
  });

  it('exits 2 when no service is configured, explaining every way to give one', async () => {
    const dir = await promptFolder('no-service');
    const r = await runGenpipe(['run', dir, '--out', join(root, 'no-service-out')], cleanEnv());
    expect(r.code).toBe(2);
    for (const way of ['GENPIPE_BASE_URL', 'GENPIPE_API_KEY', '--base-url', '--api-key', '--emulator']) {
      expect(r.stderr).toContain(way);
    }
  });

  it('exits 130 on Ctrl-C: no new work, submitted jobs finished, the rest listed as not processed', async () => {
    const dir = join(root, 'interrupted');
    await put(dir, 'genpipe.yaml', 'rules:\n  - match: "*.txt"\n    request: { type: image }\n');
    for (let i = 0; i < 12; i++) await put(dir, `p${String(i).padStart(2, '0')}.txt`, `ctrl-c prompt ${i}`);
    const out = join(root, 'interrupted-out');
    // The first job stays processing until the signal has been taken: no second job can start first.
    const jobs = await hold(emu, { prompt: '^ctrl-c prompt \\d+$' });
    const child = spawnGenpipe(
      ['run', dir, '--out', out, '--json', '--concurrency', '1', '--poll-interval', '1'],
      envFor(KEY),
    );
    try {
      await child.until((ev) => ev.some((e) => e.state === 'submitted'), 'a submitted job');
      child.proc.kill('SIGINT');
      await child.until((ev) => ev.some((e) => e.type === 'batch_stopping'), 'the batch stopping');
    } finally {
      await unhold(emu, jobs);
    }
    const { code } = await child.exited;
    expect(code, child.stderr()).toBe(130);
    expect(child.stderr()).toContain('genpipe: the batch stopped early: stopped by Ctrl-C / SIGINT');
    const report = await readJson(join(out, 'report.json'));
    expect(report.stopped_early.reason).toBe('stopped by Ctrl-C / SIGINT');
    // Each file left says why in the same words, the signal kept.
    const left = report.items.filter((i: { status: string }) => i.status === 'unprocessed');
    expect(new Set(left.map((i: { reason: string }) => i.reason))).toEqual(
      new Set(['not processed: the batch stopped early (stopped by Ctrl-C / SIGINT)']),
    );
    expect(report.totals.inputs).toBe(12);
    // The one job at the service when the signal came finished; nothing else was started.
    expect(report.totals.succeeded).toBe(1);
    expect(report.totals.unprocessed).toBe(11);
    expect(report.totals.succeeded + report.totals.unprocessed).toBe(12);
  });

  it.each([
    ['a revoked key', REVOKED_KEY, 'API key has been revoked'],
    ['a suspended client', SUSPENDED_KEY, 'API client is suspended'],
  ])('exits 3 with %s and lists every file as not processed', async (_what, key, detail) => {
    const dir = await promptFolder(`stopped-${key}`);
    const out = join(root, `stopped-out-${key}`);
    const r = await runGenpipe(['run', dir, '--out', out, '--concurrency', '1'], envFor(key));
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain(detail);
    expect(r.stderr + r.stdout).not.toContain(key);
    const report = await readJson(join(out, 'report.json'));
    expect(report.stopped_early.reason).toContain(detail);
    expect(report.totals).toMatchObject({ inputs: 3, unprocessed: 3, succeeded: 0, failed: 0 });
    for (const item of report.items) {
      expect(item.status).toBe('unprocessed');
      expect(item.reason).toContain('not processed: the batch stopped early');
    }
  });
});
