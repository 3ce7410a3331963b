/**
 * `genpipe run --store` and `genpipe watch --store` as a user runs them: distributed by default (enqueued for the workers, a share
 * worked on by the run's own worker, the batch followed to its end through the same progress, --json,
 * --log-file and report as any run), re-run, killed with -9, interrupted, and a worker of another API
 * key that must take none of its files. Against the emulator over loopback and an embedded PostgreSQL;
 * the service's admin view is the measure of what was paid.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import {
  adminRows,
  heldGenerations,
  hold,
  KEY_B,
  startTestEmulator,
  unhold,
  until,
} from '../helpers/emulator.ts';
import { schemaFaults } from '../helpers/json-schemas.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';
import { LOCK_FLAGS, useWorkerChildren } from './worker-child.ts';

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

function prompts(n: number, tag: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < n; i++) files[`p${String(i).padStart(3, '0')}.txt`] = `${tag} prompt number ${i}`;
  return files;
}

async function servicedCount(client?: string): Promise<number> {
  return (await adminRows(emu, client)).length;
}

function reportOf(out: string) {
  return JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
}

/** The password of a store URL. */
function passwordOf(url: string): string {
  return decodeURIComponent(new URL(url).password);
}

describe('genpipe run --store (distributed by default)', () => {
  it('enqueues, works beside a worker, shows every file as a run does, and a re-run pays for nothing again', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder({
      ...prompts(6, 'default-run'),
      'empty.txt': '',
      'notes.md': 'no rule',
    });
    const before = await servicedCount();
    const worker = startWorker(url);
    await worker.until(/worker ready/);
    const log = join(out, '..', 'run.log');
    // Every generation is held until the other worker took a file: the run's own worker (2 files at
    // once) cannot take all eight before the other one asks the queue.
    const holdId = await hold(emu, { state: 'processing', prompt: 'default-run' });
    const running = runCli(
      ['run', input, '--out', out, '--store', url, '--json', '--log-file', log, '--files-at-once', '2'],
      cliEnv(emu),
      120_000,
    );
    try {
      await worker.until(/ taken /);
    } finally {
      await unhold(emu, holdId);
    }
    const r = await running;
    // The empty file failed: exit 1, as a run alone says.
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/enqueued 8 files in the store's queue: 8 new, 0 already queued or done/);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const finals = new Map<string, string>();
    for (const e of events) {
      if (e.type === 'item_state' && ['reported', 'failed', 'skipped'].includes(e.state))
        finals.set(e.input, e.state);
    }
    expect(finals.get('empty.txt')).toBe('failed');
    expect(finals.get('notes.md')).toBe('skipped');
    expect([...finals.values()].filter((s) => s === 'reported')).toHaveLength(6);
    expect(events.at(-1)).toMatchObject({
      type: 'batch_finished',
      totals: { inputs: 8, succeeded: 6, failed: 1, skipped: 1 },
    });
    // The report names every file, those refused before any worker planned them included.
    const report = reportOf(out);
    expect(report.totals).toMatchObject({ inputs: 8, succeeded: 6, failed: 1, skipped: 1 });
    const empty = report.items.find((i: { input: string }) => i.input === 'empty.txt');
    expect(empty.reason).toMatch(/empty/);
    expect(report.journal.file).toMatch(/^postgres:\/\/genpipe:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\//);
    expect((await servicedCount()) - before).toBe(6);
    const logText = readFileSync(log, 'utf8');
    expect(logText).toMatch(/enqueued 8 files/);
    expect(logText).toMatch(/finished: 8 inputs, 6 succeeded, 1 failed, 1 skipped/);

    // status: the run's own batch (not its worker's session), ended; the key's window and allowance as learned.
    const status = await runCli(['status', out, '--store', url, '--json'], cliEnv(emu));
    expect(status.code, status.stderr).toBe(0);
    const st = JSON.parse(status.stdout);
    expect(st.last_batch).toMatchObject({ status: 'finished' });
    expect(st.last_batch.options).toMatchObject({ command: 'run', distribute: true });
    expect(st.quota[0].request_limit).toBeGreaterThan(0);
    expect(st.quota[0].window_ms).toBeGreaterThanOrEqual(60_000);
    expect(st.quota[0].window_ms).toBeLessThanOrEqual(61_100);

    // Again: the six are done, the failed file is handed back to the store's decision, nothing is paid.
    const again = await runCli(['run', input, '--out', out, '--store', url], cliEnv(emu), 120_000);
    expect(again.code, again.stderr).toBe(1);
    expect(again.stderr).toMatch(
      /8 files in the store's queue: 0 new, 1 not finished before and put back, 7 already queued or done/,
    );
    expect(again.stdout).toMatch(/p000\.txt: already done in an earlier run/);
    expect(reportOf(out).totals).toMatchObject({ inputs: 8, succeeded: 6, failed: 1, skipped: 1 });
    expect((await servicedCount()) - before).toBe(6);
    for (const text of [
      r.stderr,
      r.stdout,
      again.stderr,
      logText,
      readFileSync(join(out, 'report.html'), 'utf8'),
    ]) {
      expect(text).not.toContain(passwordOf(url));
    }
  }, 240_000);

  it('killed with -9 while its own worker holds files at the service: the same command again collects them, nothing is created twice', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(6, 'killed-run'));
    const before = await servicedCount();
    const holdId = await hold(emu, { state: 'processing' });
    const args = ['run', input, '--out', out, '--store', url, '--concurrency', '4', ...LOCK_FLAGS];
    const first = spawnGenpipe(args, cliEnv(emu));
    await heldGenerations(emu, 4);
    first.proc.kill('SIGKILL');
    await first.exited;
    await unhold(emu, holdId);
    const again = await runCli(args, cliEnv(emu), 120_000);
    expect(again.code, again.stderr).toBe(0);
    expect(reportOf(out).totals).toMatchObject({ inputs: 6, succeeded: 6, failed: 0 });
    // The four held by the killed run were polled by the next one, not created again.
    expect((await servicedCount()) - before).toBe(6);
  }, 180_000);

  it('Ctrl-C: stops waiting (exit 130), its files go back to the queue, the report says which were not finished; a worker and a re-run finish them', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(5, 'interrupted-run'));
    const before = await servicedCount();
    const holdId = await hold(emu, { state: 'processing' });
    const args = ['run', input, '--out', out, '--store', url, ...LOCK_FLAGS];
    const first = spawnGenpipe(args, cliEnv(emu));
    await heldGenerations(emu, 5);
    first.proc.kill('SIGINT');
    const ended = await first.exited;
    await unhold(emu, holdId);
    expect(ended.code, first.stderr()).toBe(130);
    expect(first.stderr()).toMatch(
      /this run stops waiting and its own worker gives the files in its hands back to the queue/,
    );
    expect(first.stderr()).toMatch(
      /5 files not finished here stay with the workers: run the same command again/,
    );
    const stopped = reportOf(out);
    expect(stopped.totals).toMatchObject({ inputs: 5, unprocessed: 5 });
    expect(stopped.items[0].reason).toMatch(/not finished when genpipe stopped waiting for it/);
    const worker = startWorker(url);
    await worker.until(/worker ready/);
    const waited = await runCli([...args, '--no-work'], cliEnv(emu), 120_000);
    expect(waited.code, waited.stderr).toBe(0);
    expect(reportOf(out).totals).toMatchObject({ inputs: 5, succeeded: 5 });
    expect((await servicedCount()) - before).toBe(5);
  }, 180_000);

  it('Ctrl-C while the store is down: exit 130 all the same, with the reports naming the files not finished', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(3, 'store-down-stop'));
    const holdId = await hold(emu, { state: 'processing' });
    const first = spawnGenpipe(['run', input, '--out', out, '--store', url, ...LOCK_FLAGS], cliEnv(emu));
    try {
      await heldGenerations(emu, 3);
      await pg.server().halt();
      await until(async () => /is unreachable/.test(first.stderr()));
      first.proc.kill('SIGINT');
      const ended = await first.exited;
      expect(ended.code, first.stderr()).toBe(130);
      const report = reportOf(out);
      expect(report.totals).toMatchObject({ inputs: 3, unprocessed: 3 });
      expect(report.items[0].reason).toMatch(/not finished when genpipe stopped waiting for it/);
      expect(first.stderr()).toMatch(/3 files: 0 succeeded, 0 failed, 0 skipped, 3 not processed/);
    } finally {
      await pg.server().start();
      await unhold(emu, holdId);
    }
  }, 180_000);

  it("a worker given another API key takes none of the run's files (one queue per service and key)", async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(8, 'other-key'));
    const beforeB = await servicedCount('b');
    const before = await servicedCount();
    const other = startWorker(url, ['--api-key', KEY_B]);
    await other.until(/worker ready/);
    const r = await runCli(['run', input, '--out', out, '--store', url], cliEnv(emu), 120_000);
    expect(r.code, r.stderr).toBe(0);
    expect(reportOf(out).totals).toMatchObject({ inputs: 8, succeeded: 8 });
    expect(other.text()).not.toMatch(/ taken /);
    expect((await servicedCount('b')) - beforeB).toBe(0);
    expect((await servicedCount()) - before).toBe(8);
  }, 180_000);

  it('refuses --no-work and --detach without a store, together, or with --no-distribute, --emulator or --dry-run (exit 2)', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(1, 'refusals'));
    const before = await servicedCount();
    const none = await runCli(['run', input, '--out', out, '--detach'], cliEnv(emu));
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--detach enqueues the files in a store for workers/);
    expect(none.stderr).toContain("Run 'genpipe run --help' for usage.");
    const alone = await runCli(
      ['run', input, '--out', out, '--store', url, '--no-work', '--no-distribute'],
      cliEnv(emu),
    );
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(
      /--no-work leaves the files to workers, but --no-distribute runs them here alone/,
    );
    const both = await runCli(
      ['run', input, '--out', out, '--store', url, '--detach', '--no-work'],
      cliEnv(emu),
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/give --detach or --no-work, not both/);
    expect(both.stderr).toContain("Run 'genpipe run --help' for usage.");
    // A dry run reads no store yet: refused, whatever asks for the workers; nothing is enqueued or sent.
    for (const mode of ['--no-work', '--detach', '--distribute']) {
      const dry = await runCli(['run', input, '--out', out, '--store', url, mode, '--dry-run'], cliEnv(emu));
      expect(dry.code, mode).toBe(2);
      expect(dry.stderr).toMatch(/--dry-run does not read a PostgreSQL store yet/);
    }
    expect(await servicedCount()).toBe(before);
    const emulated = await runCli(
      ['run', input, '--out', out, '--store', url, '--detach', '--emulator'],
      cliEnv(emu),
    );
    expect(emulated.code).toBe(2);
    expect(emulated.stderr).toMatch(/the embedded emulator is this run's own: no worker can reach it/);
  }, 60_000);
});

