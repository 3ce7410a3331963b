/**
 * The one way every JSON document genpipe writes or prints a time (report.json, result.json, the
 * `--json` events, `status --json`): an ISO 8601 UTC string with milliseconds. Durations stay numbers
 * (`…_ms`).
 *
 * @example isoTime(0) // '1970-01-01T00:00:00.000Z'
 */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}
