/**
 * The entries of an input folder that `run` does not take as inputs (dotfiles, `.part` files, the
 * recipe, links leading out of the tree, …) are counted and listed with why: report.json `ignored`,
 * report.html's section, the batch_finished event and the closing summary. A folder of 6 entries with 2
 * inputs says so. Runs against a real emulator over loopback (the runner in process, and the CLI).
 */
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { SKIP_REASONS } from '../../src/pipeline/discover.ts';
import type { PipelineEvent } from '../../src/pipeline/events.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import { runBatch } from '../../src/pipeline/runner.ts';
import { cliEnv, runCli } from '../cli/run-cli.ts';
import { KEY, startTestEmulator } from '../helpers/emulator.ts';
import { readJson } from './run-fixtures.ts';
import { put } from './stage-helpers.ts';

const RECIPE = 'rules:\n  - match: "*.txt"\n    request: { type: image }\n';

let root: string;
let emu: RunningEmulator;
let client: GenpipeClient;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'genpipe-ignored-'));
  emu = await startTestEmulator();
  client = createClient({ apiKey: KEY, baseUrl: emu.url, polling: { intervalMs: 20, floorMs: 10 } });
});
afterAll(async () => {
  await client?.close();
  await emu?.close();
  await rm(root, { recursive: true, force: true });
});

/** A folder of 6 entries: 2 prompt files, a dotfile, a `.part` file, the recipe, a link out of it. */
async function sixEntries(name: string): Promise<string> {
  const dir = join(root, name);
  await put(dir, 'genpipe.yaml', RECIPE);
  await put(dir, 'a.txt', 'a red fox');
  await put(dir, 'b.txt', 'a blue bird');
  await put(dir, '.DS_Store', 'finder');
  await put(dir, 'c.txt.part', 'a half-downloaded prompt');
  await writeFile(join(root, `${name}-outside.txt`), 'outside the input folder');
  await symlink(join(root, `${name}-outside.txt`), join(dir, 'link-out.txt'));
  return dir;
}

const SIX_IGNORED = {
  total: 4,
  by_reason: {
    [SKIP_REASONS.hidden]: 1,
    [SKIP_REASONS.temporary]: 1,
    [SKIP_REASONS.recipe]: 1,
    [SKIP_REASONS.symlinkOut]: 1,
  },
  entries: [
    { input: '.DS_Store', reason: SKIP_REASONS.hidden },
    { input: 'c.txt.part', reason: SKIP_REASONS.temporary },
    { input: 'genpipe.yaml', reason: SKIP_REASONS.recipe },
    { input: 'link-out.txt', reason: SKIP_REASONS.symlinkOut },
  ],
  unlisted: 0,
};

async function run(inputDir: string, outDir: string, onEvent?: (e: PipelineEvent) => void) {
  return runBatch({
    inputDir,
    outDir,
    recipe: await loadRecipe({ inputDir }),
    client,
    pollIntervalMs: 30,
    filePollIntervalMs: 20,
    reportIntervalMs: 0,
    ...(onEvent ? { onEvent } : {}),
  });
}

describe('entries run leaves out of the input folder', () => {
  it('are counted and listed with why in report.json and report.html, beside the 2 inputs', async () => {
    const dir = await sixEntries('six');
    const out = join(root, 'six-out');
    const events: PipelineEvent[] = [];
    const result = await run(dir, out, (e) => events.push(e));

    const report = await readJson(join(out, 'report.json'));
    expect(Object.keys(report)).toEqual([
      'started_at',
      'finished_at',
      'stopped_early',
      'totals',
      'ignored',
      'items',
    ]);
    expect(report.totals).toEqual({
      inputs: 2,
      succeeded: 2,
      failed: 0,
      skipped: 0,
      unprocessed: 0,
      pending: 0,
    });
    expect(report.items.map((i: { input: string }) => i.input)).toEqual(['a.txt', 'b.txt']);
    expect(report.ignored).toEqual(SIX_IGNORED);
    expect(result.report.ignored).toEqual(SIX_IGNORED);
    expect(events.at(-1)).toMatchObject({ type: 'batch_finished', totals: { inputs: 2, ignored: 4 } });

    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<section id="ignored"><h2>Ignored (4)</h2>');
    for (const e of SIX_IGNORED.entries) {
      expect(html).toContain(`<tr class="ignored"><td>${e.input}</td><td>${e.reason}</td></tr>`);
    }
  });

  it('lists the first 1,000 of a huge number and counts the rest', async () => {
    const dir = join(root, 'many');
    await put(dir, 'genpipe.yaml', RECIPE);
    await put(dir, 'only.txt', 'the one input');
    for (let i = 0; i < 1003; i++) await writeFile(join(dir, `.junk-${String(i).padStart(4, '0')}`), '');
    const out = join(root, 'many-out');
    await run(dir, out);

    const report = await readJson(join(out, 'report.json'));
    expect(report.totals.inputs).toBe(1);
    expect(report.ignored).toMatchObject({
      total: 1004,
      by_reason: { [SKIP_REASONS.hidden]: 1003, [SKIP_REASONS.recipe]: 1 },
      unlisted: 4,
    });
    expect(report.ignored.entries).toHaveLength(1000);
    expect(report.ignored.entries[999]).toEqual({ input: '.junk-0999', reason: SKIP_REASONS.hidden });
    const html = await readFile(join(out, 'report.html'), 'utf8');
    expect(html).toContain('The first 1000 are listed; 4 more are counted only.');
  });

  it('are in the closing summary of genpipe run and in the plain progress line', async () => {
    const dir = await sixEntries('cli');
    const r = await runCli(['run', dir, '--out', join(root, 'cli-out'), '--poll-interval', '1'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(
      `genpipe: 2 files: 2 succeeded, 0 failed, 0 skipped; 4 ignored: 1 ${SKIP_REASONS.hidden}, 1 ${SKIP_REASONS.temporary}, 1 ${SKIP_REASONS.recipe}, 1 ${SKIP_REASONS.symlinkOut}\n`,
    );
    expect(r.stdout).toMatch(/finished: 2 inputs, 2 succeeded, 0 failed, 0 skipped, 4 ignored\n/);
  });
});
