/**
 * Keeping secrets out of everything genpipe prints or writes: progress lines, --json events, result.json,
 * report.json and report.html all pass their texts through a redactor built from the secrets the runner
 * knows (API keys), which also masks anything shaped like an API key or a bearer token.
 */

/** What a secret is replaced with. */
export const REDACTED = '[redacted]';

/** Replaces secrets in a text. */
export type Redact = (text: string) => string;

/** Shortest known secret that is replaced verbatim (shorter strings would mask ordinary words). */
const MIN_SECRET_LENGTH = 6;

/** Anything shaped like an agents-surface API key (fixed prefix `svc-api-`) or a bearer credential. */
const SECRET_SHAPES: readonly [RegExp, string][] = [
  [/svc-api-[A-Za-z0-9._~+/=-]+/g, REDACTED],
  [/\b(Bearer)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${REDACTED}`],
];

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A redactor that replaces every occurrence of the given secrets (longest first), then anything shaped
 * like an API key (`svc-api-…`) or a `Bearer <token>` credential (8+ token characters), by `[redacted]`. Empty, missing and
 * very short secrets (under 6 characters) are ignored rather than masking ordinary text.
 *
 * @param secrets the secrets the runner knows (API keys, tokens); null/undefined entries are ignored
 * @example const redact = createRedactor([process.env.GENPIPE_API_KEY]); log(redact(message));
 */
export function createRedactor(secrets: Iterable<string | null | undefined> = []): Redact {
  const known = [...new Set([...secrets].filter((s): s is string => !!s && s.length >= MIN_SECRET_LENGTH))];
  known.sort((a, b) => b.length - a.length);
  const knownRe = known.length > 0 ? new RegExp(known.map(escapeRegExp).join('|'), 'g') : null;
  return (text: string): string => {
    let out = knownRe ? text.replace(knownRe, REDACTED) : text;
    for (const [re, by] of SECRET_SHAPES) out = out.replace(re, by);
    return out;
  };
}

/** The redactor with no known secrets: masks only key- and bearer-shaped strings. */
export const redactShapes: Redact = createRedactor();

/**
 * A deep copy of JSON-like data with every string (values and keys alike) passed through `redact`.
 *
 * @example JSON.stringify(redactDeep(event, redact))
 */
export function redactDeep<T>(value: T, redact: Redact): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redact(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === 'object' && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[redact(k)] = walk(x);
      return out;
    }
    return v;
  };
  return walk(value) as T;
}
