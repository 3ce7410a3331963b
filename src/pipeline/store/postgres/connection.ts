/**
 * Connecting to the PostgreSQL store without ever showing its password: a store URL is shown redacted
 * (redactUrl) wherever it is named, and every error of the driver is turned into a StoreConnectionError
 * whose message names the redacted URL and holds no password, even where the driver's text would echo
 * one. Connections are pooled; BIGINT columns (ms since the epoch, ids) are read as numbers.
 */
import pg from 'pg';
import { MIN_SECRET_LENGTH, maskUrlPassword, urlPasswordSpan } from '../../../client/index.ts';

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

/** BIGINT (int8) as a number: ms since the epoch and ids stay far below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/** A schema name genpipe accepts (no quoting games): lower-case letters, digits, `_`. */
export function checkSchemaName(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`store schema "${schema}": use lower-case letters, digits and _ (at most 63)`);
  }
  return schema;
}

/** The connection settings of the store at `url` in `schema` (a pool's, or a single client's). */
export function clientConfig(url: string, schema: string): pg.ClientConfig {
  return {
    connectionString: url,
    options: `-c search_path=${checkSchemaName(schema)}`,
    types: TYPES,
    connectionTimeoutMillis: 10_000,
    keepAlive: true,
  };
}

/**
 * Runs `fn` on a client of `pool`, in one transaction unless `transaction: false` (committed when it
 * resolves, rolled back when not). The client listens for the 'error' of its connection while it is
 * out of the pool: pg-pool drops its own listener then, and a connection the server cut (PostgreSQL
 * shut down) would otherwise raise an 'error' event nobody hears, which ends the process. Such a client
 * is destroyed, not put back; the call fails with the query's own error.
 */
export async function withPoolClient<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  opts: { transaction?: boolean } = {},
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
  };
  client.on('error', onError);
  const tx = opts.transaction !== false;
  try {
    if (tx) await client.query('BEGIN');
    const out = await fn(client);
    if (tx) await client.query('COMMIT');
    return out;
  } catch (err) {
    if (tx && !broken) await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}

/** A connection or a transaction's client. */
export type Queryable = Pick<pg.ClientBase, 'query'>;

/** A pool of connections to the store (errors of idle connections are handed to `onError`). */
export function openPool(url: string, schema: string, onError: (err: StoreConnectionError) => void): pg.Pool {
  const pool = new pg.Pool({ ...clientConfig(url, schema), max: 4, idleTimeoutMillis: 10_000 });
  pool.on('error', (err) => onError(storeError(err, url, 'a store connection failed')));
  return pool;
}
