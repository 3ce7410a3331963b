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

/** How runCli starts the CLI beyond its arguments. */
export interface CliRunAs {
  /** The user and group to run it as (see runCli). */
  uid?: number;
  gid?: number;
  /** The folder it starts in (by default the test's own; another user's is its copy of the checkout). */
  cwd?: string;
}

/**
 * Runs the CLI to its exit.
 * @param args - the arguments; or a command line a shell (`sh -c`) completes: each `$(printf ...)` in
 *   it left to the shell, the way a user hands over a name that is not valid UTF-8 (Node's own
 *   arguments are always UTF-8)
 * @param onStderr - sees stderr as it grows (with the child, e.g. to send it a signal)
 * @param as - the user and group to run it as (a process running as root may pick any); another user
 *   runs it from a copy of the checkout it can reach (test/helpers/other-user.ts); and the folder it
 *   starts in
 */
export function runCli(
  args: string[] | string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 30_000,
  onStderr?: (text: string, child: ChildProcess) => void,
  as: CliRunAs = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const { cwd, ...user } = as;
    // Another user starts in (and runs from) a copy of the checkout: it may not enter the checkout.
    const other = user.uid === undefined ? null : otherUserCheckout();
    const bin = other ? join(other, 'bin', 'genpipe.js') : BIN;
    const [file, argv, childEnv] =
      typeof args === 'string'
        ? [
            'sh',
            ['-c', `"$GENPIPE_NODE" "$GENPIPE_BIN" ${args}`],
            { ...env, GENPIPE_NODE: process.execPath, GENPIPE_BIN: bin },
          ]
        : [process.execPath, [bin, ...verboseArgs(args)], env];
    const start = cwd ?? other;
    const child = spawn(file, argv, {
      env: childEnv,
      ...(start ? { cwd: start } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...user,
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
      reject(
        new Error(
          `genpipe ${typeof args === 'string' ? args : args.join(' ')} did not exit within ${timeoutMs} ms\n${stderr}`,
        ),
      );
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
