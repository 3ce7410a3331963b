/**
 * Does an image file end where its own structure says it ends? Used to explain a decode failure in
 * plain words: a file cut short is "truncated", a file that holds all its parts but does not decode is
 * "corrupt". Read from the file's structure, not from the decoder's message (libspng says only "read
 * error", libwebp "unable to parse image", libheif "bad seek"):
 *
 * - PNG: the chunk chain reaches IEND inside the file;
 * - JPEG: the file ends with the EOI marker (FF D9; only a marker can hold FF D9), zero padding allowed;
 * - GIF: the block chain (extensions, images and their sub-blocks) reaches the trailer (3B);
 * - WebP: the RIFF size covers the file;
 * - AVIF / HEIF: the top-level boxes end inside the file.
 *
 * Only the parts needed are read, through a small cache: the pixels never reach JS memory.
 */
import { type FileBytes as Bytes, readStructure } from './file-bytes.ts';

/** `cut`: the file ends before its structure does; `whole`: it does not (damage, if it fails). */
export type ImageEndVerdict = 'cut' | 'whole';

/** An image format this module knows, with its name for people, and the verdict. */
export interface ImageEnd {
  /** `PNG`, `JPEG`, `GIF`, `WebP`, `AVIF`, `HEIF`. */
  format: string;
  verdict: ImageEndVerdict;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

async function pngEnd(b: Bytes): Promise<ImageEndVerdict> {
  let at = PNG_SIGNATURE.length;
  for (;;) {
    const head = await b.at(at, 8);
    if (head.length < 8) return 'cut';
    const next = at + 12 + head.readUInt32BE(0);
    if (head.toString('latin1', 4, 8) === 'IEND') return 'whole';
    if (next > b.size) return 'cut';
    at = next;
  }
}

async function jpegEnd(b: Bytes): Promise<ImageEndVerdict> {
  const tail = await b.at(Math.max(0, b.size - 4096), 4096);
  let end = tail.length;
  while (end > 0 && tail[end - 1] === 0) end--;
  return end >= 2 && tail[end - 2] === 0xff && tail[end - 1] === 0xd9 ? 'whole' : 'cut';
}

/** Skips a chain of GIF sub-blocks starting at `at`; the offset after its terminator, or null if cut. */
async function gifSubBlocks(b: Bytes, at: number): Promise<number | null> {
  for (;;) {
    const len = (await b.at(at, 1))[0];
    if (len === undefined) return null;
    at += 1 + len;
    if (len === 0) return at;
    if (at > b.size) return null;
  }
}

async function gifEnd(b: Bytes): Promise<ImageEndVerdict> {
  const screen = await b.at(0, 13);
  if (screen.length < 13) return 'cut';
  const flags = screen[10] ?? 0;
  let at = 13 + (flags & 0x80 ? 3 * 2 ** ((flags & 7) + 1) : 0);
  for (;;) {
    const block = (await b.at(at, 1))[0];
    if (block === undefined) return 'cut';
    if (block === 0x3b) return 'whole';
    let next: number | null;
    if (block === 0x21) {
      next = await gifSubBlocks(b, at + 2);
    } else if (block === 0x2c) {
      const desc = await b.at(at, 10);
      if (desc.length < 10) return 'cut';
      const local = desc[9] ?? 0;
      next = await gifSubBlocks(b, at + 10 + (local & 0x80 ? 3 * 2 ** ((local & 7) + 1) : 0) + 1);
    } else {
      return 'whole'; // not a GIF block: damaged, not cut
    }
    if (next === null) return 'cut';
    at = next;
  }
}

async function bmffEnd(b: Bytes): Promise<ImageEndVerdict> {
  let at = 0;
  while (at < b.size) {
    const head = await b.at(at, 16);
    if (head.length < 8) return 'cut';
    let size = head.readUInt32BE(0);
    if (size === 0) return 'whole'; // the last box, to the end of the file
    if (size === 1) {
      if (head.length < 16) return 'cut';
      size = Number(head.readBigUInt64BE(8));
    }
    if (size < 8) return 'whole'; // a damaged box header
    at += size;
  }
  return at === b.size ? 'whole' : 'cut';
}

/** The AVIF / HEIF name from the `ftyp` box's brands. */
export function bmffName(ftyp: Buffer): string | null {
  if (ftyp.toString('latin1', 4, 8) !== 'ftyp') return null;
  const brands = ftyp.toString('latin1', 8, Math.min(ftyp.length, ftyp.readUInt32BE(0)));
  if (/avi[fs]/.test(brands)) return 'AVIF';
  if (/hei[cxms]|hev[cxms]|mif1|msf1/.test(brands)) return 'HEIF';
  return null;
}

/**
 * The format of an image file from its first bytes, and whether the file ends where its structure
 * does; null for another format (or an unreadable file).
 *
 * @example await imageEnd('half.png') // { format: 'PNG', verdict: 'cut' }
 */
export async function imageEnd(path: string): Promise<ImageEnd | null> {
  return readStructure(path, async (b, head): Promise<ImageEnd | null> => {
    if (head.subarray(0, 8).equals(PNG_SIGNATURE)) return { format: 'PNG', verdict: await pngEnd(b) };
    if (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) {
      return { format: 'JPEG', verdict: await jpegEnd(b) };
    }
    if (/^GIF8[79]a/.test(head.toString('latin1', 0, 6))) return { format: 'GIF', verdict: await gifEnd(b) };
    if (head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WEBP') {
      return { format: 'WebP', verdict: head.readUInt32LE(4) + 8 > b.size ? 'cut' : 'whole' };
    }
    const bmff = head.length >= 12 ? bmffName(head) : null;
    if (bmff) return { format: bmff, verdict: await bmffEnd(b) };
    return null;
  });
}
