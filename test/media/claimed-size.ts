/**
 * Small image files whose headers claim a size their few bytes do not hold (60000 x 60000 px in a file
 * of a few hundred bytes), one per image format genpipe accepts: a decoder refuses them, the header
 * says how large they are. Built from a real tiny image of the format with its size fields rewritten,
 * or written out field by field where that is simpler (PNG, TIFF).
 */
import { writeFile } from 'node:fs/promises';
import { deflateSync } from 'node:zlib';
import sharp from 'sharp';

/** The formats, each with how the size is written in it. */
export const CLAIMED_FORMATS = [
  'png',
  'jpeg',
  'jpeg-progressive',
  'gif',
  'webp-vp8',
  'webp-vp8l',
  'webp-vp8x',
  'tiff',
  'avif',
  'heic',
] as const;
export type ClaimedFormat = (typeof CLAIMED_FORMATS)[number];

/** The file extension of each. */
export const CLAIMED_EXT: Record<ClaimedFormat, string> = {
  png: 'png',
  jpeg: 'jpg',
  'jpeg-progressive': 'jpg',
  gif: 'gif',
  'webp-vp8': 'webp',
  'webp-vp8l': 'webp',
  'webp-vp8x': 'webp',
  tiff: 'tiff',
  avif: 'avif',
  heic: 'heic',
};

/**
 * The largest size each format can write: a VP8 (lossy WebP) frame has 14 bits a side, a VP8L
 * (lossless) one 14 bits for the side minus one; the others hold 60000.
 */
export function largestClaim(format: ClaimedFormat, want: number): number {
  if (format === 'webp-vp8') return Math.min(want, 16383);
  if (format === 'webp-vp8l') return Math.min(want, 16384);
  return want;
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of buf) crc = (CRC_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), 8 + data.length);
  return out;
}

/** Whether a file of this size gets all its pixel bytes (and so decodes); a large claim gets a few. */
function whole(width: number, height: number): boolean {
  return width * height <= 1 << 20;
}

function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(Buffer.alloc(whole(width, height) ? height * (1 + 3 * width) : 64))),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A little-endian TIFF of one 8-bit grey strip, its ImageWidth / ImageLength as LONGs. */
function tiff(width: number, height: number): Buffer {
  const stripBytes = whole(width, height) ? width * height : 16;
  const entries: Array<[tag: number, type: number, value: number]> = [
    [256, 4, width],
    [257, 4, height],
    [258, 3, 8],
    [259, 3, 1],
    [262, 3, 1],
    [273, 4, 0], // strip offset, set below
    [277, 3, 1],
    [278, 4, height],
    [279, 4, stripBytes],
  ];
  const ifdAt = 8;
  const ifdLen = 2 + entries.length * 12 + 4;
  const stripAt = ifdAt + ifdLen;
  const out = Buffer.alloc(stripAt + stripBytes);
  out.write('II', 0, 'latin1');
  out.writeUInt16LE(42, 2);
  out.writeUInt32LE(ifdAt, 4);
  out.writeUInt16LE(entries.length, ifdAt);
  for (const [i, [tag, type, value]] of entries.entries()) {
    const at = ifdAt + 2 + i * 12;
    out.writeUInt16LE(tag, at);
    out.writeUInt16LE(type, at + 2);
    out.writeUInt32LE(1, at + 4);
    if (type === 3) out.writeUInt16LE(value, at + 8);
    else out.writeUInt32LE(tag === 273 ? stripAt : value, at + 8);
  }
  return out;
}

function tiny(): sharp.Sharp {
  return sharp({ create: { width: 16, height: 16, channels: 3, background: '#d04020' } });
}

/** Rewrites the size of every SOFn segment of a JPEG. */
function patchJpeg(buf: Buffer, width: number, height: number): Buffer {
  let at = 2;
  while (at + 4 <= buf.length) {
    if (buf[at] !== 0xff) throw new Error('not a JPEG marker');
    const marker = buf[at + 1] as number;
    if (marker === 0xda) break; // start of scan: the frame header came before
    const isSof = marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker);
    if (isSof) {
      buf.writeUInt16BE(height, at + 5);
      buf.writeUInt16BE(width, at + 7);
    }
    at += 2 + buf.readUInt16BE(at + 2);
  }
  return buf;
}

