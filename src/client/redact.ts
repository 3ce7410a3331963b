/** Scrubbing secrets (the API key, the legacy token) out of texts that may echo them. */

/**
 * Replaces every occurrence of a secret in a text with `[redacted]`.
 *
 * @param text - any text: a detail from the service, a message
 * @param secrets - the values to remove (values shorter than 4 characters are ignored)
 * @example redact("host 'svc-api-x.example'", ['svc-api-x']) // "host '[redacted].example'"
 */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}
