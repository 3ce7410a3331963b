/**
 * Chains through the CLI, as a user runs them, against an emulator on loopback: a dry run lists and
 * prices every step of each input's chain (its count and cost are the emulator's charges after a real
 * run of the same chain), the recipe check reports the chain's problems with the recipe's others, a
 * step's recorded request says how a by-URL output travelled, an intermediate step not downloaded is
 * not called downloaded, and the plain progress names each step as it starts, ends or fails.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { STEP_NOT_DOWNLOADED_NOTE } from '../../src/pipeline/report/result-json.ts';
import { HDR_EXTEND_DETAIL } from '../../src/spec/details.ts';
import { FAN_OUT_CHAIN } from '../helpers/chain-recipe.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { put } from '../pipeline/stage-helpers.ts';
import { noisePng } from '../pipeline/watch-helpers.ts';
import { cliEnv, runCli } from './run-cli.ts';

/** Distinct prices, so that a sum says which ones were used. */
const COSTS = { image: 2, image_edit: 3, video: 10, video_edit: 7, video_reframe: 5 };

const CHAIN = FAN_OUT_CHAIN;

let emu: RunningEmulator;
let root: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-chain-cli-'));
  emu = await startTestEmulator({ costs: COSTS, tiny_outputs: true, blocked_words: ['forbidden'] });
  env = cliEnv(emu);
});

