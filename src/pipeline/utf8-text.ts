/**
 * Text files genpipe reads (a recipe, a sidecar) must be UTF-8: this decodes one, and says where it is
 * not (the first byte that begins no valid sequence), so the error names the byte to look for.
 */
import { isUtf8 } from 'node:buffer';

const STRICT = new TextDecoder('utf-8', { fatal: true });

/** Bytes a UTF-8 sequence led by `lead` takes (1 for a byte that cannot lead one). */
export function sequenceLength(lead: number): number {
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  if (lead >= 0xe0) return lead <= 0xef ? 3 : 1;
  if (lead >= 0xc2) return 2;
  return 1;
}

/**
 * Length of the valid UTF-8 sequence at `i` of `bytes`, or 0 when the byte there begins none.
 *
 * @example validSequenceAt(Buffer.from('é'), 0) // 2
 */
export function validSequenceAt(bytes: Uint8Array, i: number): number {
  const lead = bytes[i] as number;
  if (lead < 0x80) return 1;
  const n = sequenceLength(lead);
  if (n === 1 || i + n > bytes.length) return 0;
  try {
    STRICT.decode(bytes.subarray(i, i + n));
    return n;
  } catch {
    return 0;
  }
}

/**
 * Offset of the first byte of `bytes` that is not part of a valid UTF-8 sequence, or -1 when all are.
 *
 * @example firstInvalidUtf8(Buffer.from([0x63, 0x61, 0x66, 0xe9])) // 3
 */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  if (isUtf8(bytes)) return -1;
  let i = 0;
  while (i < bytes.length) {
    const n = validSequenceAt(bytes, i);
    if (n === 0) return i;
    i += n;
  }
  return -1;
}

/** Why a text file is refused: its first invalid byte and where it is, and what to do. */
export const NOT_UTF8_TEXT = (byte: number, offset: number): string =>
  `not valid UTF-8 text (byte 0x${byte.toString(16).toUpperCase().padStart(2, '0')} at offset ${offset}); save it as UTF-8`;

/**
 * The text of a file's bytes (a leading byte-order mark dropped, as TextDecoder does), or why they
 * are not UTF-8 (NOT_UTF8_TEXT).
 *
 * @example utf8Text(Buffer.from([0x61, 0xe9])) // { ok: false, reason: 'not valid UTF-8 text (byte 0xE9 at offset 1); save it as UTF-8' }
 */
export function utf8Text(bytes: Uint8Array): { ok: true; text: string } | { ok: false; reason: string } {
  const at = firstInvalidUtf8(bytes);
  if (at === -1) return { ok: true, text: STRICT.decode(bytes) };
  return { ok: false, reason: NOT_UTF8_TEXT(bytes[at] as number, at) };
}
