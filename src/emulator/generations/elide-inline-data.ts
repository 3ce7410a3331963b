/** A copy of a request body for the record, with inline base64 media replaced by a short note. */

const MAX_DEPTH = 32;

/**
 * Deep-copies JSON, replacing every string `data` field (inline base64 of an ImageRef) by
 * `<N base64 characters elided>`, so records never hold media bytes.
 */
export function elideInlineData(value: unknown, depth = 0): unknown {
  if (depth > MAX_DEPTH) return null;
  if (Array.isArray(value)) return value.map((v) => elideInlineData(v, depth + 1));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] =
        k === 'data' && typeof v === 'string'
          ? `<${v.length} base64 characters elided>`
          : elideInlineData(v, depth + 1);
    }
    return out;
  }
  return value;
}
