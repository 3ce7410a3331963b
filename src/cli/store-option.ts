/**
 * `--store <url>` (or GENPIPE_STORE): the PostgreSQL store in place of the SQLite journal, for run,
 * watch and status. The URL holds a password: it is shown only redacted (redactUrl), and every failure
 * to reach the store names it redacted. A store that cannot be reached or refuses the login is a
 * StoreConnectionError (exit 3, exit-codes.ts); a store whose out dir another runner holds, a usage error.
 */
import { type ClientOptions, credentialUrlProblem } from '../client/index.ts';
import type { QuotaKey } from '../pipeline/distributed/quota-ledger.ts';
import { storeSharedQuota } from '../pipeline/distributed/shared-db.ts';
import {
  JournalLockedError,
  keyFingerprint,
  RUN_FLAGS,
  type Store,
  serviceIdentity,
} from '../pipeline/index.ts';
import { openPostgresStore, PostgresStore, redactUrl } from '../pipeline/store/postgres/index.ts';
import { ENV } from './service-config.ts';
import { UsageError } from './usage-error.ts';

/** The schemes a store URL may have. */
export const STORE_SCHEMES = ['postgres:', 'postgresql:'] as const;

/** The help of `--store`. */
export const STORE_HELP = `a PostgreSQL database to keep the journal in instead of the journal file, postgres://user:password@host:port/db (default: $${ENV.store}); the password is never shown`;

/**
 * The store URL of a command from `--store`, then GENPIPE_STORE, or null for the SQLite journal.
 *
 * @throws UsageError with --journal too, or for a URL that is not postgres:// or postgresql://
 */
export function storeUrlOf(
  flags: { store?: string; journal?: string },
  env: NodeJS.ProcessEnv = process.env,
): string | null {
  const fromFlag = flags.store?.trim() || undefined;
  const url = fromFlag ?? (env[ENV.store]?.trim() || undefined);
  if (url === undefined) return null;
  const given = fromFlag !== undefined ? '--store' : ENV.store;
  if (flags.journal !== undefined) {
    throw new UsageError(
      `${RUN_FLAGS.journalFlag} and ${given} both say where the journal is: give one (${RUN_FLAGS.journalFlag} <path> for a journal file, ${given} for a PostgreSQL store)`,
    );
  }
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    // A password with @ : / # ? % in it breaks the URL unless it is percent-encoded: say so.
    const scheme = /^(postgres|postgresql):\/\//.test(url);
    throw new UsageError(
      `${given} ${redactUrl(url)}: not a store URL genpipe can read` +
        (scheme
          ? '; characters such as @ : / # ? % in the user name or password must be percent-encoded (@ as %40, # as %23, / as %2F, % as %25)'
          : '; use a postgres:// or postgresql:// URL (user, password, host, port and database)'),
    );
  }
  const split = credentialUrlProblem(url);
  if (split !== null) throw new UsageError(`${given}: the URL ${split}`);
  if (!(STORE_SCHEMES as readonly string[]).includes(protocol)) {
    throw new UsageError(
      `${given} ${redactUrl(url)}: not a store URL genpipe knows; use a postgres:// or postgresql:// URL (user, password, host, port and database)`,
    );
  }
  return url;
}

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
