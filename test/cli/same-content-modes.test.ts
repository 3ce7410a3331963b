/**
 * Same content, never paid twice, beyond a run on the SQLite journal: a copy dropped into a running
 * watch, a folder of copies shared by two workers on a PostgreSQL store, a watch on a store, a chain,
 * and a failure the copies share. Through the CLI as a user runs it; the emulator's admin view counts
 * what was created.
 */
import {
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { queueCounts } from '../../src/pipeline/distributed/queue-counts.ts';
import { setFaults } from '../client/client-helpers.ts';
import { FAN_OUT_CHAIN, TWO_STEP_CHAIN } from '../helpers/chain-recipe.ts';
import { adminRows, heldGenerations, hold, startTestEmulator, unhold, until } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { type ChildEvent, killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { noisePng } from '../pipeline/watch-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';
import { LOCK_FLAGS, useWorkerChildren } from './worker-child.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator({ tiny_outputs: true, blocked_words: ['forbidden'] });
});
afterAll(async () => {
  killChildren();
  await emu?.close();
});

// biome-ignore lint/suspicious/noExplicitAny: reports read loosely
type Loose = any;

/** Generations the emulator created so far. */
async function generations(): Promise<number> {
  return (await adminRows(emu)).length;
}

function readJson(path: string): Loose {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** The output files of a place (its result.json's, steps' included), each on disk. */
function outputsOf(out: string, place: string): string[] {
  const result = readJson(join(out, place, 'result.json'));
  const outputs = [
    ...(result.outputs as string[]),
    ...((result.steps ?? []) as Loose[]).flatMap((s) => s.outputs as string[]),
  ];
  for (const o of outputs) {
    expect(o.startsWith(`${place}/`), o).toBe(true);
    expect(existsSync(join(out, o)), o).toBe(true);
  }
  return [...new Set(outputs)];
}

/** The report's line of `input`. */
function itemOf(out: string, input: string): Loose {
  return readJson(join(out, 'report.json')).items.find((i: Loose) => i.input === input);
}

/** The last state event of `input` in a child's events. */
function lastOf(events: readonly ChildEvent[], input: string): ChildEvent | undefined {
  return events.filter((e) => e.type === 'item_state' && e.input === input).at(-1);
}

/** The last reason told for `input` (the plan stage's for a reuse: the report stage's has none). */
function reasonOf(events: readonly ChildEvent[], input: string): string {
  const told = events.filter((e) => e.type === 'item_state' && e.input === input && e.reason);
  return String(told.at(-1)?.reason ?? '');
}

const finalIn = (events: readonly ChildEvent[], input: string, state = 'reported'): boolean =>
  lastOf(events, input)?.state === state;

/** `genpipe run input --out out …` to its exit. */
async function run(input: string, out: string, extra: string[] = [], code = 0) {
  const r = await runCli(['run', input, '--out', out, ...extra], cliEnv(emu), 120_000);
  expect(r.code, r.stderr).toBe(code);
  return { ...r, report: readJson(join(out, 'report.json')) };
}

describe('a watch on the journal', () => {
  it('a copy dropped in is reused; a pair of new copies dropped together is one generation, the second waiting for the first', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a copied heron at dawn' });
    const before = await generations();
    const watch = spawnGenpipe(['watch', input, '--out', out, '--json', '--quiet-ms', '200'], cliEnv(emu));
    await watch.until((ev) => finalIn(ev, 'a.txt'), 'a.txt reported', 60_000);
    expect((await generations()) - before).toBe(1);

    writeFileSync(join(input, 'b.txt'), 'a copied heron at dawn');
    await watch.until((ev) => finalIn(ev, 'b.txt'), 'b.txt reported', 60_000);
    expect((await generations()) - before).toBe(1);
    expect(reasonOf(watch.events, 'b.txt')).toMatch(/^reused: same content as a\.txt \(done /);
    expect(outputsOf(out, 'b.txt')).toHaveLength(1);

    // c.txt held at the service while its copy d.txt is admitted: d.txt waits for it, then reuses it.
    const holdId = await hold(emu, { state: 'processing', prompt: 'copied cranes' });
    try {
      writeFileSync(join(input, 'c.txt'), 'a pair of copied cranes');
      await heldGenerations(emu, 1);
      writeFileSync(join(input, 'd.txt'), 'a pair of copied cranes');
      await watch.until(
        (ev) => ev.some((e) => e.type === 'item_state' && e.input === 'd.txt' && e.state === 'sniffed'),
        'd.txt taken',
        60_000,
      );
    } finally {
      await unhold(emu, holdId);
    }
    await watch.until(
      (ev) => finalIn(ev, 'c.txt') && finalIn(ev, 'd.txt'),
      'c.txt and d.txt reported',
      60_000,
    );
    expect((await generations()) - before).toBe(2);
    expect(outputsOf(out, 'c.txt')).toHaveLength(1);
    expect(outputsOf(out, 'd.txt')).toHaveLength(1);
    expect(reasonOf(watch.events, 'd.txt')).toMatch(/^reused: same content as c\.txt/);
    watch.proc.kill('SIGINT');
    expect((await watch.exited).code, watch.stderr()).toBe(0);
    const report = readJson(join(out, 'report.json'));
    expect(report.totals).toMatchObject({ inputs: 4, succeeded: 4 });
    // The closing summary says what the journal did, as run's does.
    expect(watch.stderr()).toMatch(/genpipe: journal: .*2 reused from the same content under another name/);
  }, 120_000);
});

describe('a copy waiting for its twin in flight', () => {
  it('-v prints a line as it starts waiting, while the twin is still at the service', async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a pair of waiting egrets',
      'b.txt': 'a pair of waiting egrets',
    });
    const before = await generations();
    const holdId = await hold(emu, { state: 'processing', prompt: 'waiting egrets' });
    const child = spawnGenpipe(['run', input, '--out', out, '-v', '--poll-interval', '1'], cliEnv(emu));
    const waiting =
      /\] ([ab])\.txt: waiting for ([ab])\.txt, which has the same content and is being processed$/m;
    try {
      await heldGenerations(emu, 1);
      await child.until(() => waiting.test(child.stdout()), 'the waiting line', 60_000);
    } finally {
      await unhold(emu, holdId);
    }
    expect((await child.exited).code, child.stderr()).toBe(0);
    const [, copy, twin] = waiting.exec(child.stdout()) ?? [];
    expect(copy).not.toBe(twin);
    expect(child.stdout().match(new RegExp(`${copy}\\.txt: waiting for`, 'g'))).toHaveLength(1);
    expect((await generations()) - before).toBe(1);
  }, 120_000);

  it('--json tells the wait as an item_state event of the plan stage', async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a pair of waiting ibises',
      'b.txt': 'a pair of waiting ibises',
    });
    const holdId = await hold(emu, { state: 'processing', prompt: 'waiting ibises' });
    const child = spawnGenpipe(['run', input, '--out', out, '--json', '--poll-interval', '1'], cliEnv(emu));
    const told = (ev: readonly ChildEvent[]) =>
      ev.find((e) => e.type === 'item_state' && /^waiting for [ab]\.txt/.test(String(e.reason)));
    try {
      await heldGenerations(emu, 1);
      await child.until((ev) => told(ev) !== undefined, 'the waiting event', 60_000);
    } finally {
      await unhold(emu, holdId);
    }
    expect((await child.exited).code, child.stderr()).toBe(0);
    expect(told(child.events)).toMatchObject({ state: 'planned', stage: 'plan' });
  }, 120_000);
});

