/**
 * `genpipe worker --store …` in a process of its own for the CLI's distributed-mode tests: what it
 * printed so far, a wait for a line (driven by its stderr, not by time), its exit; every worker a test
 * started is killed after it (useWorkerChildren).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach } from 'vitest';
import { BIN, cliEnv } from './run-cli.ts';

/** A worker in its own process, and what it printed so far. */
export interface WorkerChild {
  proc: ChildProcess;
  text(): string;
  /** Resolves once its stderr matches `re` (or `re` says yes to it). */
  until(re: RegExp | ((text: string) => boolean)): Promise<void>;
  exited: Promise<number | null>;
}

/** Short locks so that failover is seen within the test (the defaults are 30 s). */
export const LOCK_FLAGS = ['--lock-duration', '3', '--stall-interval', '1'];

/** Registers the clean-up; returns the starter of a worker on the store at `url` against `emu`. */
export function useWorkerChildren(
  emu: () => { url: string },
): (url: string, extra?: string[]) => WorkerChild {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGCONT');
        c.kill('SIGKILL');
      }
    }
  });
  return (url, extra = []) => {
    const proc = spawn(
      process.execPath,
      [BIN, 'worker', '--store', url, '--files-at-once', '4', '--concurrency', '4', ...LOCK_FLAGS, ...extra],
      { env: cliEnv(emu()), stdio: ['ignore', 'pipe', 'pipe'] },
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
    exited.then(() => {
      const now = waiters;
      waiters = [];
      for (const w of now) w();
    });
    const until = (re: RegExp | ((text: string) => boolean)) =>
      new Promise<void>((resolve, reject) => {
        // A bound only so that a failure shows what the worker said (events drive the test, not this).
        const bound = setTimeout(() => reject(new Error(`worker never printed ${re}:\n${text}`)), 90_000);
        const check = () => {
          if (typeof re === 'function' ? re(text) : re.test(text)) {
            clearTimeout(bound);
            resolve();
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            clearTimeout(bound);
            reject(new Error(`worker exited:\n${text}`));
          } else waiters.push(check);
        };
        check();
      });
    return { proc, text: () => text, until, exited };
  };
}
