/** The single-range subset of HTTP Range requests (RFC 9110 §14), enough to resume a download. */

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

/**
 * Reads a `Range` header against an object of `size` bytes.
 * - `bytes=a-b`, `bytes=a-` and `bytes=-n` (the last n bytes) give a range, clipped to the object;
 * - a range starting at or past the end (or `bytes=-0`) gives 'unsatisfiable' (answer 416);
 * - no header, another unit, several ranges or bad syntax give null: the header is ignored and the
 *   whole object is sent with 200, as RFC 9110 allows.
 * @example parseRange('bytes=0-99', 1000) // { start: 0, end: 99 }
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | null {
  if (header === undefined) return null;
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!m) return null;
  const [a, b] = [m[1]!, m[2]!];
  if (a === '' && b === '') return null;
  if (a === '') {
    const n = Number(b);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(a);
  if (b !== '' && Number(b) < start) return null;
  if (start >= size) return 'unsatisfiable';
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  return { start, end };
}
