/**
 * Distributed mode: `genpipe worker --store` processes in their own processes, and `genpipe run --store
 * --no-work / --distribute` enqueuing a folder, against the emulator over loopback and an embedded
 * PostgreSQL. What the service saw (its admin view) is the measure: every file created exactly once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, startTestEmulator } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { BIN, cliEnv, runCli } from './run-cli.ts';

const pg = usePostgres();
const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => {
  await emu?.close();
});

/** A worker in its own process, and what it printed so far. */
interface WorkerChild {
  proc: ChildProcess;
  text(): string;
  /** Resolves once its stderr matches `re`. */
  until(re: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
  }
});

/** Short locks so that failover is seen within the test (the defaults are 30 s). */
const LOCK_FLAGS = ['--lock-duration', '3', '--stall-interval', '1'];

function startWorker(url: string, extra: string[] = []): WorkerChild {
  const proc = spawn(
    process.execPath,
    [BIN, 'worker', '--store', url, '--concurrency', '4', ...LOCK_FLAGS, ...extra],
    { env: cliEnv(emu), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(proc);
  let text = '';
  let waiters: Array<() => void> = [];
  proc.stderr?.on('data', (d) => {
    text += String(d);
    const now = waiters;
    waiters = [];
    for (const w of now) w();
  });
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const until = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (re.test(text)) resolve();
        else if (proc.exitCode !== null) reject(new Error(`worker exited:\n${text}`));
        else waiters.push(check);
      };
      check();
    });
  return { proc, text: () => text, until, exited };
}

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
});