afterAll(async () => {
  await emu?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: tests read JSON loosely
type Loose = any;

function jsonLines(stdout: string): Loose[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/** `<root>/<name>` with the recipe and two photos; returns it and its out dir. */
async function chainFolder(name: string, recipe = CHAIN): Promise<{ input: string; out: string }> {
  const input = join(root, name);
  await put(input, 'genpipe.yaml', recipe);
  await put(input, 'a.png', await noisePng(64, 48));
  await put(input, 'b.png', await noisePng(48, 64));
  return { input, out: join(root, `${name}-out`) };
}

/** How many generations the emulator holds (all clients). */
async function generationCount(): Promise<number> {
  return (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data.length;
}

const BY_ID = (step: string) => `<the output of step '${step}', by generation id>`;
const BY_URL = (step: string) => `<the output of step '${step}', by its output URL>`;

describe('genpipe run --dry-run of a chain', () => {
  it('lists every step of each chain, counts and prices them all: what a real run is then charged', async () => {
    const { input, out } = await chainFolder('dry');
    const plain = await runCli(['run', input, '--out', out, '--dry-run'], env);
    expect(plain.code, plain.stderr).toBe(0);
    const lines = plain.stdout.trim().split('\n').slice(1);
    expect(lines.filter((l) => l.startsWith('a.png: '))).toEqual([
      expect.stringMatching(/^a\.png: would send a chain of 4 steps, the file uploaded inline \([^)]+\)$/),
      `a.png: step 'stylize': would send image_edit (uni-1): {"type":"image_edit","model":"uni-1","prompt":"watercolor","source":{"file_id":"<the file, uploaded inline>"}}`,
      `a.png: step 'animate' (after stylize): would send video (ray-3.2): {"type":"video","model":"ray-3.2","prompt":"slow pan","video":{"resolution":"360p","start_frame":{"url":"${BY_URL('stylize')}"}}}`,
      `a.png: step 'portrait' (after animate): would send video_reframe (ray-3.2): {"type":"video_reframe","model":"ray-3.2","prompt":"keep it","aspect_ratio":"9:16","source":{"generation_id":"${BY_ID('animate')}"},"video":{"resolution":"360p"}}`,
      `a.png: step 'square' (after animate): would send video_reframe (ray-3.2): {"type":"video_reframe","model":"ray-3.2","prompt":"keep it","aspect_ratio":"1:1","source":{"generation_id":"${BY_ID('animate')}"},"video":{"resolution":"360p"}}`,
    ]);
    expect(lines.filter((l) => l.startsWith('b.png: '))).toHaveLength(5);
    expect(plain.stderr).toContain(
      'genpipe: generations: 2 image_edit, 2 video, 4 video_reframe (8 in all)\n',
    );
    expect(plain.stderr).toContain(
      `genpipe: estimated cost: 46 credits (2 image_edit × 3, 2 video × 10, 4 video_reframe × 5), from the emulator's configured costs`,
    );

    const json = await runCli(['run', input, '--out', out, '--dry-run', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    const events = jsonLines(json.stdout);
    const a = events.find((e) => e.input === 'a.png');
    expect(a.steps.map((s: Loose) => [s.name, s.outcome, s.generation_type, s.after])).toEqual([
      ['stylize', 'send', 'image_edit', []],
      ['animate', 'send', 'video', ['stylize']],
      ['portrait', 'send', 'video_reframe', ['animate']],
      ['square', 'send', 'video_reframe', ['animate']],
    ]);
    expect(a.steps[1].request.video.start_frame).toEqual({ url: BY_URL('stylize') });
    const summary = events.at(-1);
    expect(summary.generations).toEqual({ image_edit: 2, video: 2, video_reframe: 4 });
    expect(summary.cost.credits).toBe(46);

    // The same chain run for real: the emulator charges what the dry run counted and priced.
    const run = await runCli(['run', input, '--out', out, '--json', '--poll-interval', '1'], env, 120_000);
    expect(run.code, run.stderr).toBe(0);
    const balance = (await call(emu, 'GET', '/_emulator/balance', { key: null })).body.data as Loose[];
    const a0 = balance.find((c) => c.client_id === 'a');
    const generations = Object.fromEntries(
      Object.entries(a0.by_type as Record<string, Loose>).map(([t, v]) => [t, v.generations]),
    );
    expect(generations).toEqual(summary.generations);
    expect(a0.credits_charged).toBe(summary.cost.credits);
  }, 150_000);
});

/** A chain with one problem of each kind: a missing reference, an unknown step, and the chain checks'. */
const BROKEN = `rules:
  - match: "*.png"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor", image_ref: [{ ref: style }] }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "slow pan", video: { start_frame: { from: stylize } } }
      - name: ghost
        request: { type: video_reframe, model: ray-3.2, prompt: "x", aspect_ratio: "9:16", source: { from: nowhere } }
      - name: hdr
        request: { type: video, model: ray-3.2, prompt: "x", video: { hdr: true, resolution: 1080p, start_frame: { from: animate } } }
      - name: wide
        request: { type: video_reframe, model: ray-3.2, prompt: "x", aspect_ratio: "1:1", source: { from: stylize } }
      - name: a
        request: { type: image, model: uni-1, prompt: "x", image_ref: [{ from: b }] }
      - name: b
        request: { type: image_edit, model: uni-1, prompt: "x", source: { from: a } }
references:
  style: refs/missing.png
`;

describe('the recipe check of a chain with other problems', () => {
  it('reports every problem at once, the chain checks with the missing reference and the unknown step', async () => {
    const { input, out } = await chainFolder('broken', BROKEN);
    const before = await generationCount();
    const r = await runCli(['run', input, '--out', out], env);
    expect(r.code, r.stderr).toBe(2);
    const file = join(input, 'genpipe.yaml');
    const lines = r.stderr.split('\n').filter((l) => l.includes(`${file}:`));
    expect(lines.map((l) => l.slice(l.indexOf(file) + file.length + 1))).toEqual([
      "6: rules[0].steps[0].request.image_ref[0].ref: reference 'style' cannot be used: refs/missing.png: file not found (paths are relative to the recipe's folder)",
      "10: rules[0].steps[2].request.source.from: no step named 'nowhere' (steps: stylize, animate, ghost, hdr, wide, a, b)",
      `12: rules[0].steps[3].request.video.hdr: ${HDR_EXTEND_DETAIL}`,
      "14: rules[0].steps[4].request.source.from: source: step 'stylize' is of type 'image_edit', but this position needs a video output",
      '16: rules[0].steps[5].request.image_ref[0].from: the steps form a cycle (a takes from b takes from a): a step cannot use a step that uses it',
      "20: references.style: refs/missing.png: file not found (paths are relative to the recipe's folder)",
    ]);
    expect(await generationCount()).toBe(before);
  });
});

/** The lines of `input` in plain progress, without their times. */
const linesOf = (stdout: string, input: string) =>
  stdout
    .split('\n')
    .map((l) => l.replace(/^\[[^\]]*\] /, ''))
    .filter((l) => l.startsWith(`${input}: `))
    .map((l) => l.slice(input.length + 2));

describe('a chain run, as recorded and told', () => {
  it('records what a by-URL step sent, calls an intermediate step succeeded (not downloaded), and names each step in plain progress', async () => {
    const { input, out } = await chainFolder('told');
    // b.png's animate step is refused by moderation: it fails, and its reframes are not run.
    await put(input, 'b.png.json', JSON.stringify({ steps: { animate: { prompt: 'a forbidden pan' } } }));
    const log = join(root, 'told.log');
    const run = await runCli(
      ['run', input, '--out', out, '--poll-interval', '1', '--no-verbose-for-tests', '--log-file', log],
      env,
      120_000,
    );
    expect(run.code, run.stderr).toBe(1);

    // Plain progress (not a TTY, one line per outcome): every step's start and end, named.
    const a = linesOf(run.stdout, 'a.png');
    for (const step of ['stylize', 'animate', 'portrait', 'square']) {
      const started = a.indexOf(`step '${step}' started`);
      expect(started, a.join('\n')).toBeGreaterThanOrEqual(0);
      expect(a.indexOf(`step '${step}' done`)).toBeGreaterThan(started);
    }
    expect(a.indexOf("step 'animate' started")).toBeGreaterThan(a.indexOf("step 'stylize' done"));
    expect(a.at(-1)).toBe('succeeded');
    expect(a).toHaveLength(9);
    const b = linesOf(run.stdout, 'b.png');
    expect(b.slice(0, 3)).toEqual([
      "step 'stylize' started",
      "step 'stylize' done",
      "step 'animate' started",
    ]);
    expect(b[3]).toMatch(/^step 'animate' failed: .*moderat/);
    expect(b.slice(4)).toEqual([expect.stringMatching(/^failed at wait: step 'animate' failed: /)]);
    // The log (every state): each line of a step names it, its start with the generation.
    const logText = await readFile(log, 'utf8');
    expect(logText).toMatch(/a\.png: step 'portrait': completed\n/);
    expect(logText).toMatch(/a\.png: step 'square' started \(generation [0-9a-f-]{36}, request id /);

    // result.json: the stylized still travelled by URL: which generation's output URL, in words.
    const result: Loose = JSON.parse(await readFile(join(out, 'a.png', 'result.json'), 'utf8'));
    const steps = Object.fromEntries(result.steps.map((s: Loose) => [s.name, s]));
    expect(steps.animate.request.video.start_frame).toEqual({
      url: `<the output of step 'stylize', by its output URL: the first output URL of generation ${steps.stylize.generation_id}, presigned, read right before the create>`,
    });
    expect(steps.portrait.request.source).toEqual({ generation_id: steps.animate.generation_id });
    // The intermediate steps succeeded; their outputs were not downloaded, and they say so.
    expect(result.steps.map((s: Loose) => [s.name, s.state, s.note, s.outputs])).toEqual([
      ['stylize', 'succeeded', STEP_NOT_DOWNLOADED_NOTE, []],
      ['animate', 'succeeded', STEP_NOT_DOWNLOADED_NOTE, []],
      ['portrait', 'downloaded', null, ['a.png/portrait/output-0.mp4']],
      ['square', 'downloaded', null, ['a.png/square/output-0.mp4']],
    ]);
    // b.png's steps that never ran show what they would have carried.
    const bResult: Loose = JSON.parse(await readFile(join(out, 'b.png', 'result.json'), 'utf8'));
    const bSteps = Object.fromEntries(bResult.steps.map((s: Loose) => [s.name, s]));
    expect(bSteps.portrait.request.source).toEqual({ generation_id: BY_ID('animate') });
    expect(bSteps.portrait.state).toBe('failed');
    const report: Loose = JSON.parse(await readFile(join(out, 'report.json'), 'utf8'));
    const line = report.items.find((i: Loose) => i.input === 'a.png');
    expect(line.steps.map((s: Loose) => [s.name, s.state, s.note])).toEqual([
      ['stylize', 'succeeded', STEP_NOT_DOWNLOADED_NOTE],
      ['animate', 'succeeded', STEP_NOT_DOWNLOADED_NOTE],
      ['portrait', 'downloaded', null],
      ['square', 'downloaded', null],
    ]);
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain(`["stylize","succeeded"`);
    expect(html).toContain(STEP_NOT_DOWNLOADED_NOTE);
    // No placeholder of genpipe's own in anything written.
    for (const text of [logText, JSON.stringify(result), JSON.stringify(report), html]) {
      expect(text).not.toContain('$step:');
    }

    // A dry run of a re-run with --retry-failed: a.png is done; b.png's finished step is not paid
    // again, its failed step and the steps after it are counted.
    const dry = await runCli(['run', input, '--out', out, '--dry-run', '--json', '--retry-failed'], env);
    const events = jsonLines(dry.stdout);
    expect(events.find((e) => e.input === 'a.png').outcome).toBe('done');
    const bEntry = events.find((e) => e.input === 'b.png');
    expect(bEntry.steps.map((s: Loose) => [s.name, s.outcome])).toEqual([
      ['stylize', 'done'],
      ['animate', 'send'],
      ['portrait', 'send'],
      ['square', 'send'],
    ]);
    expect(events.at(-1).generations).toEqual({ video: 1, video_reframe: 2 });
  }, 150_000);
});

describe("a sidecar's step override", () => {
  it('refuses a { from } naming the sidecar, the field and the rule; the other files go on', async () => {
    const { input, out } = await chainFolder('sidecar-from');
    await put(
      input,
      'b.png.json',
      JSON.stringify({ steps: { square: { source: { from: 'stylize' }, prompt: 'centre it' } } }),
    );
    const r = await runCli(['run', input, '--out', out, '--dry-run'], env);
    expect(r.code, r.stderr).toBe(1);
    const lines = r.stdout.split('\n');
    expect(lines).toContain(
      "b.png: would fail at plan: sidecar b.png.json: steps.square.source: a sidecar cannot say { from: stylize }: which step's output a step takes is the recipe's (write it in the rule's steps); a sidecar may change a step's other fields",
    );
    expect(lines.some((l) => l.startsWith('a.png: would send a chain of 4 steps'))).toBe(true);
  });
});
