/**
 * The entries of the input folder a batch did not take as inputs (dotfiles, temporary names, sidecars,
 * the recipe, links leading out of the tree, the out dir, …: what discovery skips, each with its
 * reason): counted all, listed up to {@link IGNORED_LISTED_MAX}, so a folder of a million dotfiles
 * costs a counter, not a million names. report.json's `ignored`, report.html's section and the closing
 * summary are made from it.
 */

/** Entries listed one by one at most; the rest are counted (in `total` and `by_reason`). */
export const IGNORED_LISTED_MAX = 1000;

/** One entry left out, with why. */
export interface IgnoredEntry {
  /** Its path relative to the input dir, '/' separated. */
  input: string;
  reason: string;
}

/** report.json `ignored`. */
export interface ReportIgnored {
  /** Every entry left out. */
  total: number;
  /** How many were left out for each reason. */
  by_reason: Record<string, number>;
  /** The first {@link IGNORED_LISTED_MAX} of them in the order of the walk, each with why. */
  entries: IgnoredEntry[];
  /** Those counted but not listed: `total` minus the entries listed. */
  unlisted: number;
}

/** Collects what discovery leaves out (see the module comment). */
export class IgnoredEntries {
  #total = 0;
  readonly #byReason = new Map<string, number>();
  readonly #entries: IgnoredEntry[] = [];

  constructor(private readonly listedMax = IGNORED_LISTED_MAX) {}

  /** Counts one entry left out, and lists it while fewer than the cap are. */
  add(input: string, reason: string): void {
    this.#total++;
    this.#byReason.set(reason, (this.#byReason.get(reason) ?? 0) + 1);
    if (this.#entries.length < this.listedMax) this.#entries.push({ input, reason });
  }

  /** What was left out so far, as report.json says it. */
  section(): ReportIgnored {
    return {
      total: this.#total,
      by_reason: Object.fromEntries(this.#byReason),
      entries: [...this.#entries],
      unlisted: this.#total - this.#entries.length,
    };
  }
}

/**
 * The count of each reason in words, most first.
 *
 * @example ignoredReasonsText(section) // '2 hidden (name starts with a dot), 1 temporary file name'
 */
export function ignoredReasonsText(ignored: ReportIgnored): string {
  return Object.entries(ignored.by_reason)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${n} ${reason}`)
    .join(', ');
}

/**
 * The ignored entries in words, for a summary line: the total, then the count of each reason.
 *
 * @example ignoredText(section) // '3 ignored: 2 hidden (name starts with a dot), 1 temporary file name'
 */
export function ignoredText(ignored: ReportIgnored): string {
  return ignored.total > 0 ? `${ignored.total} ignored: ${ignoredReasonsText(ignored)}` : '0 ignored';
}
