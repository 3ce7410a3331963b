/**
 * Chains over real HTTP, with real `genpipe run` children against an emulator started here (through a
 * proxy that can stall uploads and hold create answers, and with the emulator's holds keeping jobs
 * processing, so each kill lands where it should whatever the machine's speed): a 3-step chain and a
 * fan-out; kill -9 between steps, while a step is polled, and while a step's create answer is on its way;
 * a failed middle step; a retryable failure resubmitted alone. Every count of generations per step is
 * the emulator's admin view against the steps' generation ids in result.json.
 */
import { stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { FAN_OUT_CHAIN } from '../helpers/chain-recipe.ts';
import { call, hold, unhold, until } from '../helpers/emulator.ts';
import { recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import {
  type ChildEvent,
  envFor,
  generationsOf,
  runToEnd,
  type SlowProxy,
  spawnGenpipe,
} from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { noisePng } from './watch-helpers.ts';

const CLIENTS = ['run', 'between', 'poll', 'create', 'failed', 'retry', 'refused', 'fanout'] as const;
type ClientName = (typeof CLIENTS)[number];
const keyOf = (c: ClientName) => `svc-api-chain-${c}`;

const CHAIN = FAN_OUT_CHAIN;

let emu: RunningEmulator;
let proxy: SlowProxy;
let root: string;

useChildRunBed(
  { name: 'chain', clients: CLIENTS, keyOf, proxy: true, config: { blocked_words: ['forbidden'] } },
  (bed) => ({ emu, proxy, root } = bed),
);

// biome-ignore lint/suspicious/noExplicitAny: result.json and report.json read loosely
type Loose = any;

/** The steps of `input` in result.json, by name. */
async function stepsOf(out: string, input: string): Promise<Record<string, Loose>> {
  const result: Loose = await readJson(join(out, input, 'result.json'));
  return Object.fromEntries(result.steps.map((s: Loose) => [s.name, s]));
}

/**
 * Exactly one generation per step that has one, at the service: the client's generations are the
 * steps' generation ids (and their earlier attempts'), none twice.
 */
async function expectOnePerStep(client: ClientName, steps: Record<string, Loose>[]) {
  const gens = await generationsOf(emu, client);
  const ids = steps.flatMap((s) =>
    Object.values(s).flatMap((step: Loose) => [
      ...step.earlier_attempts.map((a: Loose) => a.generation_id),
      step.generation_id,
    ]),
  );
  const known = ids.filter((id): id is string => id !== null);
  expect(new Set(known).size).toBe(known.length);
  expect(gens.map((g) => g.id).sort()).toEqual([...known].sort());
  return gens;
}

const stepEvent = (ev: readonly ChildEvent[], input: string, step: string, state: string) =>
  ev.some((e) => e.type === 'item_state' && e.input === input && e.step === step && e.state === state);

describe('a chain, end to end', () => {
  it('runs a 3-step chain with a fan-out: every step once, outputs per step, intermediates not downloaded', async () => {
    const { input, out } = await recipeFolder(root, 'run', CHAIN, {
      'a.png': await noisePng(64, 48),
      'b.png': await noisePng(48, 64),
      // A sidecar overrides the file's step (top level) and any step by name.
      'b.png.json': JSON.stringify({ prompt: 'ink', steps: { square: { prompt: 'centre the subject' } } }),
    });
    const run = await runToEnd(runArgs(input, out), envFor(emu.url, keyOf('run')));
    expect(run.code, run.child.stderr()).toBe(0);
    const a = await stepsOf(out, 'a.png');
    const b = await stepsOf(out, 'b.png');
    for (const steps of [a, b]) {
      expect(Object.keys(steps)).toEqual(['stylize', 'animate', 'portrait', 'square']);
      expect(Object.values(steps).map((s: Loose) => s.state)).toEqual([
        'succeeded',
        'succeeded',
        'downloaded',
        'downloaded',
      ]);
      expect(steps.stylize.outputs).toEqual([]);
      expect(steps.animate.outputs).toEqual([]);
      expect(steps.portrait.after).toEqual(['animate']);
    }
    expect([b.stylize.request.prompt, b.square.request.prompt, b.portrait.request.prompt]).toEqual([
      'ink',
      'centre the subject',
      'keep it',
    ]);
    expect(a.portrait.outputs).toEqual(['a.png/portrait/output-0.mp4']);
    expect(a.square.outputs).toEqual(['a.png/square/output-0.mp4']);
    expect((await stat(join(out, 'a.png', 'square', 'output-0.mp4'))).size).toBeGreaterThan(0);
    const gens = await expectOnePerStep('run', [a, b]);
    expect(gens).toHaveLength(8);
    // The service saw the chain by id where it chains by id, and the stylized photo by url.
    const admin = (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data as Loose[];
    expect(
      admin
        .filter((g) => g.client_id === 'run')
        .map((g) => g.type)
        .sort(),
    ).toEqual([
      'image_edit',
      'image_edit',
      'video',
      'video',
      'video_reframe',
      'video_reframe',
      'video_reframe',
      'video_reframe',
    ]);
    const report: Loose = await readJson(join(out, 'report.json'));
    const line = report.items.find((i: Loose) => i.input === 'a.png');
    expect(line.status).toBe('succeeded');
    expect(line.steps.map((s: Loose) => [s.name, s.state])).toEqual([
      ['stylize', 'succeeded'],
      ['animate', 'succeeded'],
      ['portrait', 'downloaded'],
      ['square', 'downloaded'],
    ]);
    expect(line.outputs).toEqual(['a.png/portrait/output-0.mp4', 'a.png/square/output-0.mp4']);

    // An output deleted since: the next run downloads that step's outputs again, and creates nothing.
    await unlink(join(out, 'a.png', 'square', 'output-0.mp4'));
    const again = await runToEnd(runArgs(input, out), envFor(emu.url, keyOf('run')));
    expect(again.code, again.child.stderr()).toBe(0);
    expect((await stat(join(out, 'a.png', 'square', 'output-0.mp4'))).size).toBeGreaterThan(0);
    expect(await generationsOf(emu, 'run')).toHaveLength(8);
    const rerun: Loose = await readJson(join(out, 'report.json'));
    const lines = Object.fromEntries(rerun.items.map((i: Loose) => [i.input, i.journal]));
    expect(lines['a.png']).toMatch(/^step 'square': resumed: /);
    expect(lines['b.png']).toBe(JOURNAL_TEXTS.done);
  }, 120_000);
});

describe('scheduling', () => {
  it('sibling steps start together once their parent is done (each its own job)', async () => {
    const { input, out } = await recipeFolder(root, 'fanout', CHAIN, { 'a.png': await noisePng(64, 48) });
    // The reframes stay processing: both must have been created while neither has ended.
    const held = await hold(emu, { client: 'fanout', type: 'video_reframe' });
    const run = spawnGenpipe(runArgs(input, out), envFor(emu.url, keyOf('fanout')));
    try {
      await until(async () => {
        const gens = await generationsOf(emu, 'fanout');
        return gens.length === 4 ? gens : null;
      });
      const admin = (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data as Loose[];
      const reframes = admin.filter((g) => g.client_id === 'fanout' && g.type === 'video_reframe');
      expect(reframes).toHaveLength(2);
      for (const g of reframes) expect(['queued', 'processing']).toContain(g.state);
    } finally {
      await unhold(emu, held);
    }
    expect((await run.exited).code, run.stderr()).toBe(0);
  }, 90_000);
});

describe('checked before anything is paid', () => {
  it('a chain the service would refuse at its third step stops the batch before the first is sent', async () => {
    const refused = CHAIN.replace('aspect_ratio: "1:1"', 'aspect_ratio: "5:4"');
    const { input, out } = await recipeFolder(root, 'refused', refused, { 'a.png': await noisePng(64, 48) });
    const run = await runToEnd(runArgs(input, out), envFor(emu.url, keyOf('refused')));
    expect(run.code).toBe(2);
    expect(run.child.stderr()).toMatch(
      /genpipe\.yaml:12: rules\[0\]\.steps\[3\]\.request\.aspect_ratio: Invalid aspect_ratio '5:4'/,
    );
    expect(await generationsOf(emu, 'refused')).toEqual([]);
    const files = await call(emu, 'GET', '/v1/files?limit=100', { key: keyOf('refused') });
    expect(files.body.data).toEqual([]);
  }, 60_000);
});

describe('kill -9 in a chain, then genpipe run again', () => {
  it('between steps (the next step uploading its reference): the finished step is never paid again', async () => {
    // restyle uploads the batch's shared reference when it starts: the upload is stalled there.
    const chain = `rules:
  - match: "*.png"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor" }
      - name: restyle
        request: { type: image_edit, model: uni-1, prompt: "ink", source: { from: stylize }, image_ref: [{ ref: style }] }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "pan", video: { resolution: 360p, start_frame: { from: restyle } } }
references:
  style: refs/style.png
`;
    const { input, out } = await recipeFolder(root, 'between', chain, {
      'a.png': await noisePng(64, 48),
      'refs/style.png': await noisePng(320, 320),
    });
    const args = runArgs(input, out, ['--exclude', 'refs/**']);
    const env = envFor(proxy.url, keyOf('between'));
    proxy.uploadHoldAfter = 32 * 1024; // the reference upload of `restyle` stops half way
    try {
      const first = spawnGenpipe(args, env);
      await first.until(
        (ev) =>
          ev.some((e) => e.type === 'item_state' && e.reason === "step 'stylize' done") &&
          proxy.flows.some((f) => f.kind === 'upload' && f.bytes >= 32 * 1024 && !f.done),
        'restyle uploading its reference',
      );
      first.proc.kill('SIGKILL');
      proxy.cutInProgress();
      await first.exited;
    } finally {
      proxy.uploadHoldAfter = null;
    }
    const atKill = await generationsOf(emu, 'between');
    expect(atKill).toHaveLength(1); // stylize only

    const second = await runToEnd(args, env);
    expect(second.code, second.child.stderr()).toBe(0);
    const steps = await stepsOf(out, 'a.png');
    expect(Object.values(steps).map((s: Loose) => s.state)).toEqual(['succeeded', 'succeeded', 'downloaded']);
    expect(steps.stylize.generation_id).toBe(atKill[0]!.id);
    expect(await expectOnePerStep('between', [steps])).toHaveLength(3);
    const result: Loose = await readJson(join(out, 'a.png', 'result.json'));
    expect(result.journal.action).toBe('resume');
  }, 90_000);

  it('while a step is polled: its generation is collected, the next steps run, nothing twice', async () => {
    const { input, out } = await recipeFolder(root, 'poll', CHAIN, { 'a.png': await noisePng(64, 48) });
    const env = envFor(proxy.url, keyOf('poll'));
    const job = await hold(emu, { client: 'poll', type: 'video' });
    const first = spawnGenpipe(runArgs(input, out), env);
    await first.until((ev) => stepEvent(ev, 'a.png', 'animate', 'submitted'), 'animate submitted');
    first.proc.kill('SIGKILL');
    await first.exited;
    await unhold(emu, job);
    const atKill = await generationsOf(emu, 'poll');
    expect(atKill).toHaveLength(2);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    const steps = await stepsOf(out, 'a.png');
    expect(Object.values(steps).map((s: Loose) => s.state)).toEqual([
      'succeeded',
      'succeeded',
      'downloaded',
      'downloaded',
    ]);
    expect(steps.animate.generation_id).toBe(atKill[1]!.id);
    expect(await expectOnePerStep('poll', [steps])).toHaveLength(4);
    const result: Loose = await readJson(join(out, 'a.png', 'result.json'));
    expect(result.journal.reason).toContain(JOURNAL_TEXTS.resumeSubmitted(atKill[1]!.id));
  }, 90_000);

  it("inside a step's create (answer lost): the crash policy fails that step and its dependants, once", async () => {
    const { input, out } = await recipeFolder(root, 'create', CHAIN, { 'a.png': await noisePng(64, 48) });
    const env = envFor(proxy.url, keyOf('create'));
    // Only the video step's answer is held: hold creates once stylize is done.
    const job = await hold(emu, { client: 'create', type: 'image_edit' });
    const first = spawnGenpipe(runArgs(input, out), env);
    await first.until((ev) => stepEvent(ev, 'a.png', 'stylize', 'submitted'), 'stylize submitted');
    proxy.holdCreates = true;
    try {
      await unhold(emu, job);
      await first.until(
        () => proxy.flows.some((f) => f.kind === 'create' && f.held),
        'the animate create held back',
      );
      first.proc.kill('SIGKILL');
      await first.exited;
    } finally {
      proxy.holdCreates = false;
    }
    const requestId = proxy.flows.find((f) => f.kind === 'create' && f.held)!.requestId!;
    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code).toBe(1);
    const steps = await stepsOf(out, 'a.png');
    expect(steps.stylize.state).toBe('succeeded');
    expect(steps.animate).toMatchObject({ state: 'failed', reason: JOURNAL_TEXTS.unknownOutcome(requestId) });
    expect(steps.portrait).toMatchObject({ state: 'failed', reason: "not run: step 'animate' failed" });
    expect(steps.square).toMatchObject({ state: 'failed', reason: "not run: step 'animate' failed" });
    // stylize once, animate once (created, never collected), nothing after it.
    const gens = await generationsOf(emu, 'create');
    expect(gens.map((g) => g.request_id)).toEqual([steps.stylize.request_id, requestId]);

    // With --resubmit-unknown the step alone is submitted again (the one create that may be paid twice),
    // then its dependants run; stylize stays as it was.
    const third = await runToEnd(runArgs(input, out, ['--resubmit-unknown']), env);
    expect(third.code, third.child.stderr()).toBe(0);
    const after = await stepsOf(out, 'a.png');
    expect(Object.values(after).map((s: Loose) => s.state)).toEqual([
      'succeeded',
      'succeeded',
      'downloaded',
      'downloaded',
    ]);
    expect(after.stylize.generation_id).toBe(steps.stylize.generation_id);
    expect(after.animate.earlier_attempts.map((a: Loose) => a.request_id)).toEqual([requestId]);
    const all = await generationsOf(emu, 'create');
    expect(all).toHaveLength(5);
    expect(all.filter((g) => g.request_id === requestId)).toHaveLength(1);
  }, 120_000);
});

describe('failure stays local', () => {
  it('a failed middle step fails its dependants with its name; a sibling branch goes on', async () => {
    const recipe = `rules:
  - match: "*.png"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor" }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "a forbidden pan", video: { resolution: 360p, start_frame: { from: stylize } } }
      - name: portrait
        request: { type: video_reframe, model: ray-3.2, prompt: "keep", aspect_ratio: "9:16", source: { from: animate }, video: { resolution: 360p } }
      - name: ink
        request: { type: image_edit, model: uni-1, prompt: "ink", source: { from: stylize } }
`;
    const { input, out } = await recipeFolder(root, 'failed', recipe, { 'a.png': await noisePng(64, 48) });
    const run = await runToEnd(runArgs(input, out), envFor(emu.url, keyOf('failed')));
    expect(run.code).toBe(1);
    const steps = await stepsOf(out, 'a.png');
    expect(steps.animate).toMatchObject({ state: 'failed', failure_code: 'content_moderated' });
    expect(steps.portrait).toMatchObject({ state: 'failed', reason: "not run: step 'animate' failed" });
    expect(steps.ink).toMatchObject({ state: 'downloaded', outputs: ['a.png/ink/output-0.png'] });
    const report: Loose = await readJson(join(out, 'report.json'));
    const line = report.items[0];
    expect(line.status).toBe('failed');
    expect(line.reason).toMatch(/^step 'animate' failed: content_moderated: /);
    expect((await generationsOf(emu, 'failed')).map((g) => g.state).sort()).toEqual([
      'completed',
      'completed',
      'failed',
    ]);
  }, 90_000);

  it('a retryable failure_code resubmits that step alone', async () => {
    const { input, out } = await recipeFolder(root, 'retry', CHAIN, { 'a.png': await noisePng(64, 48) });
    const job = await hold(emu, { client: 'retry', type: 'image_edit' });
    const first = spawnGenpipe(runArgs(input, out, ['--retries', '1']), envFor(emu.url, keyOf('retry')));
    try {
      await first.until((ev) => stepEvent(ev, 'a.png', 'stylize', 'submitted'), 'stylize submitted');
      // Every create from now on fails with generation_failed (retryable): animate, and its resubmission.
      await call(emu, 'PUT', '/_emulator/faults', {
        key: null,
        json: { failure_codes: { generation_failed: 1 } },
      });
      await unhold(emu, job);
      const end = await first.exited;
      expect(end.code).toBe(1);
    } finally {
      await call(emu, 'PUT', '/_emulator/faults', { key: null, json: {} });
    }
    const steps = await stepsOf(out, 'a.png');
    expect(steps.stylize).toMatchObject({ state: 'succeeded', attempts: 1, earlier_attempts: [] });
    expect(steps.animate.state).toBe('failed');
    expect(steps.animate.earlier_attempts).toHaveLength(1);
    expect(steps.animate.earlier_attempts[0].failure_code).toBe('generation_failed');
    const gens = await generationsOf(emu, 'retry');
    // stylize once; animate twice (the resubmission); the reframes never.
    expect(gens).toHaveLength(3);
    expect(
      first.events.some((e) => e.type === 'item_state' && /^resubmitting after /.test(String(e.reason))),
    ).toBe(true);
    await expectOnePerStep('retry', [steps]);

    // A re-run retries the failed step (its failure was retryable) and its dependants; stylize stays.
    const again = await runToEnd(runArgs(input, out), envFor(emu.url, keyOf('retry')));
    expect(again.code, again.child.stderr()).toBe(0);
    const after = await stepsOf(out, 'a.png');
    expect(Object.values(after).map((s: Loose) => s.state)).toEqual([
      'succeeded',
      'succeeded',
      'downloaded',
      'downloaded',
    ]);
    expect(after.stylize.generation_id).toBe(steps.stylize.generation_id);
    expect(after.animate.earlier_attempts).toHaveLength(2);
    expect(await expectOnePerStep('retry', [after])).toHaveLength(6);
  }, 120_000);
});
