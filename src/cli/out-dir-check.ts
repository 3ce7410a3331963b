/**
 * The one check every command that writes into `--out DIR` makes before it writes or sends anything:
 * DIR must be a folder genpipe can write in, or a folder it can create. An existing file, a path
 * through a file, a folder without permission to create it or to write in it, a read-only filesystem:
 * each is a usage error (exit 2) naming the path, rather than an errno text from the first write.
 * Nothing is created here; the command creates the folder when it first writes.
 */
import { constants, type Stats } from 'node:fs';
import { access, lstat, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { UsageError } from './usage-error.ts';

/** The refusals, naming the out dir as given (made absolute) and the path at fault. */
export const OUT_DIR_TEXTS = {
  notFolder: (flag: string, out: string, what: string) => `${flag} ${out} is ${what}, not a folder`,
  notWritable: (flag: string, out: string, why: string) =>
    `${flag} ${out} is a folder genpipe cannot write in (${why})`,
  cannotCreate: (flag: string, out: string, why: string) => `${flag} ${out} cannot be created: ${why}`,
} as const;

/** What a non-folder is, in words. */
function kindOf(st: Stats): string {
  if (st.isFile()) return 'a file';
  if (st.isSymbolicLink()) return 'a symbolic link to a missing path';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'an unknown kind of entry';
}

function errnoOf(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code;
}

/** Why `access` refused, in words. */
function deniedWhy(err: unknown): string {
  return errnoOf(err) === 'EROFS' ? 'a read-only filesystem' : 'permission denied';
}

/**
 * Checks that `path` is, or can become, a folder this process writes in.
 *
 * @param path - the out dir as given
 * @param flag - the flag's name in the refusals
 * @throws UsageError naming the path and what is wrong
 * @example await checkOutDir('afile') // UsageError: --out /home/me/afile is a file, not a folder
 */
export async function checkOutDir(path: string, flag = '--out'): Promise<void> {
  const out = resolve(path);
  // The nearest path, from the out dir up, that exists; and how the one below it failed.
  let at = out;
  let below: string | undefined;
  let st: Stats;
  for (;;) {
    try {
      st = await stat(at);
      break;
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOENT') {
        // A symbolic link whose target is missing: mkdir cannot make a folder there.
        const link = await lstat(at).catch(() => null);
        if (link?.isSymbolicLink()) {
          throw new UsageError(
            at === out
              ? OUT_DIR_TEXTS.notFolder(flag, out, kindOf(link))
              : OUT_DIR_TEXTS.cannotCreate(flag, out, `${at} is ${kindOf(link)}`),
          );
        }
      } else if (code !== 'ENOTDIR' && code !== 'EACCES') {
        throw new UsageError(OUT_DIR_TEXTS.cannotCreate(flag, out, `${at}: ${code ?? String(err)}`));
      }
      const up = dirname(at);
      if (up === at) return; // the root itself cannot be read: leave it to the first write
      below = code;
      at = up;
    }
  }
  if (!st.isDirectory()) {
    throw new UsageError(
      at === out
        ? OUT_DIR_TEXTS.notFolder(flag, out, kindOf(st))
        : OUT_DIR_TEXTS.cannotCreate(flag, out, `${at} is ${kindOf(st)}, not a folder`),
    );
  }
  if (at === out) {
    try {
      await access(out, constants.W_OK | constants.X_OK);
    } catch (err) {
      throw new UsageError(OUT_DIR_TEXTS.notWritable(flag, out, deniedWhy(err)));
    }
    return;
  }
  // The path below `at` could not be looked at: `at` is a folder this process may not enter.
  if (below === 'EACCES')
    throw new UsageError(OUT_DIR_TEXTS.cannotCreate(flag, out, `no permission to enter ${at}`));
  try {
    await access(at, constants.W_OK | constants.X_OK);
  } catch (err) {
    const why = deniedWhy(err);
    throw new UsageError(
      OUT_DIR_TEXTS.cannotCreate(
        flag,
        out,
        why === 'permission denied' ? `no permission to create a folder in ${at}` : `${at} is on ${why}`,
      ),
    );
  }
}
