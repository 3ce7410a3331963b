/**
 * Discovery: a streaming, recursive walk of the input dir that yields one Item per input file, in a
 * stable order (entries sorted by name within each folder, depth first). It skips what is not an input:
 * dotfiles and dot-folders, temporary names, sidecars, recipes and their references, the out dir when it
 * sits inside the input dir, and every symbolic link that leads out of the tree.
 *
 * Names are read as bytes: a file whose name, or a folder's above it, is not valid UTF-8 cannot be
 * opened by a string path, and is yielded failed with a reason naming it (raw-names.ts), after the
 * same rules as any other entry (hidden, temporary, --include/--exclude, ...).
 *
 * Memory stays flat in the size of the tree: one folder's entry names are held at a time (plus those
 * still to visit in its parents), and at most one folder handle is open at once (a folder is read to
 * the end and closed before the walk goes into its subfolders).
 */
import { lstat, opendir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import {
  excludedFolder,
  type InputSelection,
  SELECTION_REASONS,
  selectionFilter,
} from './input-selection.ts';
import { type Item, newItem } from './item.ts';
import { escapedName, isUsableName, RAW_NAME_TEXTS, unnamableItem } from './raw-names.ts';
import { RECIPE_FILE_NAME } from './recipe.ts';
import { SIDECAR_SUFFIX } from './recipe-sidecar.ts';

export interface DiscoverOptions {
  /** The batch's out dir: skipped when inside the input dir. It may not exist yet. */
  outDir?: string;
  /** Files to leave out wherever they sit: the recipe file and its references (see recipeFiles). */
  skipFiles?: Iterable<string>;
  /** Stops the walk: the generator rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Told about every entry left out and why (for logs and tests); not about folders walked into. */
  onSkip?: (input: string, reason: string) => void;
  /**
   * When given, a subfolder (never the input dir itself) that cannot be read is reported here and left
   * out instead of failing the walk (the watcher keeps what it knew under it).
   */
  onUnreadableDir?: (input: string, err: NodeJS.ErrnoException) => void;
  /**
   * The files to take among the inputs (--include, --exclude, --max-files): the others are told to
   * `onSkip` with why. Past `maxFiles` the walk goes on only to count the rest: a regular file is then
   * not looked at beyond its folder's listing (no stat). A folder an exclude leaves out entirely
   * (`raw/**`) is not walked into: it is told to `onSkip` once, as the folder.
   */
  select?: InputSelection;
}

/** Why discovery left an entry out. */
export const SKIP_REASONS = {
  hidden: 'hidden (name starts with a dot)',
  temporary: 'temporary file name',
  sidecar: 'sidecar of another file',
  recipe: 'recipe file',
  recipeFile: 'part of the recipe (the recipe file or a reference)',
  outDir: 'the out dir',
  symlinkOut: 'symbolic link leading out of the input dir',
  symlinkDir: 'symbolic link to a folder (not followed)',
  symlinkBroken: 'broken symbolic link',
  symlinkLoop: 'symbolic link loop',
  special: 'not a regular file',
} as const;

/** Endings of names that browsers, editors and sync tools give files still being written. */
export const TEMP_SUFFIXES = ['.part', '.partial', '.tmp', '.temp', '.crdownload', '.swp', '~'] as const;
/** Beginnings of temporary names (Office lock files). */
export const TEMP_PREFIXES = ['~$'] as const;

/**
 * True when `name` is a temporary file name (`*.part`, `*.partial`, `*.tmp`, `*.temp`, `*.crdownload`,
 * `*.swp`, `*~`, `~$*`), ignoring case.
 *
 * @example isTempName('movie.MP4.part') // true
 */
export function isTempName(name: string): boolean {
  const lower = name.toLowerCase();
  return TEMP_SUFFIXES.some((s) => lower.endsWith(s)) || TEMP_PREFIXES.some((p) => lower.startsWith(p));
}

type EntryType = 'file' | 'dir' | 'link' | 'other';
interface Entry {
  /** The name as text: escaped where it is not valid UTF-8 (see `usable`). */
  name: string;
  /** The name's bytes. */
  raw: Buffer;
  /** True when the name is valid UTF-8: a string path reaches the entry. */
  usable: boolean;
  type: EntryType;
}

const SEP = Buffer.from(sep);

/** The real path `p` has or will have: the real path of its deepest existing ancestor plus the rest. */
export async function futureRealpath(p: string): Promise<string> {
  const abs = resolve(p);
  const rest: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      return join(await realpath(cur), ...rest);
    } catch {
      const parent = dirname(cur);
      if (parent === cur) return abs;
      rest.unshift(basename(cur));
      cur = parent;
    }
  }
}

