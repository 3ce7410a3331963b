/**
 * Who produces the results, as the journal keys them (part of every recipe hash, and the key of the
 * shared-reference uploads, the quota state and the job durations): the service's base URL without its
 * user and password and without a trailing slash. A URL's user and password are not who answers (nor
 * are they sent: client/request-url.ts): changing them redoes nothing, and they are never written to the
 * journal.
 */
import { withoutUserinfo } from '../../client/index.ts';

/**
 * The service identity of a base URL: no user or password, no trailing slash.
 *
 * @example serviceIdentity('http://alice:pw@127.0.0.1:4010/') // 'http://127.0.0.1:4010'
 */
export function serviceIdentity(baseUrl: string): string {
  return withoutUserinfo(baseUrl).replace(/\/+$/, '');
}

/**
 * The identities genpipe gave the same base URL before it left out the credentials (the URL as given,
 * without a trailing slash), when they differ from serviceIdentity: a journal row keyed with one of them
 * is this service's work. Kept in memory only.
 *
 * @example formerServiceIdentities('http://alice:pw@h:1/') // ['http://alice:pw@h:1']
 */
export function formerServiceIdentities(baseUrl: string): string[] {
  const former = baseUrl.replace(/\/+$/, '');
  return former === serviceIdentity(baseUrl) ? [] : [former];
}
