/**
 * What the store's errors and URLs may show: a store URL redacted (redactUrl), and every failure of
 * the driver as a StoreConnectionError whose message names the redacted URL and holds no password.
 * Apart from connection.ts so that printing an error does not load the driver.
 */
import { MIN_SECRET_LENGTH, maskUrlPassword, urlPasswordSpan } from '../../../client/redact.ts';

/** A failure to reach or use the store; its message never holds the password. */
export class StoreConnectionError extends Error {
  override name = 'StoreConnectionError';
  /** The SQLSTATE (e.g. 28P01: wrong password) or the system's code (ECONNREFUSED), when known. */
  readonly code: string | undefined;
  constructor(message: string, code: string | undefined) {
    super(message);
    this.code = code;
  }
}

const HIDDEN = '***';

/**
 * The URL as it may be shown: its password (in the authority or a `password` parameter, of a URL or
 * of a `key=value` connection string) replaced by ***. The authority's is found by position
 * (maskUrlPassword), so a URL that does not parse — no scheme, an unencoded `/` or a space in the
 * password — is masked too; the rest reads as written.
 *
 * @example redactUrl('postgres://genpipe:s3cret@db:5432/jobs') // 'postgres://genpipe:***@db:5432/jobs'
 */
export function redactUrl(url: string): string {
  const masked = maskUrlPassword(url, HIDDEN);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) return masked.replace(/([?&]password=)[^&#]*/gi, `$1${HIDDEN}`);
  return masked.replace(/(password\s*=\s*)('[^']*'|\S+)/gi, `$1${HIDDEN}`);
}

/** The password a URL holds, as written and decoded (what may not appear in any text), or none. */
export function secretsOf(url: string): string[] {
  const found: string[] = [];
  const span = urlPasswordSpan(url);
  if (span) found.push(url.slice(span.start, span.end), decoded(url.slice(span.start, span.end)));
  try {
    const parsed = new URL(url);
    if (parsed.password) found.push(parsed.password, decoded(parsed.password));
    for (const [key, value] of parsed.searchParams) if (key.toLowerCase() === 'password') found.push(value);
  } catch {
    for (const m of url.matchAll(/password\s*=\s*('([^']*)'|\S+)/gi)) found.push(m[2] ?? m[1] ?? '');
  }
  return [...new Set(found.filter((s) => s.length > 0))];
}

/** A percent-encoded text decoded, or as it is when it does not decode. */
function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * `text` with every occurrence of the URL's password replaced by ***, when it is long enough to be
 * told from ordinary words (MIN_SECRET_LENGTH); a shorter one is hidden only where it stands, in the
 * URL (redactUrl).
 */
export function scrub(text: string, url: string): string {
  let out = text;
  for (const secret of secretsOf(url)) {
    if (secret.length >= MIN_SECRET_LENGTH) out = out.split(secret).join(HIDDEN);
  }
  return out;
}

/** The plain words of a driver error (an AggregateError of several addresses included). */
export function messageOf(err: unknown): string {
  if (err instanceof AggregateError && err.errors.length > 0) {
    return [...new Set(err.errors.map((e: unknown) => messageOf(e)))].join('; ');
  }
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

/**
 * The StoreConnectionError for `err` met while doing `what` with the store at `url`: the redacted URL
 * and the driver's words, scrubbed of the password. Nothing of the original error (which may hold the
 * connection's parameters) is kept.
 */
export function storeError(err: unknown, url: string, what: string): StoreConnectionError {
  if (err instanceof StoreConnectionError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  return new StoreConnectionError(
    scrub(`${what} (store ${redactUrl(url)}): ${messageOf(err)}`, url),
    typeof code === 'string' ? code : undefined,
  );
}

/**
 * The StoreConnectionError for a store that could not be opened at `url`: "cannot connect to the store
 * at <redacted url>: <the driver's words>", scrubbed of the password.
 */
export function connectError(err: unknown, url: string): StoreConnectionError {
  if (err instanceof StoreConnectionError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  return new StoreConnectionError(
    scrub(`cannot connect to the store at ${redactUrl(url)}: ${messageOf(err)}`, url),
    typeof code === 'string' ? code : undefined,
  );
}
