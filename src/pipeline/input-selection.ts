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
  notIncluded: 'not matched by any --include',
  beyondMax: (n: number) => `beyond --max-files ${n}`,
} as const;

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