async function readEntries(dir: Buffer, signal: AbortSignal | undefined): Promise<Entry[]> {
  const entries: Entry[] = [];
  // Names as bytes (Node takes 'buffer' here, though its types do not say so).
  const handle = await opendir(dir, { bufferSize: 256, encoding: 'buffer' as BufferEncoding });
  // for await closes the handle when the loop ends, also on a throw.
  for await (const d of handle) {
    signal?.throwIfAborted();
    const type: EntryType = d.isFile()
      ? 'file'
      : d.isDirectory()
        ? 'dir'
        : d.isSymbolicLink()
          ? 'link'
          : 'other';
    const raw = d.name as unknown as Buffer; // encoding 'buffer': the name's bytes
    const usable = isUsableName(raw);
    entries.push({ name: usable ? raw.toString('utf8') : escapedName(raw), raw, usable, type });
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Why a file named `name` is not an input whatever its content (hidden, temporary, sidecar of a file
 * `hasFile` knows in the same folder, recipe), or null. Discovery and the watcher share these rules.
 *
 * @example nameSkipReason('photo.jpg.json', (n) => n === 'photo.jpg') // SKIP_REASONS.sidecar
 */
export function nameSkipReason(name: string, hasFile: (name: string) => boolean): string | null {
  if (name.startsWith('.')) return SKIP_REASONS.hidden;
  if (isTempName(name)) return SKIP_REASONS.temporary;
  if (name.endsWith(SIDECAR_SUFFIX) && hasFile(name.slice(0, -SIDECAR_SUFFIX.length))) {
    return SKIP_REASONS.sidecar;
  }
  if (name === RECIPE_FILE_NAME) return SKIP_REASONS.recipe;
  return null;
}

function isInside(root: string, p: string): boolean {
  return p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Where the symbolic link `rawAbs` leads: its target's real path (escaped where its name is not valid
 * UTF-8, with the reason it cannot be read then), or why it is not followed.
 */
async function linkTarget(
  rawAbs: Buffer,
  root: string,
): Promise<string | { real: string; unnamable: string | null }> {
  let target: Buffer;
  try {
    target = await realpath(rawAbs, { encoding: 'buffer' });
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ELOOP'
      ? SKIP_REASONS.symlinkLoop
      : SKIP_REASONS.symlinkBroken;
  }
  const usable = isUsableName(target);
  const real = usable ? target.toString('utf8') : escapedName(target);
  if (!isInside(root, real)) return SKIP_REASONS.symlinkOut;
  const unnamable = usable ? null : RAW_NAME_TEXTS.linkTarget(relative(root, real).split(sep).join('/'));
  return { real, unnamable };
}

/**
 * Walks `inputDir` and yields an Item (state `discovered`) for every input file, in a stable order:
 * each folder's entries by name (code unit order, so `B.jpg` before `a.jpg`), a subfolder's files at
 * the subfolder's place among them.
 * A symbolic link to a file is followed only when its target lies inside the input dir (the item's
 * `absPath` is then the target's real path); links to folders are never followed, so the walk has no
 * loops and visits each folder once.
 *
 * @param inputDir - the batch's input dir
 * @throws Error when `inputDir` is not a folder, or when `outDir` is the input dir itself
 * @example for await (const item of discover('photos', { outDir: 'out', skipFiles: recipeFiles(recipe) })) …
 */
export async function* discover(inputDir: string, opts: DiscoverOptions = {}): AsyncGenerator<Item> {
  const root = await realpath(inputDir).catch(() => null);
  if (root === null || !(await stat(root)).isDirectory()) {
    throw new Error(`input dir ${inputDir} is not a folder`);
  }
  const outReal = opts.outDir === undefined ? null : await futureRealpath(opts.outDir);
  if (outReal === root)
    throw new Error('the out dir cannot be the input dir (the input dir is never modified)');
  const skipFiles = new Set<string>();
  for (const f of opts.skipFiles ?? []) skipFiles.add(await futureRealpath(f));
  const { signal, onSkip, onUnreadableDir } = opts;
  const skip = (input: string, reason: string) => onSkip?.(input, reason);
  const selected = opts.select ? selectionFilter(opts.select) : null;
  const folderExcluded = opts.select ? excludedFolder(opts.select) : null;
  const maxFiles = opts.select?.maxFiles ?? Number.POSITIVE_INFINITY;
  const beyondMax = SELECTION_REASONS.beyondMax(maxFiles);
  let taken = 0;

  /**
   * The folder `dirRaw` (its bytes; `dirAbs` as text, `dirRel` relative and escaped), `badFolder` the
   * first folder on the way whose name is not valid UTF-8 (null: every one is).
   */
  async function* walk(
    dirRaw: Buffer,
    dirAbs: string,
    dirRel: string,
    badFolder: string | null,
  ): AsyncGenerator<Item> {
    let entries: Entry[];
    try {
      entries = await readEntries(dirRaw, signal);
    } catch (err) {
      if (dirRel === '' || onUnreadableDir === undefined || signal?.aborted) throw err;
      onUnreadableDir(dirRel, err as NodeJS.ErrnoException);
      return;
    }
    const fileNames = new Set(
      entries.filter((e) => e.type === 'file' || e.type === 'link').map((e) => e.name),
    );
    for (const { name, raw, usable, type } of entries) {
      signal?.throwIfAborted();
      const rel = dirRel ? `${dirRel}/${name}` : name;
      const abs = join(dirAbs, name);
      const rawAbs = Buffer.concat([dirRaw, SEP, raw]);
      if (name.startsWith('.')) {
        skip(rel, SKIP_REASONS.hidden);
        continue;
      }
      if (type === 'dir') {
        const excluded = abs === outReal ? SKIP_REASONS.outDir : (folderExcluded?.(rel) ?? null);
        if (excluded !== null) skip(rel, excluded);
        else yield* walk(rawAbs, abs, rel, badFolder ?? (usable ? null : rel));
        continue;
      }
      if (type === 'other') {
        skip(rel, SKIP_REASONS.special);
        continue;
      }
      const byName = nameSkipReason(name, (n) => fileNames.has(n));
      if (byName !== null) {
        skip(rel, byName);
        continue;
      }
      let real = abs;
      let unnamable = badFolder !== null ? RAW_NAME_TEXTS.folder(badFolder) : null;
      if (unnamable === null && !usable) unnamable = RAW_NAME_TEXTS.file(rel);
      if (type === 'link') {
        const target = await linkTarget(rawAbs, root as string);
        if (typeof target === 'string') {
          skip(rel, target);
          continue;
        }
        unnamable ??= target.unnamable;
        real = target.real;
      }
      if (skipFiles.has(real)) {
        skip(rel, SKIP_REASONS.recipeFile);
        continue;
      }
      const notSelected = selected?.(rel) ?? null;
      if (notSelected !== null) {
        skip(rel, notSelected);
        continue;
      }
      if (taken >= maxFiles && type === 'file') {
        skip(rel, beyondMax); // the listing says it is a regular file: no stat needed to count it
        continue;
      }
      const st = await (type === 'link' ? stat(rawAbs) : lstat(rawAbs)).catch(() => null);
      if (st === null) continue; // gone since the folder was read
      if (st.isDirectory()) {
        skip(rel, SKIP_REASONS.symlinkDir);
        continue;
      }
      if (!st.isFile()) {
        skip(rel, SKIP_REASONS.special);
        continue;
      }
      if (outReal !== null && isInside(outReal, real)) {
        skip(rel, SKIP_REASONS.outDir);
        continue;
      }
      if (taken >= maxFiles) {
        skip(rel, beyondMax);
        continue;
      }
      taken++;
      yield unnamable === null
        ? newItem(rel, real, st.size, st.mtimeMs)
        : unnamableItem(rel, rawAbs.subarray(rootRaw.length + 1), real, st.size, st.mtimeMs, unnamable);
    }
  }

  const rootRaw = Buffer.from(root);
  yield* walk(rootRaw, root, '', null);
}