/** Rewrites the logical screen of a GIF and the size of its first image. */
function patchGif(buf: Buffer, width: number, height: number): Buffer {
  buf.writeUInt16LE(width, 6);
  buf.writeUInt16LE(height, 8);
  const flags = buf[10] as number;
  let at = 13 + (flags & 0x80 ? 3 * 2 ** ((flags & 7) + 1) : 0);
  while (buf[at] === 0x21) {
    at += 2; // an extension: its label, then sub-blocks
    while ((buf[at] as number) > 0) at += 1 + (buf[at] as number);
    at += 1;
  }
  if (buf[at] !== 0x2c) throw new Error('no image descriptor');
  buf.writeUInt16LE(width, at + 5);
  buf.writeUInt16LE(height, at + 7);
  return buf;
}

/** Rewrites the width and height of every `ispe` box of an AVIF / HEIF file. */
function patchIspe(buf: Buffer, width: number, height: number): Buffer {
  let found = 0;
  for (let at = buf.indexOf('ispe', 0, 'latin1'); at >= 0; at = buf.indexOf('ispe', at + 4, 'latin1')) {
    buf.writeUInt32BE(width, at + 8);
    buf.writeUInt32BE(height, at + 12);
    found++;
  }
  if (found === 0) throw new Error('no ispe box');
  return buf;
}

async function webp(format: 'webp-vp8' | 'webp-vp8l' | 'webp-vp8x', w: number, h: number) {
  const img = format === 'webp-vp8x' ? tiny().ensureAlpha(0.5) : tiny();
  const buf = await img.webp({ lossless: format === 'webp-vp8l' }).toBuffer();
  const chunk = buf.toString('latin1', 12, 16);
  const data = 20;
  if (format === 'webp-vp8') {
    if (chunk !== 'VP8 ') throw new Error(`expected a VP8 chunk, got ${chunk}`);
    buf.writeUInt16LE(w & 0x3fff, data + 6);
    buf.writeUInt16LE(h & 0x3fff, data + 8);
  } else if (format === 'webp-vp8l') {
    if (chunk !== 'VP8L') throw new Error(`expected a VP8L chunk, got ${chunk}`);
    const bits = buf.readUInt32LE(data + 1);
    const rest = bits & ~0x0fffffff; // alpha hint and version
    buf.writeUInt32LE((rest | ((w - 1) & 0x3fff) | (((h - 1) & 0x3fff) << 14)) >>> 0, data + 1);
  } else {
    if (chunk !== 'VP8X') throw new Error(`expected a VP8X chunk, got ${chunk}`);
    buf.writeUIntLE(w - 1, data + 4, 3);
    buf.writeUIntLE(h - 1, data + 7, 3);
  }
  return buf;
}

/** The bytes of a small file of `format` whose header claims `width` x `height`. */
export async function claimedSizeBytes(
  format: ClaimedFormat,
  width: number,
  height: number,
): Promise<Buffer> {
  switch (format) {
    case 'png':
      return png(width, height);
    case 'tiff':
      return tiff(width, height);
    case 'jpeg':
    case 'jpeg-progressive':
      return patchJpeg(
        await tiny()
          .jpeg({ progressive: format === 'jpeg-progressive' })
          .toBuffer(),
        width,
        height,
      );
    case 'gif':
      return patchGif(await tiny().gif().toBuffer(), width, height);
    case 'avif':
      return patchIspe(await tiny().avif({ effort: 0 }).toBuffer(), width, height);
    case 'heic': {
      // sharp's libheif writes no HEVC: an AVIF whose ftyp names HEIC is one to the header readers.
      const buf = patchIspe(await tiny().avif({ effort: 0 }).toBuffer(), width, height);
      buf.write('heic', 8, 'latin1');
      return buf;
    }
    default:
      return webp(format, width, height);
  }
}

/** Writes {@link claimedSizeBytes} to `path`. */
export async function writeClaimedSize(
  path: string,
  format: ClaimedFormat,
  width: number,
  height: number,
): Promise<string> {
  await writeFile(path, await claimedSizeBytes(format, width, height));
  return path;
}
