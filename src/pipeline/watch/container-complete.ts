/**
 * Does a video file hold its whole container? ffprobe reads headers only, so a half-copied MP4 whose
 * `moov` comes first (faststart) or a half-copied WebM probes as if it were complete. The containers
 * declare their own length, though: ISO-BMFF (MP4, MOV, 3GP) is a chain of sized boxes that must end
 * exactly at the end of the file, a Matroska/WebM Segment states its size, a RIFF (AVI) file states its
 * size. Checking that costs a few small reads at box boundaries, never the media bytes.
 */
import { type FileHandle, open } from 'node:fs/promises';

/** `null` when the container looks whole (or its kind is not one checked here), else why not. */
export type ContainerVerdict = string | null;

const ISO_BMFF_MIMES = new Set(['video/mp4', 'video/quicktime', 'video/x-m4v', 'video/3gpp', 'video/3gpp2']);
const MATROSKA_MIMES = new Set(['video/webm', 'video/x-matroska', 'video/matroska']);
const RIFF_MIMES = new Set(['video/vnd.avi', 'video/x-msvideo', 'video/avi']);

/** Top-level boxes walked at most (a real file has a handful; this bounds damaged ones). */
const MAX_BOXES = 100_000;

async function readAt(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let n = 0;
  while (n < length) {
    const { bytesRead } = await fh.read(buf, n, length - n, position + n);
    if (bytesRead === 0) break;
    n += bytesRead;
  }
  return buf.subarray(0, n);
}

async function isoBmffVerdict(fh: FileHandle, fileSize: number): Promise<ContainerVerdict> {
  let off = 0;
  let sawMoov = false;
  for (let boxes = 0; off < fileSize; boxes++) {
    if (boxes >= MAX_BOXES) return null; // not plausibly a half-copied file: let ffprobe judge
    const head = await readAt(fh, off, 16);
    if (head.length < 8) return 'video is incomplete: the file ends inside a box header';
    const type = head.toString('latin1', 4, 8);
    let size = head.readUInt32BE(0);
    if (size === 1) {
      if (head.length < 16) return 'video is incomplete: the file ends inside a box header';
      size = Number(head.readBigUInt64BE(8));
    } else if (size === 0) {
      // The last box runs to the end of the file (a writer that never went back to fill sizes in).
      return sawMoov || type === 'moov' ? null : "video is incomplete: it has no 'moov' box yet";
    }
    if (size < 8) return `video is damaged: box '${type}' has an impossible size`;
    if (off + size > fileSize) {
      return `video is incomplete: its '${type}' box runs ${off + size - fileSize} bytes past the end of the file`;
    }
    if (type === 'moov') sawMoov = true;
    off += size;
  }
  return sawMoov ? null : "video is incomplete: it has no 'moov' box yet";
}

/** An EBML variable-length integer at `buf[at]`: its length and value (marker kept for IDs). */
function vint(
  buf: Buffer,
  at: number,
  keepMarker: boolean,
): { length: number; value: number; unknown: boolean } | null {
  const first = buf[at];
  if (first === undefined || first === 0) return null;
  const length = Math.clz32(first) - 23; // leading zeros within the byte, plus one
  if (at + length > buf.length) return null;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let i = 1; i < length; i++) {
    const b = buf[at + i]!;
    value = value * 256 + b;
    if (b !== 0xff) allOnes = false;
  }
  return { length, value, unknown: !keepMarker && allOnes };
}

const EBML_HEADER_ID = 0x1a45dfa3;
const SEGMENT_ID = 0x18538067;

async function matroskaVerdict(fh: FileHandle, fileSize: number): Promise<ContainerVerdict> {
  let off = 0;
  for (let elements = 0; elements < 8 && off < fileSize; elements++) {
    const head = await readAt(fh, off, 16);
    const id = vint(head, 0, true);
    const size = id ? vint(head, id.length, false) : null;
    if (!id || !size) return 'video is incomplete: the file ends inside an element header';
    const dataAt = off + id.length + size.length;
    if (id.value === SEGMENT_ID) {
      if (size.unknown) return null; // a live-written segment states no size: ffprobe has to judge
      return dataAt + size.value > fileSize
        ? `video is incomplete: its Segment runs ${dataAt + size.value - fileSize} bytes past the end of the file`
        : null;
    }
    if (size.unknown) return null;
    if (elements === 0 && id.value !== EBML_HEADER_ID) return null; // not Matroska after all
    off = dataAt + size.value;
  }
  return off >= fileSize ? 'video is incomplete: it has no Segment yet' : null;
}

async function riffVerdict(fh: FileHandle, fileSize: number): Promise<ContainerVerdict> {
  const head = await readAt(fh, 0, 8);
  if (head.length < 8 || head.toString('latin1', 0, 4) !== 'RIFF') return null;
  const declared = head.readUInt32LE(4) + 8;
  return declared > fileSize
    ? `video is incomplete: it declares ${declared} bytes but has ${fileSize}`
    : null;
}

/**
 * Checks that a video file of type `mime` holds its whole container (see the module comment); null when
 * it does or when the container is not one of ISO-BMFF, Matroska/WebM or RIFF.
 *
 * @param path a local file path
 * @param mime the sniffed MIME type
 * @example await containerVerdict('clip.mp4', 'video/mp4') // "video is incomplete: its 'mdat' box runs 5120 bytes past the end of the file"
 */
export async function containerVerdict(path: string, mime: string): Promise<ContainerVerdict> {
  const check = ISO_BMFF_MIMES.has(mime)
    ? isoBmffVerdict
    : MATROSKA_MIMES.has(mime)
      ? matroskaVerdict
      : RIFF_MIMES.has(mime)
        ? riffVerdict
        : null;
  if (check === null) return null;
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    return await check(fh, size);
  } finally {
    await fh.close();
  }
}