describe('genpipe run --store --detach', () => {
  it('enqueues and returns; status knows the out dir at once and says how far the workers got', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder(prompts(3, 'detached'));
    const r = await runCli(['run', input, '--out', out, '--store', url, '--detach', '--json'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/enqueued 3 files in the store's queue: 3 new/);
    const enqueued = JSON.parse(r.stdout);
    expect(enqueued).toMatchObject({ type: 'enqueued', files: 3, added: 3, put_back: 0, out_dir: out });
    expect(schemaFaults('event', enqueued)).toEqual([]);
    const status = await runCli(['status', out, '--store', url], cliEnv(emu));
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/last batch: #1 of 1, enqueued for the workers \(--detach/);
    expect(status.stdout).toMatch(/queue of this out dir: 3 queued, 0 in workers' hands, 0 finished/);
    const refused = await runCli(
      ['run', input, '--out', out, '--store', url, '--detach', '--log-file', join(out, '..', 'd.log')],
      cliEnv(emu),
    );
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      /--detach returns once the files are enqueued: --log-file is for a run that follows its batch/,
    );
  }, 60_000);
});

describe('genpipe watch --store (distributed by default)', () => {
  it('hands each settled file to the workers, follows it to its end, moves it when done, and reports it', async () => {
    const url = await pg.freshDatabase();
    const { input, out } = promptFolder({});
    const before = await servicedCount();
    const worker = startWorker(url);
    await worker.until(/worker ready/);
    // --no-work: every file is the other worker's, which shows the hand-over.
    const watch = spawnGenpipe(
      [
        'watch',
        input,
        '--out',
        out,
        '--store',
        url,
        '--no-work',
        '--json',
        '--quiet-ms',
        '200',
        '--on-done',
        'move',
      ],
      cliEnv(emu),
    );
    await watch.until((ev) => ev.some((e) => e.type === 'batch_started'), 'the watch started');
    for (let i = 0; i < 4; i++) writeFileSync(join(input, `w${i}.txt`), `a delegated fox ${i}`);
    await watch.until(
      (ev) => ev.filter((e) => e.type === 'item_state' && e.state === 'reported').length === 4,
      'four files reported',
      90_000,
    );
    watch.proc.kill('SIGINT');
    expect((await watch.exited).code, watch.stderr()).toBe(0);
    expect(worker.text().match(/ taken /g)).toHaveLength(4);
    expect((await servicedCount()) - before).toBe(4);
    expect(reportOf(out).totals).toMatchObject({ inputs: 4, succeeded: 4 });
    expect(readdirSync(join(input, '..', 'processed')).sort()).toEqual([
      'w0.txt',
      'w1.txt',
      'w2.txt',
      'w3.txt',
    ]);
    expect(watch.stderr()).not.toContain(passwordOf(url));
    // The same bytes dropped in again, to a new watch: done in an earlier run, nothing sent.
    const again = spawnGenpipe(
      ['watch', input, '--out', out, '--store', url, '--no-work', '--json', '--quiet-ms', '200'],
      cliEnv(emu),
    );
    await again.until((ev) => ev.some((e) => e.type === 'batch_started'), 'the second watch started');
    writeFileSync(join(input, 'w0.txt'), 'a delegated fox 0');
    await again.until(
      (ev) => ev.some((e) => e.type === 'item_state' && e.input === 'w0.txt' && e.from_journal === true),
      'w0.txt reported as done in an earlier run',
      90_000,
    );
    again.proc.kill('SIGINT');
    expect((await again.exited).code, again.stderr()).toBe(0);
    const told = again.events.find((e) => e.type === 'item_state' && e.input === 'w0.txt');
    expect(told).toMatchObject({ state: 'reported', reason: 'already done in an earlier run' });
    expect((await servicedCount()) - before).toBe(4);
  }, 180_000);
});
