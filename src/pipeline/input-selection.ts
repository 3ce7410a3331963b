/**
 * Which of the files discovery finds a batch takes (`genpipe run --include/--exclude/--max-files`,
 * `genpipe watch --include/--exclude`): globs on the path relative to the input dir, in the recipe's
 * dialect (globMatcher), and a count of files at most. A file left out this way is ignored with its
 * reason, as discovery's own skips are.
 */
import { globMatcher } from './recipe.ts';

/** The inputs a batch takes among those discovery finds. */
export interface InputSelection {
  /** Globs; when any, a file is taken only when one of them matches it. */
  include?: readonly string[];
  /** Globs; a file one of them matches is left out. */
  exclude?: readonly string[];
  /** Files taken at most, the first in discovery order; the rest are ignored. */
  maxFiles?: number;
}

/** Why a file was left out by the selection. */
export const SELECTION_REASONS = {
  excluded: (glob: string) => `excluded by --exclude '${glob}'`,
  /** A folder not walked into: one entry for all it holds. */
  excludedFolder: (glob: string) => `excluded by --exclude '${glob}' (the whole folder, not looked into)`,
  notIncluded: 'not matched by any --include',
  beyondMax: (n: number) => `beyond --max-files ${n}`,
} as const;

/**
 * The folders `selection` leaves out entirely, which discovery does not walk into: a folder (its path
 * relative to the input dir) is left out when an `--exclude` glob of the form `<prefix>/**` has a prefix
 * matching the folder, so that it matches every file discovery could find below it (`**` matches any
 * names but those starting with a dot, which discovery skips anyway). Returns why (the folder's own reason),
 * or null when the folder is walked; null altogether without such globs.
 *
 * @example excludedFolder({ exclude: ['raw/**'] })?.('raw') // "excluded by --exclude 'raw/**' (the whole folder, not looked into)"
 */
export function excludedFolder(selection: InputSelection): ((folder: string) => string | null) | null {
  const whole = (selection.exclude ?? [])
    .filter((glob) => glob.endsWith('/**') && glob.length > 3)
    .map((glob) => ({ glob, prefix: globMatcher(glob.slice(0, -3)), test: globMatcher(glob) }));
  if (whole.length === 0) return null;
  return (folder) => {
    for (const w of whole) {
      // The whole glob is asked too, for a file in the folder: a prefix of an unusual glob (an extglob
      // cut at its `/`) could match a folder whose files the glob does not.
      if (w.prefix(folder) && w.test(`${folder}/x`)) return SELECTION_REASONS.excludedFolder(w.glob);
    }
    return null;
  };
}

/**
 * The include/exclude check of `selection`: why a file (its path relative to the input dir) is left
 * out, or null when it is taken. An exclude wins over an include; the first exclude matching is named.
 *
 * @example selectionFilter({ exclude: ['raw/**'] })?.('raw/a.jpg') // "excluded by --exclude 'raw/**'"
 */
export function selectionFilter(selection: InputSelection): ((input: string) => string | null) | null {
  const include = (selection.include ?? []).map(globMatcher);
  const exclude = (selection.exclude ?? []).map((glob) => ({ glob, test: globMatcher(glob) }));
  if (include.length === 0 && exclude.length === 0) return null;
  return (input) => {
    for (const e of exclude) if (e.test(input)) return SELECTION_REASONS.excluded(e.glob);
    if (include.length > 0 && !include.some((m) => m(input))) return SELECTION_REASONS.notIncluded;
    return null;
  };
}
