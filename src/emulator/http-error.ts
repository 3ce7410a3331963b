/** An error that becomes an HTTP response `{ detail }` with the given status and extra headers. */
export type RateLimitKind = 'rpm' | 'concurrency' | 'abuse';

export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
    /** For 429s: which limit answered, counted in /_emulator/stats. */
    readonly rateLimitKind?: RateLimitKind,
  ) {
    super(detail);
  }
}
