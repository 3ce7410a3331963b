/**
 * Distributed mode: `genpipe worker --store` processes in their own processes, and `genpipe run --store
 * --no-work / --detach` enqueuing a folder, against the emulator over loopback and an embedded
 * PostgreSQL. What the service saw (its admin view) is the measure: every file created exactly once.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, heldGenerations, hold, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';
import { useWorkerChildren } from './worker-child.ts';

const pg = usePostgres();
const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => {
  await emu?.close();
});

const startWorker = useWorkerChildren(() => emu);

/** `n` prompt files, each with a prompt of its own. */
function prompts(n: number, tag: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`p${String(i).padStart(3, '0')}.txt`] = `${tag} prompt number ${i}`;
  return files;
}

/** How many generations the service holds now (the admin view). */
async function servicedCount(): Promise<number> {
  return (await adminRows(emu)).length;
}

describe('genpipe worker and run --store in distributed mode', () => {
  it('three workers finish a 60-file batch enqueued by run --no-work: the service created exactly 60', async () => {
    const url = await pg.freshDatabase();
    const tag = 'three-workers';
    const { input, out } = promptFolder(prompts(60, tag));
    const before = await servicedCount();
    const workers = [startWorker(url), startWorker(url), startWorker(url)];
    await Promise.all(workers.map((w) => w.until(/worker ready/)));
    const run = await runCli(['run', input, '--out', out, '--store', url, '--no-work'], cliEnv(emu), 120_000);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.totals).toMatchObject({ inputs: 60, succeeded: 60, failed: 0 });
    expect((await servicedCount()) - before).toBe(60);
    // Each worker took part.
    for (const w of workers) expect(w.text()).toMatch(/reported/);
  }, 180_000);

  it('a worker killed with -9 holding jobs at the service: another continues them, nothing is created twice', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(12, 'killed-worker'));
    const before = await servicedCount();
    const holdId = await hold(emu, { state: 'processing' });
    const victim = startWorker(url);
    await victim.until(/worker ready/);
    const run = runCli(['run', input, '--out', out, '--store', url, '--no-work'], cliEnv(emu), 120_000);
    // The victim has four creates at the service, held there.
    await heldGenerations(emu, 4);
    const dead = victim.exited;
    victim.proc.kill('SIGKILL');
    await dead;
    const heir = startWorker(url, ['--verbose']);
    await heir.until(/worker ready/);
    await unhold(emu, holdId);
    const r = await run;
    // A run that did not end says what the heir did meanwhile.
    expect(r.code, `${r.stderr}\n--- the heir worker said:\n${heir.text().slice(-4000)}`).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.totals).toMatchObject({ inputs: 12, succeeded: 12, failed: 0 });
    // The victim's four were polled by the heir, not created again.
    expect((await servicedCount()) - before).toBe(12);
    expect(heir.text()).toMatch(/taken \(try 2\)/);
  }, 180_000);

  it('a paused worker (kill -STOP past its lock, then -CONT) sends nothing for the items another took over', async () => {
    const url = await pg.freshDatabase();
    const { input } = promptFolder(prompts(2, 'paused-worker'));
    const before = await servicedCount();
    const holdId = await hold(emu, { state: 'processing' });
    // One job at the service at a time: the second item waits, admitted and ready, before its create.
    const slow = startWorker(url, ['--files-at-once', '2', '--concurrency', '1', '--verbose']);
    await slow.until(/worker ready/);
    const out = join(input, '..', 'out');
    const enq = await runCli(['run', input, '--out', out, '--store', url, '--detach'], cliEnv(emu), 60_000);
    expect(enq.code, enq.stderr).toBe(0);
    await heldGenerations(emu, 1);
    // One file submitted (held at the service), the other admitted and waiting for the job slot.
    const reached = (text: string, input: string, state: string) => text.includes(`${input} ${state}`);
    await slow.until(
      (t) =>
        (reached(t, 'p000.txt', 'submitted') && reached(t, 'p001.txt', 'uploaded')) ||
        (reached(t, 'p001.txt', 'submitted') && reached(t, 'p000.txt', 'uploaded')),
    );
    slow.proc.kill('SIGSTOP');
    // Another worker takes both over once the paused one's locks lapsed: it polls the first, creates the second.
    const other = startWorker(url, ['--verbose']);
    await other.until(/worker ready/);
    await heldGenerations(emu, 2);
    await unhold(emu, holdId);
    await other.until(
      /p000\.txt reported[\s\S]*p001\.txt reported|p001\.txt reported[\s\S]*p000\.txt reported/,
    );
    slow.proc.kill('SIGCONT');
    // The paused worker wakes up: its writes are refused, so it leaves both items and sends nothing.
    await slow.until(/left: .*taken up meanwhile[\s\S]*left: .*taken up meanwhile/);
    expect((await servicedCount()) - before).toBe(2);
    const rows = (await adminRows(emu)).slice(before);
    expect(new Set(rows.map((r) => r.request_id)).size).toBe(2);
  }, 180_000);

  it('two runs enqueuing the same folder at once add each file once', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(20, 'two-enqueuers'));
    const before = await servicedCount();
    const args = ['run', input, '--out', out, '--store', url, '--detach'];
    const [a, b] = await Promise.all([runCli(args, cliEnv(emu), 60_000), runCli(args, cliEnv(emu), 60_000)]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    const worker = startWorker(url);
    await worker.until(/worker ready/);
    const waited = await runCli(
      ['run', input, '--out', out, '--store', url, '--no-work'],
      cliEnv(emu),
      120_000,
    );
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stderr).toMatch(/enqueued 20 files in the store's queue: 0 new/);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.totals).toMatchObject({ inputs: 20, succeeded: 20 });
    expect((await servicedCount()) - before).toBe(20);
    // Every file was taken up. (On a loaded machine a job whose lock lapsed is taken again, and its
    // line may say try 1 again: CI under heavy load saw 22 takes of 20 files, 20 paid. That the
    // enqueue added each file once is what 'enqueued 20 files …: 0 new' and the 20 paid say.)
    const taken = worker.text().match(/\S+ taken \(try \d+\)/g) ?? [];
    expect(new Set(taken.map((line) => line.split(' ')[0])).size, taken.join(', ')).toBe(20);
  }, 180_000);

  /** How long the database stays down in the test below: past the workers' locks (LOCK_FLAGS). */
  const OUTAGE_MS = 5_000;

  it('Postgres restarted mid-batch: workers wait it out and go on, nothing is sent while it is down or twice', async () => {
    const url = await pg.freshDatabase();
    const tag = 'postgres-restarted';
    const { input, out } = promptFolder(prompts(20, tag));
    const before = await servicedCount();
    const holdId = await hold(emu, { state: 'processing', prompt: tag });
    const workers = [startWorker(url), startWorker(url)];
    await Promise.all(workers.map((w) => w.until(/worker ready/)));
    let runSawOutage = (): void => undefined;
    const runNoticed = new Promise<void>((resolve) => {
      runSawOutage = resolve;
    });
    const run = runCli(
      ['run', input, '--out', out, '--store', url, '--no-work'],
      cliEnv(emu),
      240_000,
      (text) => {
        if (/store .* unreachable/.test(text)) runSawOutage();
      },
    );
    // Eight creates held at the service (two workers, four files each); twelve files wait in the queue.
    await heldGenerations(emu, 8);
    const sentBefore = await servicedCount();
    await pg.server().halt();
    // Each worker notices the store is gone (and says so once, without the password).
    await Promise.all(workers.map((w) => w.until(/store .* unreachable/)));
    await runNoticed;
    // While it is down nothing new is sent: the held jobs stay held, the queue hands out nothing.
    expect(await servicedCount()).toBe(sentBefore);
    // The outage outlasts the workers' 3 s locks (the outcome does not depend on how long it is: a
    // longer one only makes the jobs be taken back, a shorter one not).
    await new Promise((r) => setTimeout(r, OUTAGE_MS));
    expect(await servicedCount()).toBe(sentBefore);
    await pg.server().start();
    await Promise.all(workers.map((w) => w.until(/store .* reachable again/)));
    await unhold(emu, holdId);
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.totals).toMatchObject({ inputs: 20, succeeded: 20, failed: 0 });
    // Exactly one generation per file: nothing paid twice.
    const rows = (await adminRows(emu)).slice(before);
    expect(rows.length).toBe(20);
    expect(new Set(rows.map((row) => row.request_id)).size).toBe(20);
    const password = new URL(url).password;
    for (const w of workers) {
      expect(w.proc.exitCode).toBeNull();
      expect(w.text()).not.toContain(password);
      expect(w.text().match(/unreachable/g)?.length).toBe(1);
      // A file a worker had to leave is the queue's to hand out again, not a batch that stopped early.
      expect(w.text()).not.toMatch(/stopped early|the next run continues/);
    }
    expect(r.stderr).not.toContain(password);
    expect(r.stderr).toMatch(/run: the store .* is reachable again after \d+ s/);
  }, 300_000);

  it('a worker that cannot read an input says so, naming it, and sends nothing for it', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(1, 'unreadable-here'));
    const before = await servicedCount();
    const enq = await runCli(['run', input, '--out', out, '--store', url, '--detach'], cliEnv(emu), 60_000);
    expect(enq.code, enq.stderr).toBe(0);
    // The file is gone from this worker's view of the share.
    rmSync(join(input, 'p000.txt'));
    const worker = startWorker(url);
    await worker.until(
      /cannot read input .*p000\.txt \(inputs must be on storage every worker sees at the same path\)/,
    );
    expect((await servicedCount()) - before).toBe(0);
  }, 120_000);
});
