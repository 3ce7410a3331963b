/**
 * readImageHeader and verifyImage (the local check of every image) say what is wrong with a file that
 * does not decode, in every format sharp reads: cut anywhere, "the <format> file is truncated"; whole
 * but damaged, "the <format> file is corrupt"; never the decoder's bare words or a path. Real files
 * made with sharp.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { imageEnd } from '../../src/media/image-end.ts';
import { isMediaError, readImageHeader, verifyImage } from '../../src/media/index.ts';
import { tempDir } from './fixtures.ts';

let dir: string;
let remove: () => Promise<void>;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-image-damage-'));
});

afterAll(async () => {
  await remove?.();
});

const FORMATS = [
  { format: 'png', name: 'PNG' },
  { format: 'jpeg', name: 'JPEG' },
  { format: 'webp', name: 'WebP' },
  { format: 'gif', name: 'GIF' },
  { format: 'avif', name: 'AVIF' },
] as const;

/**
 * A noisy 256x192 image (noise: no format compresses it to a few bytes). The noise is seeded, so every
 * run damages the same bytes: a random image could be damaged where its decoder does not notice.
 */
function encode(format: keyof sharp.FormatEnum): Promise<Buffer> {
  const [width, height, channels] = [256, 192, 3] as const;
  const pixels = Buffer.alloc(width * height * channels);
  let seed = 0x2f6b_1d3c;
  for (let i = 0; i < pixels.length; i++) {
    seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
    pixels[i] = seed >>> 24;
  }
  return sharp(pixels, { raw: { width, height, channels } }).toFormat(format).toBuffer();
}

/** The local check's reason for the file at `path`, or null when it decodes. */
async function refusal(path: string): Promise<string | null> {
  try {
    await readImageHeader(path);
    await verifyImage(path);
    return null;
  } catch (err) {
    expect(isMediaError(err, 'corrupt'), String(err)).toBe(true);
    return (err as Error).message;
  }
}

describe('a truncated or damaged image', () => {
  for (const { format, name } of FORMATS) {
    it(`${name}: cut at 5 %, 50 % and 95 % is truncated; whole, it decodes`, async () => {
      const bytes = await encode(format);
      const whole = join(dir, `whole.${format}`);
      await writeFile(whole, bytes);
      expect(await refusal(whole)).toBeNull();
      expect(await imageEnd(whole)).toEqual({ format: name, verdict: 'whole' });
      for (const fraction of [0.05, 0.5, 0.95]) {
        const path = join(dir, `cut-${fraction}.${format}`);
        await writeFile(path, bytes.subarray(0, Math.floor(bytes.length * fraction)));
        const reason = await refusal(path);
        expect(reason, `${fraction}`).toMatch(
          new RegExp(`^image could not be decoded: the ${name} file is truncated \\(.+\\)$`),
        );
        expect(reason).not.toContain(dir);
        expect(await imageEnd(path)).toEqual({ format: name, verdict: 'cut' });
      }
    });
  }

  for (const { format, name } of FORMATS.filter((f) => ['png', 'gif', 'avif'].includes(f.format))) {
    it(`${name}: whole but with damaged bytes inside is corrupt`, async () => {
      const bytes = Buffer.from(await encode(format));
      bytes.fill(0xaa, Math.floor(bytes.length / 3), Math.floor(bytes.length / 3) + 200);
      const path = join(dir, `damaged.${format}`);
      await writeFile(path, bytes);
      expect(await refusal(path)).toMatch(
        new RegExp(`^image could not be decoded: the ${name} file is corrupt \\(.+\\)$`),
      );
    });
  }
});
