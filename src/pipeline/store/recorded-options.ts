/**
 * A batch's options as a store records them (and `status` shows them): without a credential. A store
 * keeps them for the record, in a journal file or a database others may read, so a credential is
 * taken out before anything is written — not masked when shown — and again when rows written by an
 * earlier genpipe are read:
 * - a member named like a credential (`apiKey`, `legacyToken`, any `…key`, `…token`, `…password`,
 *   `…secret`) is left out;
 * - a URL (`--base-url http://alice:pw@host`, a store's `postgres://u:pw@db/x`) loses its password,
 *   in its authority or as a `password` parameter.
 */

const CREDENTIAL_NAME = /(?:key|token|password|secret)$/i;

/**
 * `text` without the password a URL in it holds; any other text as it is.
 *
 * @example urlWithoutPassword('http://alice:pw@127.0.0.1:4010') // 'http://alice@127.0.0.1:4010'
 */
export function urlWithoutPassword(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return text;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    // Not a URL, but shaped like one: whatever stands between `:` and `@` in its authority goes.
    return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^\s/@:]*):[^\s/@]*@/i, '$1@');
  }
  const params = [...u.searchParams.keys()].filter((k) => k.toLowerCase() === 'password');
  if (u.password === '' && params.length === 0) return text;
  u.password = '';
  for (const k of params) u.searchParams.delete(k);
  const out = u.toString();
  // URL adds a `/` to a bare authority; the text keeps the form it was given in.
  return out.endsWith('/') && !text.endsWith('/') && u.pathname === '/' ? out.slice(0, -1) : out;
}

/**
 * The options without credentials (see the module comment), deeply.
 *
 * @example recordedOptions({ apiKey: 'svc-api-…', baseUrl: 'http://a:pw@h' }) // { baseUrl: 'http://a@h' }
 */
export function recordedOptions(options: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return clean(options) as Record<string, unknown>;
}

function clean(value: unknown): unknown {
  if (typeof value === 'string') return urlWithoutPassword(value);
  if (Array.isArray(value)) return value.map(clean);
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (!CREDENTIAL_NAME.test(k)) out[k] = clean(v);
    return out;
  }
  return value;
}
