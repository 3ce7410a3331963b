/**
 * MIME sniffing of the first bytes of media, with the `file-type` package (the client imports no media
 * code of ours). Only what an upload or a base64 resend needs: the type, and whether it is an image or
 * a video.
 */
import { open } from 'node:fs/promises';
import { fileTypeFromBuffer } from 'file-type';

/** Bytes read from the head of a file to sniff it (file-type needs at most this many). */
export const SNIFF_BYTES = 4100;

/**
 * The MIME type of some leading bytes, or null when unrecognised.
 * @example await sniffBytes(pngHead) // 'image/png'
 */
export async function sniffBytes(head: Uint8Array): Promise<string | null> {
  const found = await fileTypeFromBuffer(head);
  return found?.mime ?? null;
}

/** The MIME type of a file from its first bytes, or null when unrecognised. */
export async function sniffPath(path: string): Promise<string | null> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(SNIFF_BYTES);
    const { bytesRead } = await handle.read(head, 0, SNIFF_BYTES, 0);
    return sniffBytes(head.subarray(0, bytesRead));
  } finally {
    await handle.close();
  }
}

/** `image`, `video` or null for a MIME type. */
export function mediaKind(mime: string | null | undefined): 'image' | 'video' | null {
  if (!mime) return null;
  const m = mime.toLowerCase();
  if (m.startsWith('image/')) return 'image';
  if (m.startsWith('video/')) return 'video';
  return null;
}
