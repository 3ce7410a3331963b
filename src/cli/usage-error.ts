/**
 * An error in how genpipe was called (flags, config, recipe): printed plainly, exit code 2. A text of
 * several lines (a recipe's problems) is given as its lines: printError prints each on its own line,
 * while a newline or escape sequence inside a line (from a file name) is still shown escaped.
 */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly exitCode = 2;
  /** The text's lines (one, unless given several); the message is them joined with newlines. */
  readonly lines: readonly string[];
  /**
   * The command whose help the error points to (`genpipe run`) when it is about how its flags were
   * given, as commander's own errors do: `Run 'genpipe run --help' for usage.` is printed after it.
   */
  readonly helpOf: string | null;
  constructor(text: string | readonly string[], opts: { helpOf?: string } = {}) {
    const lines = typeof text === 'string' ? [text] : [...text];
    super(lines.join('\n'));
    this.lines = lines;
    this.helpOf = opts.helpOf ?? null;
  }
}
