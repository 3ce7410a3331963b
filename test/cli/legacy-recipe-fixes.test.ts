import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, startTestEmulator } from '../helpers/emulator.ts';
import { clip, PHOTON, recipeFolder } from './legacy-recipe-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

// biome-ignore lint/suspicious/noExplicitAny: reports read loosely
type Loose = any;

let emu: RunningEmulator;
/** A server that is not the emulator: every request answered with an HTML 501 page. */
let other: Server;
let otherUrl = '';
let otherHits = 0;
const dirs: string[] = [];
const TOKEN = 'SUPERSECRET2xyz';
/** The bytes the other server publishes at /media/clip.mp4. */
let published: Buffer | null = null;

beforeAll(async () => {
  emu = await startTestEmulator({ tiny_outputs: true });
  other = createServer((req, res) => {
    // The one thing it serves: a published clip, to the holder of its token.
    if (req.url === `/media/clip.mp4?token=${TOKEN}` && published !== null) {
      res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': published.length });
      res.end(published);
      return;
    }
    otherHits++;
    res.writeHead(501, { 'content-type': 'text/html' });
    res.end(
      '<!DOCTYPE html>\n<html><head><title>501 Not Implemented</title></head>\n<body><h1>Not Implemented</h1><p>The server does not support this.</p></body></html>\n',
    );
  });
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  const address = other.address();
  otherUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(async () => {
  await new Promise((resolve) => other?.close(resolve));
  await emu?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function folder(recipe: string, inputs: Record<string, string | Buffer>): { input: string; out: string } {
  return recipeFolder(dirs, recipe, inputs);
}

function report(out: string): Loose {
  return JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
}

function itemOf(out: string, name: string): Loose {
  return report(out).items.find((i: Loose) => i.input === name);
}

async function legacyCount(): Promise<number> {
  return (await adminRows(emu)).length;
}

describe('the prompt-length rule is one for both surfaces', () => {
  it('a whitespace-only and a too-long prompt file fail at plan on the legacy surface, nothing sent', async () => {
    const { input, out } = folder(PHOTON, {
      'blank.txt': '   \n\n',
      'long.txt': 'x'.repeat(6001),
      'fox.txt': 'a red fox',
    });
    const before = await legacyCount();
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 120_000);
    expect(r.code, r.stderr).toBe(1);
    expect((await legacyCount()) - before).toBe(1);
    expect(itemOf(out, 'blank.txt').reason).toBe(
      'Prompt must be between 1 and 6000 characters (the prompt file is empty or holds only whitespace)',
    );
    expect(itemOf(out, 'long.txt').reason).toBe(
      'Prompt must be between 1 and 6000 characters (the prompt file holds 6001 characters)',
    );
  });
});

const REFRAME_EMULATOR = [
  'rules:',
  '  - match: "*.mp4"',
  '    media_url: emulator',
  '    request: { surface: legacy, operation: reframe-video, model: ray-2, aspect_ratio: "1:1" }',
  '',
].join('\n');

describe('media_url: emulator is checked where the legacy creates go', () => {
  it('--base-url the emulator, --legacy-base-url another server: refused, no byte and no create sent, a short reason', async () => {
    const { input, out } = folder(REFRAME_EMULATOR, {});
    clip(join(input, 'clip.mp4'));
    const hitsBefore = otherHits;
    const legacyBase = `${otherUrl}/dream-machine/v1`;
    const r = await runCli(
      ['run', input, '--out', out, '--legacy-base-url', legacyBase],
      cliEnv(emu),
      120_000,
    );
    expect(r.code).toBe(1);
    const reason = itemOf(out, 'clip.mp4').reason as string;
    expect(reason, r.stderr).toContain(
      `media_url: emulator works against genpipe serve only, and ${otherUrl} is not it (GET /_emulator/media answered 501`,
    );
    expect(reason).not.toContain('<');
    // Only the check reached the other server: no create.
    expect(otherHits - hitsBefore).toBe(1);
  });

  it("a non-JSON error answer of a create becomes a short reason: the status and the answer's first line of text", async () => {
    const { input, out } = folder(PHOTON, { 'fox.txt': 'a red fox' });
    const r = await runCli(
      ['run', input, '--out', out, '--legacy-base-url', `${otherUrl}/dream-machine/v1`],
      cliEnv(emu),
      120_000,
    );
    expect(r.code).toBe(1);
    const reason = itemOf(out, 'fox.txt').reason as string;
    expect(reason, r.stderr).toContain('501 Not Implemented');
    expect(reason).not.toContain('<');
    expect(reason).not.toContain('does not support');
  });
});

describe("a rule's media_url is part of the recipe", () => {
  it('a file failed on a bad template is sent again once the template is fixed; the reason names the URL', async () => {
    // The emulator's own /_storage host serves nothing at this path: the legacy surface's fetch fails 404.
    const bad = `${emu.url}/nowhere/{path}?token=SUPERSECRET1`;
    const rule = (template: string) =>
      REFRAME_EMULATOR.replace('media_url: emulator', `media_url: "${template}"`);
    const { input, out } = folder(rule(bad), {});
    clip(join(input, 'clip.mp4'));
    const first = await runCli(['run', input, '--out', out], cliEnv(emu), 120_000);
    expect(first.code, first.stderr).toBe(1);
    const reason = itemOf(out, 'clip.mp4').reason as string;
    expect(reason).toContain('media.url: failed to fetch URL (HTTP 404)');
    expect(reason).toContain(`${emu.url}/nowhere/clip.mp4?token=`);
    expect(reason).not.toContain('SUPERSECRET1');
    // The same recipe again: a media fetch failure is not the file's own, it is tried again.
    const before = await legacyCount();
    const again = await runCli(['run', input, '--out', out], cliEnv(emu), 120_000);
    expect(again.code).toBe(1);
    expect((await legacyCount()) - before).toBe(1);
    // The template fixed (the emulator's media store): a recipe change, the file is sent and succeeds.
    writeFileSync(join(input, 'genpipe.yaml'), REFRAME_EMULATOR);
    const fixed = await runCli(['run', input, '--out', out], cliEnv(emu), 120_000);
    expect(fixed.code, fixed.stdout + fixed.stderr).toBe(0);
    expect(itemOf(out, 'clip.mp4').status).toBe('succeeded');
  });
});

describe("the recipe checker's lines for legacy rules", () => {
  it('one line per problem: a bad media_url, a missing or misspelt operation, the operation named where the file goes', async () => {
    const recipe = [
      'rules:',
      '  - match: "a/*.mp4"',
      '    media_url: "ftp://example.com/{path}"',
      '    request: { surface: legacy, operation: reframe-video, model: ray-2, aspect_ratio: "9:16" }',
      '  - match: "b/*.mp4"',
      '    media_url: emulator',
      '    request: { surface: legacy, model: ray-2, aspect_ratio: "9:16" }',
      '  - match: "c/*.mp4"',
      '    request: { surface: legacy, operation: refrane-video, model: ray-2, aspect_ratio: "9:16" }',
      '  - match: "d/*.mp4"',
      '    media_url: emulator',
      '    request: { surface: legacy, operation: reframe-video, model: ray-2, aspect_ratio: "9:16", media: { url: "https://x.example/a.mp4" } }',
      '',
    ].join('\n');
    const { input, out } = folder(recipe, {});
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 60_000);
    expect(r.code).toBe(2);
    const lines = r.stderr
      .split('\n')
      .filter((l) => l.includes('genpipe.yaml:'))
      .map((l) => l.slice(l.indexOf('genpipe.yaml:')));
    const ops =
      "Expected one of 'generate-image', 'generate-video', 'reframe-image', 'reframe-video' for operation";
    expect(lines).toEqual([
      'genpipe.yaml:3: rules[0].media_url: must be a URL template with {path} (https://cdn.example.com/{path}) or \'emulator\' (genpipe serve only): "ftp://example.com/{path}" does not make an http(s) URL',
      `genpipe.yaml:7: rules[1].request.operation: ${ops} but received nothing`,
      `genpipe.yaml:9: rules[2].request.operation: ${ops} but received 'refrane-video'`,
      "genpipe.yaml:12: rules[3].request.media: the file goes here (input_as defaults to 'source' for operation 'reframe-video'); remove this field or choose another input_as",
    ]);
  });
});

describe('a dry run of media_url: emulator', () => {
  it('against a legacy server that is not the emulator says the file would fail, with the text a run gives', async () => {
    const { input, out } = folder(REFRAME_EMULATOR, {});
    clip(join(input, 'clip.mp4'));
    const args = ['run', input, '--out', out, '--legacy-base-url', `${otherUrl}/dream-machine/v1`];
    const dry = await runCli([...args, '--dry-run'], cliEnv(emu), 60_000);
    expect(dry.code, dry.stdout + dry.stderr).toBe(1);
    const real = await runCli(args, cliEnv(emu), 120_000);
    expect(real.code).toBe(1);
    const reason = itemOf(out, 'clip.mp4').reason as string;
    expect(dry.stdout).toContain(`clip.mp4: would fail at submit: ${reason}`);
    // Against the emulator itself the dry run would send it.
    const ok = await runCli(['run', input, '--out', out, '--dry-run'], cliEnv(emu), 60_000);
    expect(ok.stdout).toContain('clip.mp4: would send');
  });
});

/** Every file under `dir` (its journal included) that holds `text`, as raw bytes. */
function filesHolding(dir: string, text: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .filter((path) => readFileSync(path).includes(text));
}

describe("a media_url template's token", () => {
  it('is sent to the service but is nowhere in the out dir: not in the journal, not in result.json', async () => {
    const rule = REFRAME_EMULATOR.replace(
      'media_url: emulator',
      `media_url: "${otherUrl}/media/{path}?token=${TOKEN}"`,
    );
    const { input, out } = folder(rule, {});
    clip(join(input, 'clip.mp4'));
    published = readFileSync(join(input, 'clip.mp4'));
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 120_000);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(filesHolding(out, TOKEN)).toEqual([]);
    const result = JSON.parse(readFileSync(join(out, 'clip.mp4', 'result.json'), 'utf8'));
    expect(result.request.media.url).toBe(`${otherUrl}/media/clip.mp4?token=[redacted]`);
  });
});

describe('media_url on a rule of the agents surface', () => {
  it('is a recipe error, not ignored', async () => {
    const recipe = [
      'rules:',
      '  - match: "*.png"',
      '    media_url: "https://cdn.example.com/{path}"',
      '    request: { type: image_edit, model: uni-1, prompt: "a fox" }',
      '',
    ].join('\n');
    const { input, out } = folder(recipe, {});
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'genpipe.yaml:3: rules[0].media_url: media_url is for legacy rules (request.surface: legacy)',
    );
  });
});

