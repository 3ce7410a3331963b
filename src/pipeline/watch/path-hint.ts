/**
 * A file event (from chokidar) is only a hint that one path is worth a look soon. This looks at that
 * one path with discovery's own rules (nameSkipReason: dotfiles, temporary names, sidecars, recipes;
 * no dot-folder on the way), and returns what a rescan would have found there, or null. Symbolic links
 * are left to the rescans, which know where they lead.
 */
import { lstat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { nameSkipReason } from '../discover.ts';
import { SIDECAR_SUFFIX } from '../recipe-sidecar.ts';
import type { Signature } from './stability.ts';

export interface PathHintRules {
  /** The watched folder's real path (the root discovery walks from). */
  root: string;
  /** Real paths of files to leave out (the recipe file and its references). */
  skipFiles: ReadonlySet<string>;
  /** Further inputs to leave out, by path relative to the watched folder. */
  shouldSkip?: ((input: string) => boolean) | undefined;
}

export interface LookedAt {
  input: string;
  absPath: string;
  sig: Signature;
}

/** The input at `absPath` as discovery would see it, or null when it is not an input (or not there). */
export async function lookAtPath(rules: PathHintRules, absPath: string): Promise<LookedAt | null> {
  const rel = relative(rules.root, absPath);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return null;
  const parts = rel.split(sep);
  if (parts.slice(0, -1).some((p) => p.startsWith('.'))) return null;
  const name = basename(absPath);
  let siblingIsFile = false;
  if (name.endsWith(SIDECAR_SUFFIX)) {
    const sibling = await lstat(join(dirname(absPath), name.slice(0, -SIDECAR_SUFFIX.length))).catch(
      () => null,
    );
    siblingIsFile = sibling !== null && (sibling.isFile() || sibling.isSymbolicLink());
  }
  if (nameSkipReason(name, () => siblingIsFile) !== null) return null;
  if (rules.skipFiles.has(absPath)) return null;
  const input = parts.join('/');
  if (rules.shouldSkip?.(input)) return null;
  const st = await lstat(absPath).catch(() => null);
  if (st === null || !st.isFile()) return null;
  return { input, absPath, sig: { size: st.size, mtimeMs: st.mtimeMs } };
}
