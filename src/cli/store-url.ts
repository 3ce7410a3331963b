/**
 * `--store <url>` (or GENPIPE_STORE) as a command line gives it: its help, and the URL checked
 * (storeUrlOf). Light — no driver — so that a command's definition and its usage errors load no
 * store; store-option.ts opens the store.
 */
import { credentialUrlProblem } from '../client/redact.ts';
import { RUN_FLAGS } from '../pipeline/run-flags.ts';
import { redactUrl } from '../pipeline/store/postgres/store-errors.ts';
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
