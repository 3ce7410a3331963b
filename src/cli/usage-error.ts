/** An error in how genpipe was called (flags, config, recipe): printed plainly, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
  readonly exitCode = 2;
}
