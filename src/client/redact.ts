/**
 * Keeping secrets (API keys, the legacy token, passwords) out of texts: the one redactor of genpipe.
 * The client scrubs the service's details with it (`redact`); the pipeline and the CLI pass everything
 * they print or write (progress lines, --json events, result.json, the reports, errors) through a
 * redactor built with `createRedactor`, which also masks anything shaped like an API key or a bearer
 * token, and the password of a URL.
 */

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

/**
 * Replaces secrets in a text. `exact`, when given, masks the known secrets only (no shapes): what
 * redactDeep uses for the user's own file names and paths.
 */
export type Redact = ((text: string) => string) & { exact?: (text: string) => string };

/** Settings of a redactor; the defaults are those of everything genpipe prints or writes. */
export interface RedactorOptions {
  /** Known secrets shorter than this are ignored (shorter strings would mask ordinary words). */
  minSecretLength?: number;
  /** Also mask anything shaped like an API key (`svc-api-…`), a `Bearer <token>` credential or a URL's password. */
  maskShapes?: boolean;
  /**
   * Texts left as they are although shaped like a key (the emulator's published default key); a
   * known secret is masked all the same.
   */
  keep?: readonly string[];
}

/**
 * The shortest secret masked by its value wherever it appears. A shorter one (a password `p`) would mask
 * ordinary letters of any text; it is masked only where it stands — a URL's password field, by position
 * (the URL shape below, and the store's `redactUrl`) — and is not looked for elsewhere.
 */
export const MIN_SECRET_LENGTH = 8;

/** Defaults of createRedactor, in one place. */
export const REDACTOR_DEFAULTS = { minSecretLength: MIN_SECRET_LENGTH, maskShapes: true } as const;

/**
 * Anything shaped like an agents-surface API key (fixed prefix `svc-api-`), a bearer credential, the
 * password of a URL (`https://user:password@host`: a service or store URL may carry one), or a URL's
 * query value named as a credential (`?token=`).
 *
 * A key shape is a word of its own: not a part of a path (after or before a `/` or `\`), not a name
 * with an extension (`svc-api-notes.txt`), so a file named like a key keeps its name; a full stop that
 * ends a sentence is not an extension.
 *
 * Every pattern needs one of the texts mayHoldShape looks for; a new one must need one too (or be
 * added there), since a text holding none of them skips the patterns.
 */
const SECRET_SHAPES: readonly [RegExp, string][] = [
  // A URL's query value named as a credential (`?token=…`, `&api_key=…`): a rule's media_url template
  // may carry one, and the URL it makes is recorded. Short-lived signatures (`sig=`) are left alone.
  [/([?&](?:token|access_token|auth|api_key|apikey|key|password|secret)=)[^&#\s'"]+/gi, `$1${REDACTED}`],
  [/(?<![A-Za-z0-9._/\\-])svc-api-[A-Za-z0-9_~+=-]+(?![A-Za-z0-9_~+=/\\-]|\.[A-Za-z0-9])/g, REDACTED],
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
  // `scheme://user:password@`: the password may hold spaces (not a line break, `/` or `@`); a port
  // (`http://host:4010 refused … bob@x`) is not one.
  [/\b([a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:)(?!\d+(?:[^\w@]|$))(?=\S)[^/@\r\n]+@/gi, `$1${REDACTED}@`],
  // `user:password@host` without a scheme (a URL given without one), as a word of its own: the host
  // is followed by a port, a path, a quote, a space or the end (not `a:b@c.png: failed`).
  [
    /(?<![^\s'"(<[=,;])([A-Za-z0-9._~%!$&*+-]+:)(?!\d+(?:[^\w@]|$))[^\s/@'"]+@(?=(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d|[/\s'",)\]]|$))/g,
    `$1${REDACTED}@`,
  ],
];

/**
 * Where the password of the URL `url` stands (from just after its userinfo's first `:` to the `@`), found
 * by position rather than by parsing, so that a URL that does not parse — given without a scheme
 * (`alice:pw@host:4010`), with a space or an unencoded `/`, `#`, `?` in its password — is read as well:
 * the userinfo is what stands between the scheme's `//` (or the start) and the last `@`, and holds a
 * password when it has a `:` before any `/` (and not a port before it). Null when there is none.
 *
 * @example urlPasswordSpan('http://alice:pw@h') // { start: 13, end: 15 }
 */
