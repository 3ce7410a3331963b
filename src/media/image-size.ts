/**
 * The size an image's header claims, read from the file's own structure, without a decoder: a file
 * whose header claims 60000 x 60000 px is known to be that large before anything tries to decode it
 * (sharp's header read itself refuses sizes past its pixel limit, and libwebp and libheif refuse theirs
 * with their own words). Read where the structure points, a few small reads; never the whole file.
 *
 * - PNG: the IHDR chunk;
 * - JPEG: the first SOFn segment (any of the frame types), the segments before it skipped by length;
 * - GIF: the logical screen;
 * - WebP: the VP8 frame header (lossy), the VP8L header (lossless) or the VP8X canvas (extended);
 * - TIFF (and BigTIFF): ImageWidth / ImageLength of the first IFD;
 * - AVIF / HEIF: the `ispe` property of the primary item, turned by its `irot` (as libheif reports it).
 */
import { type FileBytes, readStructure } from './file-bytes.ts';
import { bmffName } from './image-end.ts';

/** What a header claims. */
export interface ImageSize {
  /** sharp's name of the format: `png`, `jpeg`, `gif`, `webp`, `tiff`, `heif` (AVIF and HEIC). */
  format: string;
  width: number;
  height: number;
}

type Dims = { width: number; height: number } | null;

/** A `meta` box larger than this is not read (an image's is a few KB). */
const META_MAX_BYTES = 1024 * 1024;
/** Segments, IFD entries or boxes walked at most before giving up. */
const MAX_STEPS = 4096;

function dims(width: number, height: number): Dims {
  return width > 0 && height > 0 ? { width, height } : null;
}

async function pngSize(b: FileBytes): Promise<Dims> {
  const ihdr = await b.at(8, 16);
  if (ihdr.length < 16 || ihdr.toString('latin1', 4, 8) !== 'IHDR') return null;
  return dims(ihdr.readUInt32BE(8), ihdr.readUInt32BE(12));
}

/** SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC). */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

