/**
 * Recipes whose rule targets the legacy surface (`request: { surface: legacy, operation: … }`), through
 * the CLI against the emulator, counting what the emulator created in its admin view: photon images
 * from prompt files, a re-run that creates nothing, a kill -9 while the generations are held and the
 * re-run that collects them, a bad field of a rule and of a sidecar, and a local video reframed by URL
 * (a `media_url` template, and the emulator's own media store).
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { ffprobePath } from '../../src/media/ffmpeg-path.ts';
import { adminRows, heldGenerations, hold, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { clip, PHOTON, recipeFolder } from './legacy-recipe-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

// biome-ignore lint/suspicious/noExplicitAny: reports read loosely
type Loose = any;

let emu: RunningEmulator;
let files: Server;
let filesUrl = '';
/** The folder the little file server publishes (the "CDN" of a media_url template). */
let published = '';
const dirs: string[] = [];

beforeAll(async () => {
  emu = await startTestEmulator({ tiny_outputs: true });
  published = mkdtempSync(join(tmpdir(), 'genpipe-cdn-'));
  dirs.push(published);
  files = createServer((req, res) => {
    const path = join(
      published,
      ...decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).split('/'),
    );
    try {
      const size = statSync(path).size;
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': size });
      createReadStream(path).pipe(res);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
  const address = files.address();
  filesUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => {
  killChildren();
  await new Promise((resolve) => files?.close(resolve));
  await emu?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
afterEach(async () => {
  await unhold(emu);
});

function folder(recipe: string, inputs: Record<string, string | Buffer>): { input: string; out: string } {
  return recipeFolder(dirs, recipe, inputs);
}

function readJson(path: string): Loose {
  return JSON.parse(readFileSync(path, 'utf8'));
}

async function legacyCount(): Promise<number> {
  return (await adminRows(emu)).length;
}

/** A rule reframing the videos `match` takes, their media by `mediaUrl` (as the YAML value). */
function reframeRule(match: string, mediaUrl: string, model: string, ratio: string): string {
  return [
    `  - match: "${match}"`,
    `    media_url: ${mediaUrl}`,
    `    request: { surface: legacy, operation: reframe-video, model: ${model}, aspect_ratio: "${ratio}" }`,
    '',
  ].join('\n');
}

const PROMPTS = {
  'fox.txt': 'a red fox in the snow',
  'heron.txt': 'a heron at dawn',
  'lighthouse.txt': 'a lighthouse in a storm',
};

async function run(input: string, out: string, extra: string[] = []) {
  const r = await runCli(['run', input, '--out', out, ...extra], cliEnv(emu), 120_000);
  return { ...r, report: existsReport(out) };
}

function existsReport(out: string): Loose {
  try {
    return readJson(join(out, 'report.json'));
  } catch {
    return null;
  }
}

/** The (width, height) of an image output. */
async function sizeOf(path: string): Promise<[number, number]> {
  const m = await sharp(path).metadata();
  return [m.width ?? 0, m.height ?? 0];
}

describe('photon images from prompt files', () => {
  it('downloads one image of the asked shape per prompt, reports them; a re-run creates nothing, and downloads again an output found missing', async () => {
    const { input, out } = folder(PHOTON, PROMPTS);
    const before = await legacyCount();
    const first = await run(input, out);
    expect(first.code, first.stderr).toBe(0);
    expect((await legacyCount()) - before).toBe(3);
    expect(first.report.totals).toMatchObject({ succeeded: 3, failed: 0 });
    for (const name of Object.keys(PROMPTS)) {
      const result = readJson(join(out, name, 'result.json'));
      expect(result.state).toBe('completed');
      expect(result.outputs).toHaveLength(1);
      const [w, h] = await sizeOf(join(out, result.outputs[0]));
      expect(w / h).toBeCloseTo(16 / 9, 1);
      expect(result.request).toMatchObject({
        surface: 'legacy',
        operation: 'generate-image',
        model: 'photon-1',
      });
    }
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('fox.txt');

    const again = await run(input, out);
    expect(again.code, again.stderr).toBe(0);
    expect((await legacyCount()) - before).toBe(3);

    // An output found missing is downloaded again from its generation: nothing is created.
    const fox = readJson(join(out, 'fox.txt', 'result.json')).outputs[0];
    rmSync(join(out, fox));
    const third = await run(input, out);
    expect(third.code, third.stderr).toBe(0);
    expect((await legacyCount()) - before).toBe(3);
    const [w, h] = await sizeOf(join(out, fox));
    expect(w / h).toBeCloseTo(16 / 9, 1);
  });

  it('kill -9 while the generations are held: the re-run collects them without creating any again', async () => {
    const { input, out } = folder(PHOTON, PROMPTS);
    const before = await legacyCount();
    await hold(emu, { state: 'processing', prompt: 'fox|heron|lighthouse' });
    const child = spawnGenpipe(['run', input, '--out', out, '--json'], cliEnv(emu));
    await heldGenerations(emu, 3);
    child.proc.kill('SIGKILL');
    await child.exited;
    expect((await legacyCount()) - before).toBe(3);
    await unhold(emu);

    const again = await run(input, out);
    expect(again.code, again.stderr).toBe(0);
    expect((await legacyCount()) - before).toBe(3);
    expect(again.report.totals).toMatchObject({ succeeded: 3, failed: 0 });
    for (const name of Object.keys(PROMPTS)) {
      const result = readJson(join(out, name, 'result.json'));
      const [w, h] = await sizeOf(join(out, result.outputs[0]));
      expect(w / h).toBeCloseTo(16 / 9, 1);
    }
  });
});

describe('a request the legacy surface would refuse', () => {
  it("a bad field in the rule stops the batch before anything is sent, with the surface's detail at the rule's field", async () => {
    const recipe = PHOTON.replace('"16:9"', '"5:4"');
    const { input, out } = folder(recipe, PROMPTS);
    const before = await legacyCount();
    const r = await run(input, out);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "genpipe.yaml:4: rules[0].request.aspect_ratio: Expected one of '1:1', '16:9', '9:16', '4:3', '3:4', '21:9', '9:21' for aspect_ratio but received '5:4'",
    );
    expect((await legacyCount()) - before).toBe(0);
  });

  it('a rule whose operation takes media without media_url, and a chain step on the legacy surface, stop the batch (exit 2)', async () => {
    const recipe = [
      'rules:',
      '  - match: "*.mp4"',
      '    request: { surface: legacy, operation: reframe-video, model: ray-2, aspect_ratio: "9:16" }',
      '  - match: "*.png"',
      '    steps:',
      '      - name: one',
      '        request: { surface: legacy, operation: reframe-image, model: photon-1, aspect_ratio: "1:1" }',
      '  - match: "*.txt"',
      '    media_url: "ftp://example.com/{path}"',
      '    request: { surface: legacy, operation: generate-image }',
      '',
    ].join('\n');
    const { input, out } = folder(recipe, PROMPTS);
    const r = await run(input, out);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "genpipe.yaml:2: rules[0]: the legacy surface takes media by URL: give the rule media_url (a URL template such as https://cdn.example.com/{path}, or 'emulator' against genpipe serve)",
    );
    expect(r.stderr).toContain(
      "genpipe.yaml:7: rules[1].steps[0].request.surface: a chain's steps are generations of the agents surface: a request to the legacy surface is a rule of its own",
    );
    expect(r.stderr).toContain(
      'genpipe.yaml:9: rules[2].media_url: must be a URL template with {path} (https://cdn.example.com/{path}) or \'emulator\' (genpipe serve only): "ftp://example.com/{path}" does not make an http(s) URL',
    );
  });

  it("a bad field in a sidecar fails that file with the surface's detail and the sidecar's name; the others go on", async () => {
    const { input, out } = folder(PHOTON, { ...PROMPTS, 'fox.txt.json': '{ "format": "gif" }' });
    const before = await legacyCount();
    const r = await run(input, out);
    expect(r.code).toBe(1);
    expect((await legacyCount()) - before).toBe(2);
    const fox = r.report.items.find((i: Loose) => i.input === 'fox.txt');
    expect(fox.status).toBe('failed');
    expect(fox.reason).toBe(
      "Expected one of 'jpg', 'png' for format but received 'gif' (format set by the sidecar fox.txt.json)",
    );
    expect(r.report.totals).toMatchObject({ succeeded: 2, failed: 1 });
  });
});

describe('a file the legacy operation does not take', () => {
  it('an image where reframe-video takes a video fails that file, naming the rule and the operation; the others go on', async () => {
    const { input, out } = folder(`rules:\n${reframeRule('*.{mp4,png}', 'emulator', 'ray-2', '9:16')}`, {
      'still.png': await sharp({
        create: { width: 32, height: 24, channels: 3, background: '#336699' },
      })
        .png()
        .toBuffer(),
    });
    clip(join(input, 'clip.mp4'));
    const before = await legacyCount();
    const r = await run(input, out);
    expect(r.code).toBe(1);
    expect((await legacyCount()) - before).toBe(1);
    const still = r.report.items.find((i: Loose) => i.input === 'still.png');
    expect(still.reason).toBe(
      'wrong type: the file is an image (image/png), but rules[0] "*.{mp4,png}" uses it as media of operation \'reframe-video\', which takes a video',
    );
    expect(r.report.totals).toMatchObject({ succeeded: 1, failed: 1 });
  });
});

function probe(path: string): { width: number; height: number } {
  const json = execFileSync(ffprobePath(), ['-v', 'error', '-show_streams', '-of', 'json', path], {
    encoding: 'utf8',
  });
  const video = JSON.parse(json).streams.find((s: Loose) => s.codec_type === 'video');
  return { width: video.width, height: video.height };
}

describe('a local video reframed by URL', () => {
  it('media_url template: the legacy surface fetches the file at its public address; 9:16 comes back', async () => {
    const { input, out } = folder(
      `rules:\n${reframeRule('clips/*.mp4', `"${filesUrl}/{path}"`, 'ray-2', '9:16')}`,
      {},
    );
    mkdirSync(join(input, 'clips'));
    clip(join(input, 'clips', 'my clip.mp4'));
    mkdirSync(join(published, 'clips'), { recursive: true });
    clip(join(published, 'clips', 'my clip.mp4'));
    const before = await legacyCount();
    const r = await run(input, out, ['-v']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toContain(
      "clips/my clip.mp4: by URL: the service fetches the file at the rule's media_url",
    );
    expect((await legacyCount()) - before).toBe(1);
    const result = readJson(join(out, 'clips/my clip.mp4', 'result.json'));
    expect(result.request.media).toEqual({ url: `${filesUrl}/clips/my%20clip.mp4` });
    const { width, height } = probe(join(out, result.outputs[0]));
    expect(width / height).toBeCloseTo(9 / 16, 1);
  });

  it("media_url: emulator: genpipe sends the bytes to the emulator's media store; 1:1 comes back", async () => {
    const { input, out } = folder(`rules:\n${reframeRule('*.mp4', 'emulator', 'ray-flash-2', '1:1')}`, {});
    clip(join(input, 'clip.mp4'));
    const before = await legacyCount();
    const r = await run(input, out);
    expect(r.code, r.stderr).toBe(0);
    expect((await legacyCount()) - before).toBe(1);
    const result = readJson(join(out, 'clip.mp4', 'result.json'));
    const { width, height } = probe(join(out, result.outputs[0]));
    expect(width).toBe(height);
  });

  it('media_url: emulator is checked where the legacy creates go: a --base-url that is not the emulator does not matter', async () => {
    const { input, out } = folder(`rules:\n${reframeRule('*.mp4', 'emulator', 'ray-2', '1:1')}`, {});
    clip(join(input, 'clip.mp4'));
    const before = await legacyCount();
    // The legacy surface is the emulator's (its media store is asked), the agents base URL is not.
    const r = await runCli(
      ['run', input, '--out', out],
      cliEnv(emu, { GENPIPE_BASE_URL: filesUrl, GENPIPE_LEGACY_BASE_URL: `${emu.url}/dream-machine/v1` }),
      120_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect((await legacyCount()) - before).toBe(1);
  });
});

describe('a dry run', () => {
  it('shows each legacy request as it would go, the URL in place, and prices it as the legacy surface charges it', async () => {
    const { input, out } = folder(
      PHOTON + reframeRule('clips/*.mp4', '"https://cdn.example.com/{path}"', 'ray-2', '9:16'),
      { 'fox.txt': 'a red fox in the snow' },
    );
    mkdirSync(join(input, 'clips'));
    clip(join(input, 'clips', 'a b.mp4'));
    const before = await legacyCount();
    const r = await runCli(['run', input, '--out', out, '--dry-run'], cliEnv(emu), 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('clips/a b.mp4: would send video_reframe (ray-2), the file by URL (');
    expect(r.stdout).toContain(
      '{"surface":"legacy","operation":"reframe-video","model":"ray-2","aspect_ratio":"9:16","media":{"url":"https://cdn.example.com/clips/a%20b.mp4"}}',
    );
    expect(r.stdout).toContain(
      'fox.txt: would send image (photon-1), the text as the prompt: {"surface":"legacy","operation":"generate-image","model":"photon-1","aspect_ratio":"16:9","prompt":"a red fox in the snow"}',
    );
    expect(r.stderr).toContain('estimated cost: 11 credits (1 image × 1, 1 video_reframe × 10)');
    expect((await legacyCount()) - before).toBe(0);
  });
});

describe('the other operations', () => {
  it('generate-video from a prompt file and reframe-image of a local image, each of the asked shape', async () => {
    const recipe = [
      'rules:',
      '  - match: "*.txt"',
      '    request: { surface: legacy, operation: generate-video, model: ray-flash-2, aspect_ratio: "9:16" }',
      '  - match: "*.png"',
      '    media_url: emulator',
      '    request: { surface: legacy, operation: reframe-image, model: photon-flash-1, aspect_ratio: "21:9", format: png }',
      '',
    ].join('\n');
    const still = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#884422' } })
      .png()
      .toBuffer();
    const { input, out } = folder(recipe, { 'waves.txt': 'waves on a beach', 'still.png': still });
    const before = await legacyCount();
    const r = await run(input, out);
    expect(r.code, r.stderr).toBe(0);
    expect((await legacyCount()) - before).toBe(2);
    const video = readJson(join(out, 'waves.txt', 'result.json')).outputs[0];
    expect(video).toMatch(/\.mp4$/);
    const { width, height } = probe(join(out, video));
    expect(width / height).toBeCloseTo(9 / 16, 1);
    const image = readJson(join(out, 'still.png', 'result.json')).outputs[0];
    expect(image).toMatch(/\.png$/);
    const [w, h] = await sizeOf(join(out, image));
    expect(w / h).toBeCloseTo(21 / 9, 1);
  });
});
