/**
 * `--store <url>` (or GENPIPE_STORE): the PostgreSQL store in place of the SQLite journal, for run,
 * watch and status. The URL holds a password: it is shown only redacted (redactUrl), and every failure
 * to reach the store names it redacted. A store that cannot be reached or refuses the login is a
 * StoreConnectionError (exit 3, exit-codes.ts); a store whose out dir another runner holds, a usage error.
 */
import type { ClientOptions } from '../client/index.ts';
import type { QuotaKey } from '../pipeline/distributed/quota-ledger.ts';
import { storeSharedQuota } from '../pipeline/distributed/shared-db.ts';
import { JournalLockedError, keyFingerprint, type Store, serviceIdentity } from '../pipeline/index.ts';
import { openPostgresStore, PostgresStore } from '../pipeline/store/postgres/index.ts';
import { UsageError } from './usage-error.ts';

export { STORE_HELP, STORE_SCHEMES, storeUrlOf } from './store-url.ts';

/**
 * Opens the PostgreSQL store of `outDir` (its out-dir lock taken unless `lock: false`).
 *
 * @throws StoreConnectionError when it cannot be reached or used (its message names the URL redacted)
 * @throws UsageError when another runner holds the out dir
 */
export async function openRunStore(opts: {
  url: string;
  outDir: string;
  lock?: boolean;
}): Promise<PostgresStore> {
  try {
    return await openPostgresStore({ url: opts.url, outDir: opts.outDir, lock: opts.lock !== false });
  } catch (err) {
    if (err instanceof JournalLockedError) throw new UsageError(err.message);
    throw err;
  }
}

/**
 * The client options a runner on `store` takes for the service it talks to: with a PostgreSQL store,
 * the quota of the API key shared by every process on that store (one request window, one job-slot
 * count and one learned job ceiling per key; the key known to the database only by its fingerprint,
 * never itself), with each create's intent recorded in the transaction of its request slot; with the
 * SQLite journal, nothing (the client paces by what it learns alone).
 *
 * @param connection - the service's base URL and the API key (the key is hashed, never stored)
 * @example makeClient(flags, { ...clientOptionsForStore(store, config) })
 */
export function clientOptionsForStore(
  store: Store,
  connection: { apiKey: string; baseUrl: string },
): Partial<ClientOptions> {
  if (!(store instanceof PostgresStore)) return {};
  return { sharedQuota: storeSharedQuota(store, quotaKeyOf(connection)) };
}

/** The key of the quota shared by the clients of one API key at one service (the key only hashed). */
export function quotaKeyOf(connection: { apiKey: string; baseUrl: string }): QuotaKey {
  return { service: serviceIdentity(connection.baseUrl), keyFingerprint: keyFingerprint(connection.apiKey) };
}
