/**
 * A chain's steps done for the same content are not paid again: the same file after a later step of
 * its recipe changed, and a copy under another name whose rule differs in a later step, each send only
 * the steps not done; a dry run prices only those. Through the CLI against the emulator, whose admin
 * view counts what was created.
 */
import { readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { FAN_OUT_CHAIN } from '../helpers/chain-recipe.ts';
import { adminRows, startTestEmulator } from '../helpers/emulator.ts';
import { noisePng } from '../pipeline/watch-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator({ tiny_outputs: true });
});
afterAll(async () => {
  await emu?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: reports read loosely
type Loose = any;

/** A still stylized, then animated with `motion` (by URL), for the PNGs `match` picks. */
function rule(match: string, motion: string): string {
  return `  - match: "${match}"
    input_as: source
    steps:
      - name: stylize
        request: { type: image_edit, model: uni-1, prompt: "watercolor" }
      - name: animate
        request: { type: video, model: ray-3.2, prompt: "${motion}", video: { resolution: 360p, start_frame: { from: stylize } } }
`;
}

/** b*.png tilted up, every other PNG panned slowly: the same stylize step, another animate. */
const TWO_RULES = `rules:\n${rule('b*.png', 'tilt up')}${rule('*.png', 'slow pan')}`;

/** The entries of `genpipe run input --out out --dry-run --json`, exit 0 expected. */
async function dryRunEntries(input: string, out: string): Promise<Loose[]> {
  const dry = await runCli(['run', input, '--out', out, '--dry-run', '--json'], cliEnv(emu), 60_000);
  expect(dry.code, dry.stderr).toBe(0);
  return dry.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.type === 'dry_run_item');
}

async function generations(): Promise<Loose[]> {
  return adminRows(emu);
}

function readJson(path: string): Loose {
  return JSON.parse(readFileSync(path, 'utf8'));
}

async function run(input: string, out: string, extra: string[] = []) {
  const r = await runCli(
    ['run', input, '--out', out, '--poll-interval', '1', ...extra],
    cliEnv(emu),
    120_000,
  );
  expect(r.code, r.stderr).toBe(0);
  return { ...r, report: readJson(join(out, 'report.json')) };
}

/** The steps of a place's result.json: name, state, generation id. */
function stepsOf(out: string, place: string): [string, string, string][] {
  return readJson(join(out, place, 'result.json')).steps.map((s: Loose) => [
    s.name,
    s.state,
    s.generation_id,
  ]);
}

/** The portrait step's output file of a place (its result.json's). */
function portraitOf(out: string, place: string): string {
  const step = readJson(join(out, place, 'result.json')).steps.find((s: Loose) => s.name === 'portrait');
  expect(step.outputs).toHaveLength(1);
  return step.outputs[0];
}

describe("a chain's steps done for the same content", () => {
  it('the same file, a later step of its recipe changed: only that step is sent; a dry run prices only it', async () => {
    const { input, out } = promptFolder({});
    const recipe = join(input, 'genpipe.yaml');
    writeFileSync(recipe, `rules:\n${rule('*.png', 'slow pan')}`);
    writeFileSync(join(input, 'a.png'), await noisePng(64, 48));
    const before = (await generations()).length;
    await run(input, out);
    expect((await generations()).length - before).toBe(2);
    const first = stepsOf(out, 'a.png');

    writeFileSync(recipe, `rules:\n${rule('*.png', 'fast zoom')}`);
    const [entry] = await dryRunEntries(input, out);
    expect(entry.outcome).toBe('send');
    expect(entry.steps.map((s: Loose) => [s.name, s.outcome])).toEqual([
      ['stylize', 'done'],
      ['animate', 'send'],
    ]);
    expect(entry.reason).toMatch(/; step 'stylize' reused: done for this file before \(generation /);
    expect((await generations()).length - before).toBe(2);

    const { report } = await run(input, out);
    const created = (await generations()).slice(before);
    expect(created).toHaveLength(3);
    expect(created[2].type).toBe('video');
    expect(report.totals).toMatchObject({ inputs: 1, succeeded: 1 });
    // Processed again because its recipe changed: counted so.
    expect(report.journal).toMatchObject({ redone: 1, same_content: 0 });
    const again = report.items.find((i: Loose) => i.input === 'a.png');
    const steps = stepsOf(out, again.place);
    expect(steps[0]).toEqual(first[0]);
    expect(steps[1]?.[2]).not.toBe(first[1]?.[2]);
    expect(steps.map((s) => s[1])).toEqual(first.map((s) => s[1]));
    expect(readJson(join(out, again.place, 'result.json')).journal.reason).toMatch(
      /^.*recipe.*; step 'stylize' reused: done for this file before \(generation [0-9a-f-]+\); only the other steps are sent$/,
    );
    // And once more: the whole chain is done, nothing sent.
    await run(input, out);
    expect((await generations()).length - before).toBe(3);
  }, 180_000);

  it('two copies in one batch whose rules differ in a later step: the shared step is created once, the copy waiting for it', async () => {
    const { input, out } = promptFolder({});
    writeFileSync(join(input, 'genpipe.yaml'), TWO_RULES);
    const png = await noisePng(64, 48);
    writeFileSync(join(input, 'a.png'), png);
    writeFileSync(join(input, 'b.png'), png);
    const before = (await generations()).length;
    // The dry run prices what the run pays: the shared step once.
    const entries = await dryRunEntries(input, out);
    const outcomes = (input: string) =>
      entries.find((e) => e.input === input).steps.map((st: Loose) => [st.name, st.outcome]);
    expect(outcomes('a.png')).toEqual([
      ['stylize', 'send'],
      ['animate', 'send'],
    ]);
    expect(outcomes('b.png')).toEqual([
      ['stylize', 'done'],
      ['animate', 'send'],
    ]);
    expect(entries.find((e) => e.input === 'b.png').reason).toMatch(/step 'stylize' taken from a\.png/);
    const { report } = await run(input, out);
    const created = (await generations()).slice(before);
    expect(created.map((g: Loose) => g.type).sort()).toEqual(['image_edit', 'video', 'video']);
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect(stepsOf(out, 'b.png')[0]).toEqual(stepsOf(out, 'a.png')[0]);
  }, 180_000);

  it('a copy whose rule differs in a later step takes the first step from the other file', async () => {
    const { input, out } = promptFolder({});
    writeFileSync(join(input, 'genpipe.yaml'), TWO_RULES);
    const png = await noisePng(64, 48);
    writeFileSync(join(input, 'a.png'), png);
    const before = (await generations()).length;
    await run(input, out);
    expect((await generations()).length - before).toBe(2);

    writeFileSync(join(input, 'b.png'), png);
    const { report } = await run(input, out);
    const created = (await generations()).slice(before);
    expect(created).toHaveLength(3);
    expect(created[2].type).toBe('video');
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect(stepsOf(out, 'b.png')[0]).toEqual(stepsOf(out, 'a.png')[0]);
    const b = readJson(join(out, 'b.png', 'result.json'));
    expect(b.journal).toMatchObject({ action: 'fresh', same_as: 'a.png' });
    expect(b.journal.reason).toMatch(/^step 'stylize' reused: done for a\.png, which has the same content/);
    // It sent its own 'animate': new work, not counted as reused; its outcome line says succeeded.
    expect(b.request_sent).toBe(true);
    expect(report.journal).toMatchObject({ same_content: 0, redone: 0 });
    for (const o of b.outputs as string[]) expect(o.startsWith('b.png/')).toBe(true);
  }, 180_000);

  it("a fan-out with one leaf changed: the other leaf's files are linked, not paid; deleted files are collected again", async () => {
    const { input, out } = promptFolder({});
    const recipe = join(input, 'genpipe.yaml');
    writeFileSync(recipe, FAN_OUT_CHAIN);
    writeFileSync(join(input, 'a.png'), await noisePng(64, 48));
    const before = (await generations()).length;
    await run(input, out);
    expect((await generations()).length - before).toBe(4);
    const portrait = portraitOf(out, 'a.png');

    // The square reframe asks for something else: stylize, animate and portrait are taken.
    writeFileSync(
      recipe,
      FAN_OUT_CHAIN.replace('aspect_ratio: "1:1", source', 'aspect_ratio: "4:3", source'),
    );
    const { report } = await run(input, out);
    expect((await generations()).length - before).toBe(5);
    const place = report.items.find((i: Loose) => i.input === 'a.png').place;
    expect(place).not.toBe('a.png');
    const result = readJson(join(out, place, 'result.json'));
    expect(result.journal.reason).toMatch(
      /; steps 'stylize', 'animate', 'portrait' reused: done for this file before/,
    );
    const linked = portraitOf(out, place);
    expect(linked).toBe(`${place}/${portrait.slice('a.png/'.length)}`);
    expect(statSync(join(out, linked)).ino).toBe(statSync(join(out, portrait)).ino);

    // The portrait's files deleted from both places, the recipe changed again: fetched again, not paid.
    rmSync(join(out, linked));
    rmSync(join(out, portrait));
    writeFileSync(
      recipe,
      FAN_OUT_CHAIN.replace('aspect_ratio: "1:1", source', 'aspect_ratio: "16:9", source'),
    );
    const third = await run(input, out);
    expect((await generations()).length - before).toBe(6);
    const last = third.report.items.find((i: Loose) => i.input === 'a.png').place;
    const again = portraitOf(out, last);
    expect(statSync(join(out, again)).size).toBeGreaterThan(0);
  }, 240_000);

  it("a chain renamed after its outputs were deleted: each step's generation collected again, nothing created", async () => {
    const { input, out } = promptFolder({});
    writeFileSync(join(input, 'genpipe.yaml'), FAN_OUT_CHAIN);
    writeFileSync(join(input, 'a.png'), await noisePng(64, 48));
    const before = (await generations()).length;
    await run(input, out);
    expect((await generations()).length - before).toBe(4);
    const steps = stepsOf(out, 'a.png');
    rmSync(join(out, 'a.png'), { recursive: true });
    renameSync(join(input, 'a.png'), join(input, 'b.png'));
    const { report } = await run(input, out);
    expect((await generations()).length - before).toBe(4);
    expect(report.totals).toMatchObject({ inputs: 1, succeeded: 1 });
    expect(stepsOf(out, 'b.png')).toEqual(steps);
    expect(statSync(join(out, portraitOf(out, 'b.png'))).size).toBeGreaterThan(0);
    expect(readJson(join(out, 'b.png', 'result.json')).journal.reason).toMatch(
      /^renamed from a\.png: steps 'stylize', 'animate', 'portrait', 'square' reused \(generations .*\); steps 'portrait', 'square' collected from their generations; nothing is sent$/,
    );
  }, 180_000);
});
