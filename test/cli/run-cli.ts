/**
 * Runs `node bin/genpipe.js ...` as a child process, as a user would, with the connection given by
 * environment variables. Asynchronous on purpose: the emulator the CLI talks to runs in the test's own
 * process and must keep answering while the child runs.
 */

import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { KEY } from '../helpers/emulator.ts';
import { otherUserCheckout } from '../helpers/other-user.ts';
import { verboseArgs } from '../helpers/processes.ts';

export const BIN = join(import.meta.dirname, '..', '..', 'bin', 'genpipe.js');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a CLI run against `emu`: GENPIPE_* set, any inherited GENPIPE_* removed. */
export function cliEnv(emu: { url: string }, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('GENPIPE_')) env[k] = v;
  return { ...env, GENPIPE_API_KEY: KEY, GENPIPE_BASE_URL: emu.url, ...extra };
}

/**
 * Runs the CLI to its exit.
 * @param onStderr - sees stderr as it grows (with the child, e.g. to send it a signal)
 * @param as - the user and group to run it as (a process running as root may pick any); another user
 *   runs it from a copy of the checkout it can reach (test/helpers/other-user.ts)
 */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
  onStderr?: (text: string, child: ChildProcess) => void,
  as: { uid?: number; gid?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    // Another user starts in (and runs from) a copy of the checkout: it may not enter the checkout.
    const other = as.uid === undefined ? null : otherUserCheckout();
    const bin = other ? join(other, 'bin', 'genpipe.js') : BIN;
    const child = spawn(process.execPath, [bin, ...verboseArgs(args)], {
      env,
      ...(other ? { cwd: other } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...as,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += String(d);
    });
    child.stderr.on('data', (d) => {
      stderr += String(d);
      onStderr?.(stderr, child);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`genpipe ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stderr}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON a `--json` run printed on stdout. */
// biome-ignore lint/suspicious/noExplicitAny: tests read results loosely
export function jsonOut(r: CliResult): any {
  try {
    return JSON.parse(r.stdout);
  } catch {
    throw new Error(`stdout is not JSON (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}
