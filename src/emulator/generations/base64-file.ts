/** Decoding inline base64 media to a file in chunks, without a second whole copy in memory. */
import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Characters decoded per chunk; a multiple of 4 so that chunks decode independently. */
const CHUNK_CHARS = 4 * 64 * 1024;
const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Whether `data` is standard base64 (RFC 4648 alphabet; whitespace ignored; padding optional but,
 * when present, correct). Empty data is not valid.
 */
export function isValidBase64(data: string): boolean {
  const s = /\s/.test(data) ? data.replace(/\s+/g, '') : data;
  if (s.length === 0 || !BASE64_RE.test(s)) return false;
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  if (pad > 0) return s.length % 4 === 0 && s.length > pad;
  return s.length % 4 !== 1;
}

/**
 * Decodes base64 `data` to `destPath` chunk by chunk.
 * @returns the number of bytes written, or null when `data` is not valid base64 (nothing written)
 */
export async function decodeBase64ToFile(data: string, destPath: string): Promise<number | null> {
  if (!isValidBase64(data)) return null;
  const s = /\s/.test(data) ? data.replace(/\s+/g, '') : data;
  let bytes = 0;
  function* chunks(): Generator<Buffer> {
    for (let i = 0; i < s.length; i += CHUNK_CHARS) {
      const buf = Buffer.from(s.slice(i, i + CHUNK_CHARS), 'base64');
      bytes += buf.length;
      yield buf;
    }
  }
  await pipeline(Readable.from(chunks()), createWriteStream(destPath));
  return bytes;
}