describe('a watch filing its inputs away (--on-done move)', () => {
  it('a copy dropped in after the first was moved to processed/ is the same content, not a rename', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a filed-away otter' });
    const before = await generations();
    const watch = spawnGenpipe(
      ['watch', input, '--out', out, '--json', '--quiet-ms', '200', '--on-done', 'move'],
      cliEnv(emu),
    );
    await watch.until((ev) => finalIn(ev, 'a.txt'), 'a.txt reported', 60_000);
    writeFileSync(join(input, 'b.txt'), 'a filed-away otter');
    await watch.until((ev) => finalIn(ev, 'b.txt'), 'b.txt reported', 60_000);
    expect((await generations()) - before).toBe(1);
    expect(reasonOf(watch.events, 'b.txt')).toMatch(/^reused: same content as a\.txt \(done /);
    watch.proc.kill('SIGINT');
    expect((await watch.exited).code, watch.stderr()).toBe(0);
  }, 120_000);
});

describe('a run that died with a generation at the service', () => {
  it('the file renamed before the re-run: its generation collected at the new name, nothing created again', async () => {
    const { input, out } = promptFolder({ 'old.txt': 'a moth renamed in flight' });
    const before = await generations();
    const holdId = await hold(emu, { state: 'processing', prompt: 'moth renamed in flight' });
    const first = spawnGenpipe(['run', input, '--out', out], cliEnv(emu));
    try {
      await heldGenerations(emu, 1);
      first.proc.kill('SIGKILL');
      await first.exited;
    } finally {
      await unhold(emu, holdId);
    }
    renameSync(join(input, 'old.txt'), join(input, 'new.txt'));
    const again = await run(input, out, ['--poll-interval', '1']);
    expect(again.report.totals.failed).toBe(0);
    expect((await generations()) - before).toBe(1);
    expect(itemOf(out, 'new.txt')).toMatchObject({
      status: 'succeeded',
      // Its generation collected here, or by the drive of the vanished old.txt first and then reused.
      journal: expect.stringMatching(
        /^renamed from old\.txt: (collecting its generation|its outputs reused)/,
      ),
    });
    expect(outputsOf(out, 'new.txt')).toHaveLength(1);
  }, 120_000);
});

