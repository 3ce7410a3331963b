/**
 * The one error a recipe can raise: every problem found in it at once, each as
 * `<file>:<line>: <field path>: <message>`, so a person fixes the whole file in one go. The CLI maps it
 * to exit code 2.
 */

/** One problem of a recipe, located as precisely as the YAML allows. */
export interface RecipeProblem {
  /** The recipe file as the user named it (or the file that was looked for). */
  file: string;
  /** 1-based line, or null when the problem is the file as a whole (missing, unreadable). */
  line: number | null;
  /** Field path such as `rules[0].request.video.hdr`, or null for a problem of the file as a whole. */
  path: string | null;
  message: string;
}

/**
 * One problem as a line: `<file>:<line>: <field path>: <message>` (parts that are unknown are left out).
 *
 * @example formatProblem({ file: 'genpipe.yaml', line: 3, path: 'rules[0].match', message: 'must be a glob string' })
 * // 'genpipe.yaml:3: rules[0].match: must be a glob string'
 */
export function formatProblem(p: RecipeProblem): string {
  const where = p.line === null ? p.file : `${p.file}:${p.line}`;
  return p.path === null ? `${where}: ${p.message}` : `${where}: ${p.path}: ${p.message}`;
}

/** A recipe that cannot be used, with every problem found (in file order). */
export class RecipeError extends Error {
  override name = 'RecipeError';
  readonly code = 'RECIPE_INVALID';
  readonly problems: readonly RecipeProblem[];
  /**
   * The message's lines: the problem alone, or a head line and one line per problem. A display prints
   * each on its own line (the message is them joined with newlines).
   */
  readonly lines: readonly string[];
  constructor(problems: readonly RecipeProblem[]) {
    const sorted = [...problems].sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
    const each = sorted.map(formatProblem);
    const lines = each.length === 1 ? each : [`the recipe has ${each.length} problems:`, ...each];
    super(lines.join('\n'));
    this.problems = sorted;
    this.lines = lines;
  }
}

/** True when `err` is a RecipeError. */
export function isRecipeError(err: unknown): err is RecipeError {
  return err instanceof RecipeError;
}
