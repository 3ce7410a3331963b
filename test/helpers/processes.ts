/**
 * A child process under a parent that never reaps its children, as in a container started without an
 * init (`sh -c 'genpipe run … & exec sleep 600'`): once killed, the child stays a zombie, and its pid
 * still answers `kill(pid, 0)`.
 */
import { readdirSync, readFileSync } from 'node:fs';

/**
 * The command and arguments that run `argv` under such a parent: `sh` starts `argv` in the background,
 * prints `child <pid>` and becomes `sleep 600`, which never waits for it. Kill the spawned process
 * (the sleep) to end the parent; the child's own pid comes from the `child <pid>` line.
 *
 * @example const [cmd, args] = underNonReapingParent([process.execPath, BIN, 'run', input]);
 */
export function underNonReapingParent(argv: readonly string[]): [string, string[]] {
  const [command, ...rest] = argv;
  if (!command) throw new Error('underNonReapingParent: no command');
  return ['sh', ['-c', '"$0" "$@" & echo "child $!"; exec sleep 600', command, ...rest]];
}

/** The pid printed by underNonReapingParent's `child <pid>` line in `stdout`, or null before it. */
export function childPidIn(stdout: string): number | null {
  const m = /^child (\d+)$/m.exec(stdout);
  return m ? Number(m[1]) : null;
}

/** The state letter of process `pid` (field 3 of /proc/<pid>/stat: R, S, Z, …), or null when it is gone. */
export function processState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? null;
  } catch {
    return null;
  }
}

/** The number of threads of process `pid` still in /proc/<pid>/task (a zombie leader counts as one). */
function threadCount(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/**
 * SIGKILLs `pid` and resolves once it is dead and unreaped: a zombie (state Z) whose threads are all
 * gone. The main thread shows Z as soon as it has exited, while the process's other threads (node has
 * several) may still be exiting and holding its open files; only once the last one has gone are the
 * files closed and their locks dropped.
 */
export async function killToZombie(pid: number, timeoutMs = 20_000): Promise<void> {
  process.kill(pid, 'SIGKILL');
  const end = Date.now() + timeoutMs;
  for (;;) {
    const state = processState(pid);
    if (state === 'Z' && threadCount(pid) === 1) return;
    if (state === null) throw new Error(`process ${pid} was reaped: its parent is not the non-reaping one`);
    if (Date.now() > end)
      throw new Error(`process ${pid} is still in state ${state} ${timeoutMs} ms after SIGKILL`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * `genpipe run|watch` arguments with `-v` added: the tests that follow a child by its plain lines see a
 * line for every state a file reaches (the default, on a pipe, is one line per outcome; a test that is
 * about the default passes `--no-verbose-for-tests`, which is removed here, not given to genpipe).
 */
export function verboseArgs(args: readonly string[]): string[] {
  const out = args.filter((a) => a !== '--no-verbose-for-tests');
  const plain = (args[0] === 'run' || args[0] === 'watch') && !args.includes('--json');
  if (!plain || out.length !== args.length || out.includes('-v') || out.includes('--verbose')) return out;
  return [out[0] as string, '-v', ...out.slice(1)];
}
