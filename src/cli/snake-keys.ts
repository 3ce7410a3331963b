/**
 * Keys written the way every JSON document of genpipe writes them, snake_case: for what holds
 * camelCase names in the process (a command's flags as commander names them, an error's fields).
 */

/**
 * A camelCase name in snake_case; a name without capitals as it is.
 *
 * @example snakeCase('retryAfterMs') // 'retry_after_ms'
 */
export function snakeCase(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * The object with its own keys in snake_case (not deeply: the values are kept as they are).
 *
 * @example snakeKeys({ requestId: 'r', status: 404 }) // { request_id: 'r', status: 404 }
 */
export function snakeKeys(value: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [snakeCase(k), v]));
}
