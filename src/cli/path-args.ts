/**
 * One rule for every local path a command takes on its command line — an option whose value is a
 * path (`--out <out-dir>`, `--journal <path>`, `--recipe <file>`, `--data-dir <dir>`...) and an
 * argument that is one (`<input-dir>`, `status <out-dir>`): a path holding U+FFFD is refused (exit 2,
 * naming the option) before the command does anything. Node decodes argv with U+FFFD in place of bytes
 * that are not valid UTF-8, so such a path is not the one the user gave, and writing, reading or
 * journalling there would use another path silently; a real U+FFFD cannot be told from one. Which
 * options and arguments are paths is read from their placeholders (PATH_PLACEHOLDERS), so a new one is
 * covered by naming it so. `files upload <path>` and generate's `--source`/`--image-ref` files are the
 * local check's (local-check.ts: exit 1, as any file it refuses).
 */
import type { Command } from 'commander';
import { printable } from '../pipeline/progress/format.ts';
import { rawPathProblem } from '../pipeline/raw-names.ts';
import { UsageError } from './usage-error.ts';

/** The placeholders (`--out <out-dir>`) of option values and the names of arguments that are local paths. */
const PATH_PLACEHOLDERS: ReadonlySet<string> = new Set(['out-dir', 'input-dir', 'dir', 'file', 'path']);

/** Arguments whose placeholder says path but which the local check refuses (exit 1) instead. */
const LOCAL_CHECKED: ReadonlySet<string> = new Set(['files upload <path>']);

/**
 * Why `value`, given for `named`, cannot be used: null when it holds no U+FFFD. Names the path escaped
 * when its bytes are found on disk (raw-names.ts rawPathProblem), and otherwise says so.
 *
 * @example pathArgProblem('--out', 'out\uFFFD') // "--out: the path holds a byte sequence that is not valid UTF-8 (or U+FFFD)…"
 */
export function pathArgProblem(
  named: string,
  value: string,
  last: 'file' | 'folder' = 'folder',
): string | null {
  if (!value.includes('\uFFFD')) return null;
  const found = rawPathProblem(value, last);
  const why = `${named}: the path holds a byte sequence that is not valid UTF-8 (or U+FFFD), and genpipe cannot name it exactly`;
  return found
    ? `${why}: ${found.reason}`
    : `${why}: '${printable(value)}'; give a path that is valid UTF-8 (rename the folder or file)`;
}

/** The placeholder of an option's value: `out-dir` for `-o, --out <out-dir>`; null for a switch. */
function placeholder(flags: string): string | null {
  return /[<[]([a-z-]+)(\.\.\.)?[>\]]/.exec(flags)?.[1] ?? null;
}

/**
 * Checks every path-valued option and argument `cmd` was given (see the module's words).
 *
 * @throws UsageError naming the first one that holds U+FFFD
 */
export function checkPathArgs(cmd: Command): void {
  for (const option of cmd.options) {
    const name = placeholder(option.flags);
    if (name === null || !PATH_PLACEHOLDERS.has(name)) continue;
    const last = name === 'file' || name === 'path' ? 'file' : 'folder';
    refuse(option.long ?? option.flags, cmd.getOptionValue(option.attributeName()), last);
  }
  for (const [i, arg] of cmd.registeredArguments.entries()) {
    const name = arg.name();
    if (!PATH_PLACEHOLDERS.has(name) || LOCAL_CHECKED.has(`${cmd.parent?.name()} ${cmd.name()} <${name}>`))
      continue;
    refuse(
      name.replace(/-/g, ' '),
      cmd.processedArgs[i],
      name === 'file' || name === 'path' ? 'file' : 'folder',
    );
  }
}

function refuse(named: string, value: unknown, last: 'file' | 'folder'): void {
  for (const v of Array.isArray(value) ? value : [value]) {
    const problem = typeof v === 'string' ? pathArgProblem(named, v, last) : null;
    if (problem !== null) throw new UsageError(problem);
  }
}