export function urlPasswordSpan(url: string): { start: number; end: number } | null {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  const from = scheme ? scheme[0].length : 0;
  const at = url.lastIndexOf('@');
  if (at < from) return null;
  const userinfo = url.slice(from, at);
  const colon = userinfo.indexOf(':');
  if (colon < 0) return null;
  const slash = userinfo.indexOf('/');
  // A `/` before the `:`, or after a port (`host:4010/a@b`): the `@` is in the path, not after a userinfo.
  if (slash >= 0 && (slash < colon || /^\d*$/.test(userinfo.slice(colon + 1, slash)))) return null;
  return { start: from + colon + 1, end: at };
}

/** The schemes whose authority a `\` ends as a `/` does (WHATWG URL's special schemes). */
const SPECIAL_SCHEME = /^(https?|wss?|ftp|file):/i;

type Span = { start: number; end: number };

/**
 * Where the password of `url` stands as the WHATWG URL parser reads it — the reading of fetch and of
 * pg alike: within the authority (from the scheme's `//` to the first `/`, `?` or `#`), up to its last
 * `@`, after the first `:`. Undefined when the URL does not parse (or has no authority); null when it
 * holds no password.
 */
function parsedPasswordSpan(url: string): Span | null | undefined {
  try {
    new URL(url);
  } catch {
    return undefined;
  }
  // A special scheme's authority follows any run of slashes; another's, `//` (else it has none, and
  // the text is read by position as a URL given without a scheme).
  const special = SPECIAL_SCHEME.test(url);
  const scheme = (special ? /^[a-z]+:[/\\]*/i : /^[a-z][a-z0-9+.-]*:\/\//i).exec(url);
  if (!scheme) return undefined;
  const from = scheme[0].length;
  const rest = url.slice(from);
  const end = rest.search(special ? /[/?#\\]/ : /[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at < 0 || colon < 0 || colon > at) return null;
  return { start: from + colon + 1, end: from + at };
}

function sameSpan(a: Span | null, b: Span | null): boolean {
  return a === b || (a !== null && b !== null && a.start === b.start && a.end === b.end);
}

/**
 * Why a URL that may hold a user and password (a base URL, a store URL) cannot be used as written, or
 * null: one that a raw `#`, `?`, `/` or an extra `@` splits — where the URL parser (fetch, pg) finds
 * another password and host than the text seems to hold (`postgres://bob:pa@SECRET#x@db/jobs` reaches
 * the host `SECRET`) — or that has a `#` fragment at all. The reason shows no part of the URL. A URL
 * that does not parse is left to the caller's own check.
 */
export function credentialUrlProblem(url: string): string | null {
  const parsed = parsedPasswordSpan(url);
  if (parsed === undefined) return null;
  const userinfo = parsed ? url.slice(0, parsed.end).replace(/^[a-z][a-z0-9+.-]*:\/\//i, '') : '';
  if (!url.includes('#') && !userinfo.includes('@') && sameSpan(parsed, urlPasswordSpan(url))) return null;
  return (
    "has a raw '#', '?', '/' or an extra '@' in its user name or password, or a #fragment, so it does not " +
    'read as the host and password it seems to (not shown: part of the password may stand anywhere in it); ' +
    'percent-encode those characters in the user name and password (@ as %40, # as %23, ? as %3F, ' +
    '/ as %2F, : as %3A, % as %25) and give no #fragment'
  );
}

/**
 * The URL `url` as it may be shown: its password replaced by `mask`, the rest as written — for a URL
 * given to genpipe (a base URL, a store URL), whether or not it parses. A URL that parses is masked
 * where the parser (fetch, pg) finds its password; one that does not, where urlPasswordSpan finds it.
 * When the two readings differ (a raw `#`, `/`, `?` or `@` in the password: credentialUrlProblem), all
 * that follows the password's start is masked, so that no host is shown other than the one used.
 *
 * @example maskUrlPassword('alice:Hunter 2@127.0.0.1:4010') // 'alice:[redacted]@127.0.0.1:4010'
 */
export function maskUrlPassword(url: string, mask: string = REDACTED): string {
  const naive = urlPasswordSpan(url);
  const parsed = parsedPasswordSpan(url);
  if (parsed === undefined || sameSpan(parsed, naive)) {
    return naive ? `${url.slice(0, naive.start)}${mask}${url.slice(naive.end)}` : url;
  }
  const start = Math.min(naive?.start ?? url.length, parsed?.start ?? url.length);
  return `${url.slice(0, start)}${mask}`;
}

/**
 * False when no SECRET_SHAPES pattern can match `text`: each needs an `=`, an `@`, `svc-api-` or
 * `bearer` (any case). Most texts (states, names, numbers) hold none, and skip the patterns.
 */
export function mayHoldShape(text: string): boolean {
  return text.includes('=') || text.includes('@') || text.includes('svc-api-') || /bearer/i.test(text);
}

/** Stands for a kept text while the shapes are masked (no shape matches it). */
const KEEP_MARK = (i: number) => `\u0000genpipe-kept-${i}\u0000`;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A redactor that replaces every occurrence of the given secrets (longest first), then — unless
 * `maskShapes` is false — anything shaped like an API key (`svc-api-…`), a `Bearer <token>` credential
 * (8+ token characters) or the password of a URL (`https://user:[redacted]@host`), by `[redacted]`. Empty, missing and very short secrets (under
 * `minSecretLength`, default MIN_SECRET_LENGTH) are ignored rather than masking ordinary text.
 *
 * @param secrets the secrets known (API keys, tokens); null/undefined entries are ignored
 * @param options minSecretLength, maskShapes, keep
 * @example const redact = createRedactor([process.env.GENPIPE_API_KEY]); log(redact(message));
 */
export function createRedactor(
  secrets: Iterable<string | null | undefined> = [],
  options: RedactorOptions = {},
): Redact {
  const minLength = options.minSecretLength ?? REDACTOR_DEFAULTS.minSecretLength;
  const maskShapes = options.maskShapes ?? REDACTOR_DEFAULTS.maskShapes;
  const known = [...new Set([...secrets].filter((s): s is string => !!s && s.length >= minLength))];
  known.sort((a, b) => b.length - a.length);
  const knownRe = known.length > 0 ? new RegExp(known.map(escapeRegExp).join('|'), 'g') : null;
  const keep = maskShapes ? (options.keep ?? []).filter((k) => k !== '' && !known.includes(k)) : [];
  const exact = (text: string): string => (knownRe ? text.replace(knownRe, REDACTED) : text);
  const redactor = (text: string): string => {
    let out = exact(text);
    if (!maskShapes || !mayHoldShape(out)) return out;
    keep.forEach((k, i) => {
      out = out.split(k).join(KEEP_MARK(i));
    });
    for (const [re, by] of SECRET_SHAPES) out = out.replace(re, by);
    keep.forEach((k, i) => {
      out = out.split(KEEP_MARK(i)).join(k);
    });
    return out;
  };
  return Object.assign(redactor, { exact });
}

/** The redactor with no known secrets: masks only key- and bearer-shaped strings. */
export const redactShapes: Redact = createRedactor();

/**
 * Replaces every occurrence of a secret in a text with `[redacted]` (the client's scrubbing of the
 * service's details: the known secrets only, not every key-shaped text).
 *
 * @param text - any text: a detail from the service, a message
 * @param secrets - the values to remove (values shorter than MIN_SECRET_LENGTH are ignored)
 * @example redact("host 'svc-api-xyz.example'", ['svc-api-xyz']) // "host '[redacted].example'"
 */
export function redact(text: string, secrets: readonly string[]): string {
  return createRedactor(secrets, { maskShapes: false })(text);
}

/**
 * The members that hold the user's own file names and paths (an input, its out folder, its outputs):
 * only the known secrets are masked in them, never a name for its shape.
 */
const NAME_MEMBERS: ReadonlySet<string> = new Set([
  'input',
  'place',
  'outputs',
  'output',
  'composite',
  'result',
  'path',
  'file',
  'files',
  'thumb',
]);

/**
 * A deep copy of JSON-like data with every string (values and keys alike) passed through `redact`;
 * the strings under a name member (`input`, `place`, `outputs`, …) through `redact.exact` when the
 * redactor has it (the known secrets only: a file named like a key keeps its name).
 *
 * @example JSON.stringify(redactDeep(event, redact))
 */
export function redactDeep<T>(value: T, redact: Redact): T {
  const names = redact.exact ?? redact;
  const walk = (v: unknown, r: (text: string) => string): unknown => {
    if (typeof v === 'string') return r(v);
    if (Array.isArray(v)) return v.map((x) => walk(x, r));
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[redact(k)] = walk(x, NAME_MEMBERS.has(k) ? names : r);
      return out;
    }
    return v;
  };
  return walk(value, redact) as T;
}
