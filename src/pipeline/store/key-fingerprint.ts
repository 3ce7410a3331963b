/**
 * The fingerprint of an API key: what the store keys shared quota state by. A hash, so the key itself
 * is never written anywhere; two clients of one key get the same fingerprint.
 */
import { createHash } from 'node:crypto';

/**
 * The fingerprint of `apiKey`: the first 32 hex digits of sha256("genpipe-quota\0" + key).
 *
 * @example keyFingerprint('sk-…') // '9f2c…' (32 hex digits)
 */
export function keyFingerprint(apiKey: string): string {
  return createHash('sha256').update(`genpipe-quota\0${apiKey}`).digest('hex').slice(0, 32);
}
