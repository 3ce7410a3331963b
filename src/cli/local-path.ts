/**
 * A local path a command takes as an argument (`files upload <path>`, `generate --source <path>`, the
 * input dir of `run` and `watch`), checked before anything is sent: what is there, and when nothing
 * can be reached there, why — a symbolic link loop, or a name that is not valid UTF-8 (the command
 * line hands such a name over with U+FFFD in place of its bytes; raw-names.ts rawPathProblem finds it)
 * — rather than "no such file".
 */
import { statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { rawPathProblem } from '../pipeline/raw-names.ts';
import { LocalCheckError } from './local-check-error.ts';
import { UsageError } from './usage-error.ts';

/** A path that names no file, or no regular file (generate takes it for something else it is not). */
export class NotAFileError extends UsageError {}

/**
 * Why stat could not reach `path` (`err`), when it is there all the same: a symbolic link loop
 * (`named` is how the path is named: `input dir 'x'`), or a name on it that is not valid UTF-8 (`last`
 * says whether the path names a file or a folder). Null when nothing is there.
 */
function unreachable(
  path: string,
  err: unknown,
  named: string,
  last: 'file' | 'folder',
): { text: string; rawName: string | null } | null {
  if ((err as NodeJS.ErrnoException).code === 'ELOOP') {
    return { text: `${named} is a symbolic link loop`, rawName: null };
  }
  const raw = rawPathProblem(path, last);
  return raw === null ? null : { text: raw.reason, rawName: raw.reason };
}

/**
 * Checks that a path names a regular file.
 *
 * @throws NotAFileError when nothing is there, or not a regular file; UsageError for a symbolic link
 *   loop; LocalCheckError (exit 1, as a file the local check refuses) when a name on the way is not
 *   valid UTF-8
 */
export function requireFile(path: string, what: string): void {
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch (err) {
    const why = unreachable(path, err, `'${path}'`, 'file');
    if (why?.rawName) throw new LocalCheckError(what, why.rawName);
    if (why) throw new UsageError(`${what}: ${why.text}`);
    throw new NotAFileError(`${what}: no such file '${path}'`);
  }
  if (!isFile) throw new NotAFileError(`${what}: '${path}' is not a regular file`);
}

/**
 * Checks that a path names a folder (exit 2 otherwise).
 *
 * @throws UsageError when it is not there, not a folder, a symbolic link loop, or a name on the way is
 *   not valid UTF-8
 */
export async function requireDir(path: string, what: string): Promise<void> {
  const st = await stat(path).catch((err: unknown) => {
    const why = unreachable(path, err, `${what} '${path}'`, 'folder');
    if (why?.rawName) throw new UsageError(`${what}: ${why.rawName}`);
    if (why) throw new UsageError(why.text);
    return null;
  });
  if (!st) throw new UsageError(`${what} '${path}' does not exist`);
  if (!st.isDirectory()) throw new UsageError(`${what} '${path}' is not a folder`);
}
