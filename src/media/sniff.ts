/**
 * Sniffing a file's real type from its first bytes with file-type, whatever its name or the
 * Content-Type it arrived with. Only the head of the file is read.
 */
import { fileTypeFromBuffer } from 'file-type';
import { MediaError } from './media-error.ts';
import { readStart } from './read-start.ts';

export type MediaKind = 'image' | 'video' | 'other';

export interface SniffResult {
  mime: string;
  ext: string;
  kind: MediaKind;
}

/** Bytes read from the start of a file to sniff it; enough for every container file-type knows. */
export const SNIFF_HEAD_BYTES = 64 * 1024;

/** Media whose MIME type file-type files under another top-level type than the kind it really is. */
const KIND_OVERRIDES: Readonly<Record<string, MediaKind>> = {
  'application/mxf': 'video',
  'application/vnd.ms-asf': 'video',
  'application/vnd.rn-realmedia': 'video',
  'image/mj2': 'video',
  'image/vnd.dwg': 'other',
};

/**
 * The kind of media a MIME type names: image/* → image, video/* → video, else other (with a few
 * containers file-type names under application/* counted as video).
 *
 * @example mediaKindOf('video/quicktime') // 'video'
 */
export function mediaKindOf(mime: string): MediaKind {
  const m = mime.toLowerCase();
  const override = KIND_OVERRIDES[m];
  if (override) return override;
  if (m.startsWith('image/')) return 'image';
  if (m.startsWith('video/')) return 'video';
  return 'other';
}

/**
 * The first {@link SNIFF_HEAD_BYTES} bytes of a regular file (all of a shorter one; empty for an empty
 * one), read with one open. Rejects with a MediaError (code `missing`) when the path is not a readable
 * regular file.
 *
 * @example const head = await readHead('upload.bin'); // Buffer of up to 64 KiB
 */
export async function readHead(path: string): Promise<Buffer> {
  const start = await readStart(path, SNIFF_HEAD_BYTES).catch(() => {
    throw new MediaError('missing', 'file not found or not readable');
  });
  if (!start.isFile) throw new MediaError('missing', 'not a regular file');
  return start.bytes;
}

/**
 * A TIFF (classic, either byte order) whose first IFD lies past the head: file-type reads the IFD to
 * tell TIFF-based raw formats apart and, not finding it, names nothing. libtiff writes a large image's
 * IFD after its pixels, so any TIFF over the head's size would read as unknown bytes. The header says
 * TIFF.
 */
function tiffPastHead(head: Uint8Array): SniffResult | null {
  if (head.length < 8) return null;
  const buf = Buffer.from(head.buffer, head.byteOffset, head.length);
  const le = buf.readUInt32BE(0) === 0x49492a00;
  if (!le && buf.readUInt32BE(0) !== 0x4d4d002a) return null;
  const ifd = le ? buf.readUInt32LE(4) : buf.readUInt32BE(4);
  return ifd >= head.length ? { mime: 'image/tiff', ext: 'tif', kind: 'image' } : null;
}

/** The PNG signature: file-type wants the first chunk's header after it too (16 bytes in all). */
const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/**
 * A file that holds a format's signature and ends soon after, too short for file-type to name: it is
 * that format, truncated (the check then says so), not unknown bytes.
 */
function signatureOnly(head: Uint8Array): SniffResult | null {
  if (head.length >= PNG_SIGNATURE.length && PNG_SIGNATURE.every((b, i) => head[i] === b)) {
    return { mime: 'image/png', ext: 'png', kind: 'image' };
  }
  return null;
}

/**
 * Sniffs the real type from a file's head (readHead); null when the type is not recognised (including
 * an empty head).
 *
 * @example await sniffHead(await readHead('a.png')) // { mime: 'image/png', ext: 'png', kind: 'image' }
 */
export async function sniffHead(head: Uint8Array): Promise<SniffResult | null> {
  if (head.length === 0) return null;
  const type = await fileTypeFromBuffer(head);
  if (!type) return tiffPastHead(head) ?? signatureOnly(head);
  return { mime: type.mime, ext: type.ext, kind: mediaKindOf(type.mime) };
}

/**
 * Sniffs the real type from the file's first {@link SNIFF_HEAD_BYTES} bytes; null when the type is not
 * recognised (including an empty file). Rejects with a MediaError (code `missing`) when the path is
 * not a readable regular file.
 *
 * @param path a local file path
 * @example const t = await sniffFile('upload.bin'); // { mime: 'image/png', ext: 'png', kind: 'image' }
 */
export async function sniffFile(path: string): Promise<SniffResult | null> {
  return sniffHead(await readHead(path));
}
