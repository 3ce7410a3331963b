/**
 * readImageSize: the size an image header claims, from the file's structure, for every format genpipe
 * accepts. It agrees with sharp's own header read on real files, and reads claims sharp refuses.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readImageSize } from '../../src/media/index.ts';
import { CLAIMED_EXT, CLAIMED_FORMATS, largestClaim, writeClaimedSize } from './claimed-size.ts';
import { tempDir } from './fixtures.ts';

let dir: string;
let remove: () => Promise<void>;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-image-size-'));
});
afterAll(() => remove());

/** A 37 x 23 image (not square: width and height cannot be swapped unseen), noisy so it is not tiny. */
function noisy(alpha = false): sharp.Sharp {
  const channels = alpha ? 4 : 3;
  const raw = Buffer.alloc(37 * 23 * channels);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7919) % 251;
  return sharp(raw, { raw: { width: 37, height: 23, channels } });
}

const REAL: Array<[name: string, make: (s: sharp.Sharp) => sharp.Sharp, alpha?: boolean]> = [
  ['png', (s) => s.png()],
  ['jpg', (s) => s.jpeg()],
  ['progressive.jpg', (s) => s.jpeg({ progressive: true })],
  ['gif', (s) => s.gif()],
  ['lossy.webp', (s) => s.webp()],
  ['lossless.webp', (s) => s.webp({ lossless: true })],
  ['alpha.webp', (s) => s.webp(), true],
  ['animated.webp', (s) => s.webp({ loop: 0 })],
  ['tiff', (s) => s.tiff({ compression: 'none' })],
  ['lzw.tiff', (s) => s.tiff({ compression: 'lzw' })],
  ['big.tiff', (s) => s.tiff({ compression: 'lzw', bigtiff: true })],
  ['avif', (s) => s.avif({ effort: 0 })],
];

describe('readImageSize', () => {
  it.each(REAL)('reads what sharp reads from a real %s', async (name, make, alpha) => {
    const path = join(dir, `real.${name}`);
    await make(noisy(alpha)).toFile(path);
    const meta = await sharp(path).metadata();
    expect(await readImageSize(path)).toEqual({ format: meta.format, width: 37, height: 23 });
  });

  it.each(CLAIMED_FORMATS)('reads a 60000 x 30000 px claim from a %s', async (format) => {
    const path = join(dir, `claim-${format}.${CLAIMED_EXT[format]}`);
    const w = largestClaim(format, 60000);
    const h = largestClaim(format, 30000);
    await writeClaimedSize(path, format, w, h);
    expect(await readImageSize(path)).toMatchObject({ width: w, height: h });
    // sharp's header read refuses all but the lossy WebP, whose 14 bits a side stay under its limit.
    if (format !== 'webp-vp8') await expect(sharp(path).metadata()).rejects.toThrow();
  });

  it('says nothing of a file it cannot read the size of: another format, a cut header, no file', async () => {
    await writeFile(join(dir, 'words.txt'), 'just words');
    await writeFile(
      join(dir, 'cut.png'),
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]),
    );
    await writeFile(join(dir, 'empty.jpg'), '');
    await writeFile(join(dir, 'scan-first.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xda, 0, 4, 0, 0]));
    for (const name of ['words.txt', 'cut.png', 'empty.jpg', 'scan-first.jpg', 'missing.png']) {
      expect(await readImageSize(join(dir, name)), name).toBeNull();
    }
  });
});
