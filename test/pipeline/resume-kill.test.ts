/**
 * Resume after `kill -9`, with real child processes: `genpipe run --json` against an emulator started
 * here (through a proxy that can stall uploads and downloads and hold create answers, and with the
 * emulator's holds keeping jobs processing, so each kill lands where it should whatever the machine's
 * speed), killed with SIGKILL during an upload, right after a submit, while polling, during a download,
 * and while a create's answer is on its way; then a second `genpipe run` on the same folder.
 * Checked against the emulator's admin view: no input got a second generation (one generation per input,
 * the report's ids are exactly the emulator's), every output is complete (its size is the size the
 * emulator serves), no `.part` is left anywhere, and the report accounts for every input exactly once.
 */
import { stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { JOURNAL_TEXTS } from '../../src/pipeline/store/sqlite/index.ts';
import { call, hold, unhold, until } from '../helpers/emulator.ts';
import { killWhileCreateHeld, recipeFolder, runArgs, useChildRunBed } from './child-run.ts';
import {
  allFiles,
  type ChildEvent,
  envFor,
  expectOutputsComplete,
  generationsOf,
  lastStates,
  noCreateInFlight,
  runToEnd,
  type SlowProxy,
  spawnGenpipe,
} from './resume-helpers.ts';
import { readJson } from './run-fixtures.ts';
import { noisePng } from './watch-helpers.ts';

const CLIENTS = ['upload', 'submit', 'poll', 'download', 'unknown'] as const;
type ClientName = (typeof CLIENTS)[number];
const keyOf = (c: ClientName) => `svc-api-resume-${c}`;

const RECIPE = `rules:
  - match: "*.txt"
    input_as: prompt
    request: { type: image, model: uni-1, aspect_ratio: "1:1" }
  - match: "*.png"
    input_as: source
    request: { type: image_edit, model: uni-1, prompt: "watercolor" }
`;

let emu: RunningEmulator;
let proxy: SlowProxy;
let root: string;

useChildRunBed(
  { name: 'resume-kill', clients: CLIENTS, keyOf, proxy: true, config: { tiny_outputs: false } },
  (bed) => ({ emu, proxy, root } = bed),
);

/** A folder with the recipe and `files`; returns it and its out dir. */
const folder = (name: string, files: Record<string, string | Buffer>) =>
  recipeFolder(root, name, RECIPE, files);

const count = (events: readonly ChildEvent[], state: string) =>
  events.filter((e) => e.type === 'item_state' && e.state === state).length;

/**
 * What every resumed batch must end with: each input reported once and succeeded; exactly one
 * generation per input at the emulator, the same ids as the report's; outputs complete; no scratch
 * file anywhere in the out dir.
 */
async function expectCleanEnd(client: ClientName, out: string, inputs: string[]) {
  // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
  const report: any = await readJson(join(out, 'report.json'));
  expect(report.items.map((i: { input: string }) => i.input)).toEqual([...inputs].sort());
  expect(report.totals).toMatchObject({ inputs: inputs.length, succeeded: inputs.length, unprocessed: 0 });
  const gens = await generationsOf(emu, client);
  expect(gens).toHaveLength(inputs.length);
  expect(new Set(gens.map((g) => g.request_id)).size).toBe(inputs.length);
  expect(report.items.map((i: { generation_id: string }) => i.generation_id).sort()).toEqual(
    gens.map((g) => g.id).sort(),
  );
  const outputs = await expectOutputsComplete(emu, keyOf(client), out);
  expect(outputs.problems).toEqual([]);
  expect(outputs.compared).toBeGreaterThanOrEqual(inputs.length);
  const scratch = (await allFiles(out)).filter((f) => f.endsWith('.part') || f.endsWith('.tmp'));
  expect(scratch).toEqual([]);
  expect(report.journal).toMatchObject({ unknown_submissions_policy: 'fail' });
  return report;
}

describe('kill -9 at any moment, then genpipe run again', () => {
  it('during an upload: the file is uploaded again, nothing is submitted twice', async () => {
    const big = await noisePng(320, 320);
    const { input, out } = await folder('upload', { 'big.png': big, 'note.txt': 'a lighthouse at dusk' });
    const env = envFor(proxy.url, keyOf('upload'));
    proxy.uploadHoldAfter = 32 * 1024; // the big upload stops half way until the kill
    try {
      const first = spawnGenpipe(runArgs(input, out), env);
      await first.until(
        (ev) =>
          proxy.flows.some((f) => f.kind === 'upload' && f.bytes >= 32 * 1024 && !f.done) &&
          noCreateInFlight(ev, ['big.png']),
        'the big upload half way, with no create on its way',
      );
      first.proc.kill('SIGKILL');
      proxy.cutInProgress();
      await first.exited;
      expect(lastStates(first.events).get('big.png')).toBe('checked');
    } finally {
      proxy.uploadHoldAfter = null;
    }
    // Mid-upload: the service has no ready file of it.
    const files = await call(emu, 'GET', '/v1/files?limit=100', { key: keyOf('upload') });
    expect(files.body.data.filter((f: { state: string }) => f.state === 'ready')).toEqual([]);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    const report = await expectCleanEnd('upload', out, ['big.png', 'note.txt']);
    const uploaded = await call(emu, 'GET', '/v1/files?limit=100&state=ready', { key: keyOf('upload') });
    expect(uploaded.body.data.map((f: { size_bytes: number }) => f.size_bytes)).toEqual([big.length]);
    // The prompt file was submitted before the kill: its generation is collected, not made again.
    const note = report.items.find((i: { input: string }) => i.input === 'note.txt');
    expect(note.journal).toMatch(/^(resumed: waiting for generation |already done in an earlier run)/);
  }, 60_000);

  it('right after a submit: the generation is polled, not submitted again', async () => {
    const { input, out } = await folder('submit', {
      'a.txt': 'a red fox',
      'b.txt': 'a blue bird',
      'c.txt': 'a green frog',
    });
    const env = envFor(proxy.url, keyOf('submit'));
    // The first job stays processing: its job slot is not freed for a second create before the kill.
    const job = await hold(emu, { client: 'submit' });
    const first = spawnGenpipe(runArgs(input, out, ['--concurrency', '1']), env);
    await first.until((ev) => count(ev, 'submitted') === 1, 'the first submitted event');
    first.proc.kill('SIGKILL');
    await first.exited;
    await unhold(emu, job);
    const submitted = first.events.find((e) => e.type === 'item_state' && e.state === 'submitted')?.input;
    const atKill = await generationsOf(emu, 'submit');
    expect(atKill).toHaveLength(1);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    const report = await expectCleanEnd('submit', out, ['a.txt', 'b.txt', 'c.txt']);
    const line = report.items.find((i: { input: string }) => i.input === submitted);
    expect(line.generation_id).toBe(atKill[0]!.id);
    expect(line.journal).toBe(JOURNAL_TEXTS.resumeSubmitted(atKill[0]!.id));
  }, 60_000);

  it('while polling: the same generations are collected, also for an input deleted meanwhile', async () => {
    const { input, out } = await folder('poll', {
      'a.txt': 'a red fox',
      'b.txt': 'a blue bird',
      'c.txt': 'a green frog',
    });
    const env = envFor(proxy.url, keyOf('poll'));
    // The jobs stay processing until the kill: the child is polling them when it dies.
    const jobs = await hold(emu, { client: 'poll' });
    const first = spawnGenpipe(runArgs(input, out, ['--concurrency', '4']), env);
    await first.until((ev) => count(ev, 'submitted') === 3, 'three submitted events');
    first.proc.kill('SIGKILL');
    await first.exited;
    await unhold(emu, jobs);
    expect(count(first.events, 'completed')).toBe(0);
    const atKill = await generationsOf(emu, 'poll');
    expect(atKill).toHaveLength(3);
    // The input of a paid generation disappears before the resume: its result is still collected.
    await unlink(join(input, 'c.txt'));

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    const report = await expectCleanEnd('poll', out, ['a.txt', 'b.txt', 'c.txt']);
    expect(report.journal.resumed).toBe(3);
    expect((await stat(join(out, 'c.txt', 'output-0.png'))).size).toBeGreaterThan(0);
  }, 60_000);

  it('during a download: no partial file under a final name, and the output is fetched again', async () => {
    const { input, out } = await folder('download', { 'a.txt': 'a red fox', 'b.txt': 'a blue bird' });
    const env = envFor(proxy.url, keyOf('download'));
    proxy.downloadHoldAfter = 4096; // every output stops after 4 KiB until the kill
    let partial: string;
    try {
      const first = spawnGenpipe(runArgs(input, out), env);
      await first.until(
        (ev) =>
          proxy.flows.some((f) => f.kind === 'download' && f.bytes >= 4096 && !f.done) &&
          noCreateInFlight(ev),
        'a download under way',
      );
      const parts = async () => (await allFiles(out)).filter((f) => f.endsWith('.part'));
      await until(async () => (await parts()).length > 0);
      first.proc.kill('SIGKILL');
      proxy.cutInProgress();
      await first.exited;
      partial = (await parts())[0]!;
    } finally {
      proxy.downloadHoldAfter = null;
    }
    // The cut download exists only as .part: nothing incomplete under its final name.
    const finalName = partial.slice(0, -'.part'.length);
    expect((await allFiles(out)).includes(finalName)).toBe(false);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(0);
    await expectCleanEnd('download', out, ['a.txt', 'b.txt']);
    expect((await allFiles(out)).includes(finalName)).toBe(true);
  }, 60_000);

  it('while a create is on its way: failed by default (never paid twice), resubmitted with --resubmit-unknown', async () => {
    const { input, out } = await folder('unknown', { 'a.txt': 'a red fox', 'b.txt': 'a blue bird' });
    const env = envFor(proxy.url, keyOf('unknown'));
    const held = await killWhileCreateHeld(proxy, runArgs(input, out, ['--concurrency', '1']), env);
    // The create reached the service; the child never learned its generation id.
    expect((await generationsOf(emu, 'unknown')).map((g) => g.request_id)).toEqual([held]);

    const second = await runToEnd(runArgs(input, out), env);
    expect(second.code, second.child.stderr()).toBe(1);
    // biome-ignore lint/suspicious/noExplicitAny: report.json read loosely
    let report: any = await readJson(join(out, 'report.json'));
    const failed = report.items.find((i: { status: string }) => i.status === 'failed');
    expect(failed).toMatchObject({ stage: 'submit', reason: JOURNAL_TEXTS.unknownOutcome(held) });
    expect(failed.reason).toContain('--resubmit-unknown');
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 1, failed: 1 });
    expect(report.journal).toMatchObject({
      unknown_submissions_policy: 'fail',
      unknown_submissions_note: JOURNAL_TEXTS.policyFail,
    });
    let gens = await generationsOf(emu, 'unknown');
    expect(gens).toHaveLength(2); // one per input: nothing was sent again
    expect(gens.filter((g) => g.request_id === held)).toHaveLength(1);

    const third = await runToEnd(runArgs(input, out, ['--resubmit-unknown']), env);
    expect(third.code, third.child.stderr()).toBe(0);
    report = await readJson(join(out, 'report.json'));
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2, failed: 0 });
    expect(report.journal.unknown_submissions_policy).toBe('resubmit');
    const again = report.items.find((i: { input: string }) => i.input === failed.input);
    expect(again.journal).toBe(JOURNAL_TEXTS.resubmitUnknown(held));
    gens = await generationsOf(emu, 'unknown');
    // The documented price of --resubmit-unknown: the item whose first create did land is paid twice.
    expect(gens).toHaveLength(3);
    expect(gens.map((g) => g.id)).toContain(again.generation_id);
    expect(again.generation_id).not.toBe(gens.find((g) => g.request_id === held)!.id);
  }, 60_000);
});
