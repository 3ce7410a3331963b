/**
 * Who produces the results, as the journal keys them (part of every recipe hash, and the key of the
 * shared-reference uploads, the quota state and the job durations): the service's base URL without its
 * user and password and without a trailing slash. A URL's credentials are how genpipe signs in, like the
 * API key, not who answers: changing them redoes nothing, and they are never written to the journal.
 */

/**
 * The service identity of a base URL: no user or password, no trailing slash.
 *
 * @example serviceIdentity('http://alice:pw@127.0.0.1:4010/') // 'http://127.0.0.1:4010'
 */
export function serviceIdentity(baseUrl: string): string {
  let url = baseUrl;
  try {
    const u = new URL(baseUrl);
    if (u.username !== '' || u.password !== '') {
      u.username = '';
      u.password = '';
      url = u.toString();
    }
  } catch {
    // not a URL: taken as it is
  }
  return url.replace(/\/+$/, '');
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
