/**
 * Connecting to the PostgreSQL store without ever showing its password: a store URL is shown redacted
 * (redactUrl) wherever it is named, and every error of the driver is turned into a StoreConnectionError
 * whose message names the redacted URL and holds no password, even where the driver's text would echo
 * one (store-errors.ts). Connections are pooled; BIGINT columns (ms since the epoch, ids) are read as
 * numbers.
 */
import pg from 'pg';
import { type StoreConnectionError, storeError } from './store-errors.ts';

export {
  connectError,
  messageOf,
  redactUrl,
  StoreConnectionError,
  scrub,
  secretsOf,
  storeError,
} from './store-errors.ts';

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
