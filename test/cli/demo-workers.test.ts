/**
 * `genpipe demo --workers 3` as a user runs it (a child process in a folder of its own): the bundled
 * samples go through an embedded PostgreSQL and three `genpipe worker` processes; the demo's outputs
 * and reports are written, its output names the database and the workers, and the workers and the
 * database are gone afterwards — at the end, and after Ctrl-C.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { processState } from '../helpers/processes.ts';
import { BIN } from './run-cli.ts';

const root = mkdtempSync(join(tmpdir(), 'genpipe-demo-workers-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface DemoResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `genpipe demo …` in `cwd`; `onStderr` sees its stderr as it grows. */
function demo(
  cwd: string,
  args: string[],
  onStderr?: (text: string, signal: (s: NodeJS.Signals) => void) => void,
): Promise<DemoResult> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GENPIPE_')) env[k] = v;
  const child = spawn(process.execPath, [BIN, 'demo', ...args], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += String(d);
  });
  child.stderr.on('data', (d) => {
    stderr += String(d);
    onStderr?.(stderr, (s) => child.kill(s));
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The worker pids and the database's data dir the demo named. */
function named(stderr: string): { pids: number[]; dataDir: string } {
  const pids = /3 workers on this machine, pids (\d+), (\d+), (\d+)/.exec(stderr);
  const dataDir = /embedded PostgreSQL at 127\.0\.0\.1:\d+, data in (\S+) /.exec(stderr);
  expect(pids, stderr).not.toBeNull();
  expect(dataDir, stderr).not.toBeNull();
  return { pids: (pids ?? []).slice(1).map(Number), dataDir: dataDir?.[1] ?? '' };
}

/** Whether `pid` has ended (gone, or a zombie nobody reaps). */
function ended(pid: number): boolean {
  const state = processState(pid);
  return state === null || state === 'Z';
}

/** Resolves once every pid has ended (the demo SIGKILLs any left as it exits: this is short). */
async function allEnded(pids: number[]): Promise<void> {
  const bound = Date.now() + 20_000;
  while (!pids.every(ended)) {
    if (Date.now() > bound) throw new Error(`still running: ${pids.filter((p) => !ended(p)).join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('genpipe demo --workers 3', () => {
  it('runs the samples through an embedded PostgreSQL and three workers, names them, and cleans up', async () => {
    const cwd = join(root, 'finish');
    const r = await demo(root, ['--workers', '3', '--out', cwd]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('EMULATOR MODE');
    const { pids, dataDir } = named(r.stderr);
    // Each worker said it was ready, under its pid.
    for (const pid of pids) expect(r.stderr).toMatch(new RegExp(`\\[worker ${pid}\\] worker ready`));
    // The password of the store is never shown.
    expect(r.stderr).not.toMatch(/postgres:\/\/genpipe:[^*@]+@/);
    const report = JSON.parse(readFileSync(join(cwd, 'report.json'), 'utf8'));
    expect(report.totals.failed).toBe(0);
    expect(report.totals.inputs).toBeGreaterThanOrEqual(7);
    expect(report.totals.succeeded).toBe(report.totals.inputs);
    expect(existsSync(join(cwd, 'report.html'))).toBe(true);
    expect(existsSync(join(cwd, 'prompts', 'fox.txt', 'result.json'))).toBe(true);
    expect(r.stderr).toMatch(/\d+ files: \d+ succeeded, 0 failed, \d+ skipped; report: /);
    expect(r.stderr).toContain(join(cwd, 'report.html'));
    expect(r.stderr).toMatch(/open \S*report\.html in a browser/);
    // Files were worked on by the workers, not by the enqueuing process.
    expect(r.stderr).toMatch(/\[worker \d+\] worker: \S+ reported/);
    await allEnded(pids);
    expect(existsSync(dataDir)).toBe(false);
  }, 180_000);

  it('Ctrl-C while the workers run: the workers and the database are gone', async () => {
    const cwd = join(root, 'interrupted');
    let sent = false;
    const r = await demo(root, ['--workers', '3', '--out', cwd], (text, signal) => {
      // Once the workers run, before the batch can be done (its wait stops at the next look).
      if (!sent && /workers on this machine, pids/.test(text)) {
        sent = true;
        signal('SIGINT');
      }
    });
    expect(sent, r.stderr).toBe(true);
    expect(r.code, r.stderr).toBe(130);
    const { pids, dataDir } = named(r.stderr);
    await allEnded(pids);
    expect(existsSync(dataDir)).toBe(false);
  }, 180_000);
});
