/**
 * The URL a request is sent to, built in one place for every request genpipe makes: the client's calls
 * of both surfaces and of storage, and a dry run's question for an emulator's costs.
 *
 * A URL's user and password are never sent. The service authenticates with the API key (the legacy
 * surface with its token) in `Authorization: Bearer`, so a `user:password@` written into a base URL has
 * nowhere to go: undici's requests left it out, fetch refused such a URL outright. It is taken out
 * here, for every request alike; a URL is shown with its password masked (redact.ts, maskUrlPassword).
 */

/**
 * `url` with the query parameters set and without its user and password.
 *
 * @throws TypeError when `url` is not an absolute URL
 * @example requestUrl('http://alice:pw@127.0.0.1:4010/v1/files', { limit: 5 }) // 'http://127.0.0.1:4010/v1/files?limit=5'
 */
export function requestUrl(
  url: string,
  query: Record<string, string | number | undefined | null> = {},
): string {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
  }
  return u.toString();
}

/**
 * A base URL without its user and password, as written otherwise (no slash added); a text that does not
 * parse as a URL, as it is.
 *
 * @example withoutUserinfo('http://alice:pw@127.0.0.1:4010') // 'http://127.0.0.1:4010'
 */
export function withoutUserinfo(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  if (u.username === '' && u.password === '') return url;
  u.username = '';
  u.password = '';
  const out = u.toString();
  // URL adds a `/` to a bare authority; the text keeps the form it was given in.
  return out.endsWith('/') && !url.endsWith('/') && u.pathname === '/' ? out.slice(0, -1) : out;
}