async function jpegSize(b: FileBytes): Promise<Dims> {
  let at = 2;
  for (let step = 0; step < MAX_STEPS && at + 4 <= b.size; step++) {
    const seg = await b.at(at, 9);
    if (seg[0] !== 0xff) return null;
    const marker = seg[1] as number;
    if (marker === 0xff) {
      at += 1; // a fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2; // no length
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return null; // end, or a scan before any frame header
    if (isStartOfFrame(marker)) return seg.length < 9 ? null : dims(seg.readUInt16BE(7), seg.readUInt16BE(5));
    const length = seg.readUInt16BE(2);
    if (length < 2) return null;
    at += 2 + length;
  }
  return null;
}

async function gifSize(b: FileBytes): Promise<Dims> {
  const screen = await b.at(6, 4);
  return screen.length < 4 ? null : dims(screen.readUInt16LE(0), screen.readUInt16LE(2));
}

async function webpSize(b: FileBytes): Promise<Dims> {
  const h = await b.at(12, 18);
  if (h.length < 18) return null;
  const chunk = h.toString('latin1', 0, 4);
  const data = 8; // the chunk's payload, at file offset 20
  if (chunk === 'VP8 ') {
    if (h[data + 3] !== 0x9d || h[data + 4] !== 0x01 || h[data + 5] !== 0x2a) return null;
    return dims(h.readUInt16LE(data + 6) & 0x3fff, h.readUInt16LE(data + 8) & 0x3fff);
  }
  if (chunk === 'VP8L') {
    if (h[data] !== 0x2f) return null;
    const bits = h.readUInt32LE(data + 1);
    return dims((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
  }
  if (chunk === 'VP8X') return dims(h.readUIntLE(data + 4, 3) + 1, h.readUIntLE(data + 7, 3) + 1);
  return null;
}

async function tiffSize(b: FileBytes, head: Buffer): Promise<Dims> {
  const le = head[0] === 0x49;
  const u16 = (buf: Buffer, o: number) => (le ? buf.readUInt16LE(o) : buf.readUInt16BE(o));
  const u32 = (buf: Buffer, o: number) => (le ? buf.readUInt32LE(o) : buf.readUInt32BE(o));
  const u64 = (buf: Buffer, o: number) => Number(le ? buf.readBigUInt64LE(o) : buf.readBigUInt64BE(o));
  const big = u16(head, 2) === 43;
  if (!big && u16(head, 2) !== 42) return null;
  const ifd = big ? u64(head, 8) : u32(head, 4);
  const countBytes = await b.at(ifd, big ? 8 : 2);
  if (countBytes.length < (big ? 8 : 2)) return null;
  const count = big ? u64(countBytes, 0) : u16(countBytes, 0);
  if (count === 0 || count > MAX_STEPS) return null;
  const entrySize = big ? 20 : 12;
  const entries = await b.at(ifd + (big ? 8 : 2), count * entrySize);
  let width = 0;
  let height = 0;
  for (let e = 0; e + entrySize <= entries.length; e += entrySize) {
    const tag = u16(entries, e);
    if (tag !== 256 && tag !== 257) continue;
    const type = u16(entries, e + 2);
    const v = e + (big ? 12 : 8);
    const value =
      type === 3 ? u16(entries, v) : type === 4 ? u32(entries, v) : type === 16 ? u64(entries, v) : 0;
    if (tag === 256) width = value;
    else height = value;
  }
  return dims(width, height);
}

/** The child boxes of an ISO BMFF box body, each with its type and body. */
function* boxes(buf: Buffer): Generator<{ type: string; body: Buffer }> {
  let at = 0;
  for (let step = 0; step < MAX_STEPS && at + 8 <= buf.length; step++) {
    let size = buf.readUInt32BE(at);
    let head = 8;
    if (size === 1) {
      if (at + 16 > buf.length) return;
      size = Number(buf.readBigUInt64BE(at + 8));
      head = 16;
    } else if (size === 0) {
      size = buf.length - at;
    }
    if (size < head || at + size > buf.length) return;
    yield { type: buf.toString('latin1', at + 4, at + 8), body: buf.subarray(at + head, at + size) };
    at += size;
  }
}

/** The property indexes (1-based, into ipco) associated with `item` by an `ipma` box. */
function associations(ipma: Buffer, item: number): number[] {
  const version = ipma[0] ?? 0;
  const wide = ((ipma[3] ?? 0) & 1) === 1;
  let at = 4;
  const entries = ipma.readUInt32BE(at);
  at += 4;
  for (let i = 0; i < entries && at < ipma.length; i++) {
    const id = version < 1 ? ipma.readUInt16BE(at) : ipma.readUInt32BE(at);
    at += version < 1 ? 2 : 4;
    const n = ipma[at] ?? 0;
    at += 1;
    const found: number[] = [];
    for (let k = 0; k < n; k++) {
      found.push(wide ? ipma.readUInt16BE(at) & 0x7fff : (ipma[at] ?? 0) & 0x7f);
      at += wide ? 2 : 1;
    }
    if (id === item) return found;
  }
  return [];
}

/** The primary item's size from the body of a `meta` box (a full box: version and flags first). */
function metaSize(meta: Buffer): Dims {
  let primary: number | null = null;
  let properties: Array<{ type: string; body: Buffer }> = [];
  let ipma: Buffer | null = null;
  for (const box of boxes(meta.subarray(4))) {
    if (box.type === 'pitm')
      primary = box.body[0] === 0 ? box.body.readUInt16BE(4) : box.body.readUInt32BE(4);
    if (box.type !== 'iprp') continue;
    for (const child of boxes(box.body)) {
      if (child.type === 'ipco') properties = [...boxes(child.body)];
      if (child.type === 'ipma' && ipma === null) ipma = child.body;
    }
  }
  if (primary === null || ipma === null) return null;
  let size: Dims = null;
  let turned = false;
  for (const index of associations(ipma, primary)) {
    const prop = properties[index - 1];
    // ispe: version and flags, then width and height; irot: the angle in quarter turns.
    if (prop?.type === 'ispe' && prop.body.length >= 12) {
      size = dims(prop.body.readUInt32BE(4), prop.body.readUInt32BE(8));
    }
    if (prop?.type === 'irot' && prop.body.length >= 1) turned = ((prop.body[0] ?? 0) & 1) === 1;
  }
  return size && turned ? { width: size.height, height: size.width } : size;
}

async function bmffSize(b: FileBytes): Promise<Dims> {
  let at = 0;
  for (let step = 0; step < MAX_STEPS && at + 8 <= b.size; step++) {
    const h = await b.at(at, 16);
    if (h.length < 8) return null;
    let size = h.readUInt32BE(0);
    let head = 8;
    if (size === 1) {
      if (h.length < 16) return null;
      size = Number(h.readBigUInt64BE(8));
      head = 16;
    } else if (size === 0) {
      size = b.size - at;
    }
    if (size < head) return null;
    if (h.toString('latin1', 4, 8) === 'meta') {
      if (size > META_MAX_BYTES) return null;
      const meta = await b.at(at + head, size - head);
      return meta.length === size - head ? metaSize(meta) : null;
    }
    at += size;
  }
  return null;
}

/**
 * The size the header of the image file at `path` claims (see the module comment), read without a
 * decoder; null for another format, a header that does not say, or a file that cannot be read (the
 * decoder then says what is wrong with it).
 *
 * @example await readImageSize('huge.png') // { format: 'png', width: 60000, height: 60000 }
 */
export async function readImageSize(path: string): Promise<ImageSize | null> {
  return readStructure(path, async (b, head) => {
    const found = await sizeOf(b, head);
    return found ? { format: found.format, ...found.size } : null;
  });
}

async function sizeOf(
  b: FileBytes,
  head: Buffer,
): Promise<{ format: string; size: NonNullable<Dims> } | null> {
  const at = (format: string, size: Dims) => (size ? { format, size } : null);
  if (head.readUInt32BE(0) === 0x89504e47 && head.readUInt32BE(4) === 0x0d0a1a0a)
    return at('png', await pngSize(b));
  if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return at('jpeg', await jpegSize(b));
  if (/^GIF8[79]a/.test(head.toString('latin1', 0, 6))) return at('gif', await gifSize(b));
  if (head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP') {
    return at('webp', await webpSize(b));
  }
  const order = head.toString('latin1', 0, 2);
  if (order === 'II' || order === 'MM') return at('tiff', await tiffSize(b, head));
  if (bmffName(head) !== null) return at('heif', await bmffSize(b));
  return null;
}