describe("the emulator's admin view of legacy generations", () => {
  it('has started_at and the reads genpipe made of them, as for the agents surface', async () => {
    const { input, out } = folder(PHOTON, { 'owl.txt': 'an owl at night' });
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 120_000);
    expect(r.code, r.stderr).toBe(0);
    const id = JSON.parse(readFileSync(join(out, 'owl.txt', 'result.json'), 'utf8')).generation_id;
    const row = (await adminRows(emu)).find((g) => g.id === id) as Loose;
    expect(row.surface).toBe('legacy');
    expect(row.started_at).not.toBeNull();
    expect(Date.parse(row.started_at)).toBeLessThanOrEqual(Date.parse(row.finished_at));
    expect(row.reads).toBeGreaterThan(0);
  });
});

describe('one name for the type a legacy generation is charged as', () => {
  it('the admin row, the balance, the costs and the dry run all say video_reframe for a reframe-video', async () => {
    const { input, out } = folder(REFRAME_EMULATOR, {});
    clip(join(input, 'clip.mp4'));
    const dry = await runCli(['run', input, '--out', out, '--dry-run'], cliEnv(emu), 60_000);
    expect(dry.stderr).toContain('1 video_reframe × 10');
    const r = await runCli(['run', input, '--out', out], cliEnv(emu), 120_000);
    expect(r.code, r.stderr).toBe(0);
    const id = JSON.parse(readFileSync(join(out, 'clip.mp4', 'result.json'), 'utf8')).generation_id;
    const row = (await adminRows(emu)).find((g) => g.id === id) as Loose;
    expect(row.type).toBe('video_reframe');
    expect(row.legacy_type).toBe('reframe_video');
    const balance = (await (await fetch(`${emu.url}/_emulator/balance`)).json()) as Loose;
    const types = balance.data.flatMap((c: Loose) => Object.keys(c.by_type));
    expect(types).toContain('video_reframe');
    expect(types).not.toContain('reframe_video');
  });
});
