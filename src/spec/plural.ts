/**
 * The one way genpipe writes a count of things (the client's notes, the CLI's lines, the progress and
 * the reports alike): the noun in the number the count takes. Here, at the bottom of the imports, so
 * that every part can use it.
 */

/**
 * The noun for `n` of it: `one` for exactly 1, else `many` (`one` + `s` unless given).
 *
 * @example pluralNoun(1, 'file was', 'files were') // 'file was'
 */
export function pluralNoun(n: number, one: string, many = `${one}s`): string {
  return n === 1 ? one : many;
}

/**
 * `n` and its noun: `1 file`, `0 files`, `2 retries`.
 *
 * @example plural(1, 'file') // '1 file'
 * @example plural(3, 'retry', 'retries') // '3 retries'
 */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${pluralNoun(n, one, many)}`;
}
