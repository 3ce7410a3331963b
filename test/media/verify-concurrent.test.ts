/** libvips shares its error text across threads; concurrent failing decodes must still say why. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { verifyImage } from '../../src/media/index.ts';

describe('verifyImage under concurrency', () => {
  it('reports every truncated file as truncated, not "unknown error"', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genpipe-verify-'));
    const files: string[] = [];
    for (let i = 0; i < 30; i++) {
      const img = sharp({
        create: { width: 200 + i, height: 120, channels: 3, background: { r: i * 8, g: 90, b: 40 } },
      });
      const bytes = i % 2 ? await img.png().toBuffer() : await img.jpeg().toBuffer();
      const path = join(dir, `t-${i}.${i % 2 ? 'png' : 'jpg'}`);
      writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
      files.push(path);
    }
    const reasons = await Promise.all(
      files.map((f) =>
        verifyImage(f).then(
          () => 'decoded',
          (e: Error) => e.message,
        ),
      ),
    );
    expect(reasons.filter((r) => !r.includes('file is truncated'))).toEqual([]);
  });
});