const CHAIN = FAN_OUT_CHAIN;

describe('a chain', () => {
  it("two copies in one batch: the chain's generations once, both places get every step's outputs; a rename sends nothing", async () => {
    const { input, out } = promptFolder({});
    writeFileSync(join(input, 'genpipe.yaml'), CHAIN);
    const png = await noisePng(64, 48);
    writeFileSync(join(input, 'a.png'), png);
    writeFileSync(join(input, 'b.png'), png);
    const before = await generations();
    const { report } = await run(input, out, ['--poll-interval', '1']);
    expect((await generations()) - before).toBe(4);
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect(report.journal.same_content).toBe(1);
    const strip = (place: string) => outputsOf(out, place).map((o) => o.slice(place.length + 1));
    expect(strip('a.png').sort()).toEqual(['portrait/output-0.mp4', 'square/output-0.mp4']);
    expect(strip('b.png')).toEqual(strip('a.png'));
    const steps = (place: string) =>
      readJson(join(out, place, 'result.json')).steps.map((s: Loose) => [s.name, s.state, s.generation_id]);
    expect(steps('b.png')).toEqual(steps('a.png'));

    renameSync(join(input, 'b.png'), join(input, 'c.png'));
    const again = await run(input, out, ['--poll-interval', '1']);
    expect(again.report.totals.failed).toBe(0);
    expect((await generations()) - before).toBe(4);
    expect(itemOf(out, 'c.png').journal).toMatch(/^renamed from b\.png: its outputs reused/);
    expect(strip('c.png')).toEqual(strip('a.png'));
    expect(again.report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
  }, 180_000);
});

describe('a chain renamed, its outputs deleted', () => {
  it('the re-run collects its generations at the new name and says it was renamed, as a single step does', async () => {
    const { input, out } = promptFolder({});
    writeFileSync(join(input, 'genpipe.yaml'), TWO_STEP_CHAIN);
    writeFileSync(join(input, 'a.png'), await noisePng(60, 44));
    const before = await generations();
    await run(input, out, ['--poll-interval', '1']);
    expect((await generations()) - before).toBe(2);
    renameSync(join(input, 'a.png'), join(input, 'b.png'));
    rmSync(join(out, 'a.png'), { recursive: true });
    const again = await run(input, out, ['--poll-interval', '1']);
    expect((await generations()) - before).toBe(2);
    expect(again.report.totals).toMatchObject({ inputs: 1, succeeded: 1 });
    expect(itemOf(out, 'b.png').journal).toMatch(/^renamed from a\.png: /);
    expect(outputsOf(out, 'b.png').length).toBeGreaterThan(0);
  }, 120_000);
});

describe('a failure the copies share', () => {
  it("a failure of the file's own: one generation, both failed, the copy says whose failure; a re-run sends nothing", async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a forbidden fox, shared failure',
      'b.txt': 'a forbidden fox, shared failure',
    });
    const before = await generations();
    const { report } = await run(input, out, [], 1);
    expect((await generations()) - before).toBe(1);
    expect(report.totals).toMatchObject({ inputs: 2, failed: 2 });
    const reasons = ['a.txt', 'b.txt'].map((i) => String(itemOf(out, i).reason));
    const copy = reasons.filter((r) => /^same content as [ab]\.txt, which failed: .*moderat/.test(r));
    expect(copy, reasons.join('\n')).toHaveLength(1);
    const again = await run(input, out, [], 1);
    expect((await generations()) - before).toBe(1);
    expect(again.report.totals).toMatchObject({ inputs: 2, failed: 2 });
    // A third copy added later names the file that failed first, once, and its failure.
    writeFileSync(join(input, 'c.txt'), 'a forbidden fox, shared failure');
    await run(input, out, [], 1);
    expect((await generations()) - before).toBe(1);
    const third = String(itemOf(out, 'c.txt').reason);
    expect(third).toMatch(/^same content as [ab]\.txt, which failed: .*moderat/);
    expect(third.match(/same content as/g)).toHaveLength(1);
    expect(third.match(/not sent on its own/g)).toHaveLength(1);
    expect(third).not.toMatch(/--redo-same-content/);
    expect(third).not.toMatch(/\.;/);
  }, 120_000);

  it("a copy that waited for its twin carries the twin's failure: its stage, failure_code and class, nothing sent for it", async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a forbidden lynx, carried failure',
      'b.txt': 'a forbidden lynx, carried failure',
    });
    const before = await generations();
    await run(input, out, [], 1);
    expect((await generations()) - before).toBe(1);
    const [copy, twin] = /^same content as a\.txt/.test(String(itemOf(out, 'b.txt').reason))
      ? ['b.txt', 'a.txt']
      : ['a.txt', 'b.txt'];
    expect(itemOf(out, twin)).toMatchObject({ stage: 'wait', failure_code: 'content_moderated' });
    expect(itemOf(out, copy)).toMatchObject({
      status: 'failed',
      stage: 'wait',
      failure_code: 'content_moderated',
      generation_id: null,
      reason: expect.stringMatching(
        new RegExp(`^same content as ${twin.replace('.', '\\.')}, which failed: content_moderated`),
      ),
    });
    const result = readJson(join(out, copy, 'result.json'));
    expect(result).toMatchObject({
      failed_stage: 'wait',
      failure_code: 'content_moderated',
      request_sent: false,
      generation_id: null,
      request_id: null,
    });
    // A plain re-run sends nothing and reports it as it was: still the twin's failure, shared.
    await run(input, out, [], 1);
    expect((await generations()) - before).toBe(1);
    expect(itemOf(out, copy)).toMatchObject({
      stage: 'wait',
      failure_code: 'content_moderated',
      reason: expect.stringMatching(/^same content as /),
    });
    // --retry-failed takes it as its twin's failure: both sent again together, once.
    await run(input, out, ['--retry-failed'], 1);
    expect((await generations()) - before).toBe(2);
    expect(itemOf(out, copy)).toMatchObject({ stage: 'wait', failure_code: 'content_moderated' });
  }, 120_000);

  it('a copy of a create whose answer was lost shares its unknown outcome: never sent on its own, sent with it by --resubmit-unknown', async () => {
    const { input, out } = promptFolder({
      'c1.txt': 'a paper crane, answer lost',
      'c2.txt': 'a paper crane, answer lost',
    });
    const before = await generations();
    await setFaults(emu, { lose_answers: { 'POST /v1/generations': 1 } });
    try {
      const first = await run(input, out, [], 1);
      expect(first.report.totals).toMatchObject({ inputs: 2, failed: 2 });
    } finally {
      await setFaults(emu, {});
    }
    expect((await generations()) - before).toBe(1);
    // A plain re-run: the crash policy fails the one, and the copy shares it (it could pay twice).
    const plain = await run(input, out, [], 1);
    expect(plain.report.totals).toMatchObject({ inputs: 2, failed: 2 });
    expect((await generations()) - before).toBe(1);
    expect(String(itemOf(out, 'c2.txt').reason + itemOf(out, 'c1.txt').reason)).toMatch(/--resubmit-unknown/);
    // The copy fails at plan (taken up again by every run, so it goes with its twin), and names the
    // one flag that sends the two (not --retry-failed).
    const copy = ['c1.txt', 'c2.txt']
      .map((i) => itemOf(out, i))
      .find((i) => /^same content as /.test(i.reason));
    expect(copy).toMatchObject({ stage: 'plan' });
    expect(copy.reason).toMatch(/; not sent on its own: --resubmit-unknown sends them together, once$/);
    // --resubmit-unknown sends the one again, and the copy takes its outputs: one more generation.
    const resubmitted = await run(input, out, ['--resubmit-unknown']);
    expect(resubmitted.report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect((await generations()) - before).toBe(2);
    const after = await run(input, out);
    expect(after.report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect((await generations()) - before).toBe(2);
  }, 120_000);

  it('a retryable failure: both failed with one generation; a re-run retries them together with one', async () => {
    const { input, out } = promptFolder({
      'a.txt': 'a flaky fox, shared failure',
      'b.txt': 'a flaky fox, shared failure',
    });
    const before = await generations();
    await setFaults(emu, { failure_codes: { generation_failed: 1 } });
    try {
      const { report } = await run(input, out, ['--retries', '0'], 1);
      expect((await generations()) - before).toBe(1);
      expect(report.totals).toMatchObject({ inputs: 2, failed: 2 });
    } finally {
      await setFaults(emu, {});
    }
    const again = await run(input, out);
    expect((await generations()) - before).toBe(2);
    expect(again.report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    for (const i of ['a.txt', 'b.txt']) expect(outputsOf(out, i)).toHaveLength(1);
  }, 120_000);
});

describe('on a PostgreSQL store', () => {
  const pg = usePostgres();
  const startWorker = useWorkerChildren(() => emu);

  it('two workers, a folder of prompts and their copies (some in a subfolder): each content created once, every file gets outputs', async () => {
    const url = await pg.freshDatabase();
    const N = 4;
    const files: Record<string, string> = {};
    for (let i = 0; i < N; i++) files[`p${i}.txt`] = `a distributed owl number ${i}`;
    for (let i = 0; i < N; i++) files[`copy-${i}.txt`] = `a distributed owl number ${i}`;
    const { input, out } = promptFolder(files);
    mkdirSync(join(input, 'sub'));
    for (let i = 0; i < N; i++)
      writeFileSync(join(input, 'sub', `p${i}.txt`), `a distributed owl number ${i}`);
    const recipe = join(input, 'genpipe.yaml');
    writeFileSync(recipe, readFileSync(recipe, 'utf8').replace('"*.txt"', '"**/*.txt"'));
    const inputs = Object.keys(files).concat([...Array(N).keys()].map((i) => `sub/p${i}.txt`));
    const before = await generations();
    const worker = startWorker(url);
    await worker.until(/worker ready/);
    // Every generation held while processing: the copies are admitted while their twins are in flight.
    const holdId = await hold(emu, { state: 'processing', prompt: 'a distributed owl' });
    const runs = spawnGenpipe(
      [
        ...['run', input, '--out', out, '--store', url, '--json'],
        ...['--files-at-once', '4', '--concurrency', '4', ...LOCK_FLAGS],
      ],
      cliEnv(emu),
    );
    try {
      await heldGenerations(emu, N);
      // Each content held once, and nothing ends while held: once every slot of the two workers (4
      // each) holds a job, the copies in them met their twins in flight, here or in the other worker.
      const outDir = realpathSync(out);
      await until(async () => (await queueCounts(url, outDir))?.active === 8, 60_000, 200);
      expect((await generations()) - before).toBe(N);
    } finally {
      await unhold(emu, holdId);
    }
    const ended = await runs.exited;
    expect(ended.code, runs.stderr()).toBe(0);
    expect((await generations()) - before).toBe(N);
    const report = readJson(join(out, 'report.json'));
    expect(report.totals).toMatchObject({ inputs: 3 * N, succeeded: 3 * N });
    for (const i of inputs) expect(outputsOf(out, i), i).toHaveLength(1);
    expect(report.journal.same_content).toBe(2 * N);
    expect(worker.text()).toMatch(/ taken /);
  }, 240_000);

  it("a chain's copy admitted in another worker while its twin is mid-chain waits for it: the chain created once", async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder({});
    writeFileSync(join(input, 'genpipe.yaml'), CHAIN);
    const png = await noisePng(56, 40);
    writeFileSync(join(input, 'a.png'), png);
    const before = await generations();
    // One file at a time each: a.png is the first worker's, its copy the second's.
    const first = startWorker(url, ['--files-at-once', '1', '--concurrency', '1']);
    await first.until(/worker ready/);
    // a.png's last steps held: its row holds generations, its chain not done.
    const holdId = await hold(emu, { state: 'processing', type: 'video_reframe' });
    const args = ['run', input, '--out', out, '--store', url, '--no-work', '--poll-interval', '1'];
    const runA = spawnGenpipe(args, cliEnv(emu));
    let runB: Promise<{ code: number | null; stderr: string }>;
    try {
      await heldGenerations(emu, 1);
      const second = startWorker(url, ['--files-at-once', '1', '--concurrency', '1']);
      await second.until(/worker ready/);
      writeFileSync(join(input, 'b.png'), png);
      runB = runCli(args, cliEnv(emu), 120_000);
      await second.until(/b\.png taken/);
    } finally {
      await unhold(emu, holdId);
    }
    expect((await runA.exited).code, runA.stderr()).toBe(0);
    const endedB = await runB;
    expect(endedB.code, endedB.stderr).toBe(0);
    expect((await generations()) - before).toBe(4);
    expect(itemOf(out, 'b.png')).toMatchObject({
      status: 'succeeded',
      journal: expect.stringMatching(/^reused: same content as a\.png/),
    });
    const strip = (place: string) => outputsOf(out, place).map((o) => o.slice(place.length + 1));
    expect(strip('b.png').sort()).toEqual(['portrait/output-0.mp4', 'square/output-0.mp4']);
  }, 240_000);

  it('a copy admitted in another worker while its twin is at the service shares its retryable failure and its resubmission', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder({ 'a.txt': 'a flaky wolf, across workers' });
    const before = await generations();
    const workerArgs = [
      '--files-at-once',
      '1',
      '--concurrency',
      '1',
      '--retries',
      '1',
      '--poll-interval',
      '1',
    ];
    const first = startWorker(url, workerArgs);
    await first.until(/worker ready/);
    await setFaults(emu, { failure_codes: { generation_failed: 1 } });
    const holdId = await hold(emu, { state: 'processing', prompt: 'flaky wolf' });
    const args = ['run', input, '--out', out, '--store', url, '--no-work'];
    const runA = spawnGenpipe(args, cliEnv(emu));
    let runB: ReturnType<typeof spawnGenpipe> | undefined;
    try {
      await heldGenerations(emu, 1);
      const second = startWorker(url, workerArgs);
      await second.until(/worker ready/);
      writeFileSync(join(input, 'b.txt'), 'a flaky wolf, across workers');
      runB = spawnGenpipe([...args, '--json'], cliEnv(emu));
      await second.until(/b\.txt taken/);
    } finally {
      await unhold(emu, holdId);
    }
    try {
      expect((await runA.exited).code, runA.stderr()).toBe(1);
      expect((await runB!.exited).code, runB!.stderr()).toBe(1);
    } finally {
      await setFaults(emu, {});
    }
    // a.txt's generation and its one resubmission; b.txt sent nothing of its own.
    expect((await generations()) - before).toBe(2);
    // As the run that took b.txt up told it: the two runs end about together, and report.json is the
    // one that ended last's (the other run's lists a.txt only).
    expect(lastOf(runB!.events, 'b.txt')).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^same content as a\.txt, which failed: /),
    });
  }, 240_000);

  it('watch --store with a worker: a copy dropped in creates nothing', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder({});
    const before = await generations();
    const worker = startWorker(url);
    await worker.until(/worker ready/);
    const watch = spawnGenpipe(
      ['watch', input, '--out', out, '--store', url, '--no-work', '--json', '--quiet-ms', '200'],
      cliEnv(emu),
    );
    await watch.until((ev) => ev.some((e) => e.type === 'batch_started'), 'the watch started');
    writeFileSync(join(input, 'w0.txt'), 'a watched copy of a stork');
    await watch.until((ev) => finalIn(ev, 'w0.txt'), 'w0.txt reported', 90_000);
    writeFileSync(join(input, 'w1.txt'), 'a watched copy of a stork');
    await watch.until((ev) => finalIn(ev, 'w1.txt'), 'w1.txt reported', 90_000);
    watch.proc.kill('SIGINT');
    expect((await watch.exited).code, watch.stderr()).toBe(0);
    expect((await generations()) - before).toBe(1);
    expect(outputsOf(out, 'w1.txt')).toHaveLength(1);
    expect(itemOf(out, 'w1.txt')).toMatchObject({
      status: 'succeeded',
      journal: expect.stringMatching(/^reused: same content as w0\.txt/),
    });
    // Its progress says so too, though the reuse happened in the worker.
    expect(reasonOf(watch.events, 'w1.txt')).toMatch(/^reused: same content as w0\.txt/);
  }, 180_000);
});
