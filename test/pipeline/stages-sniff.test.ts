import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StageContext } from '../../src/pipeline/stage.ts';
import { EMPTY_SNIFF, sniff, TEXT_SNIFF, UNKNOWN_SNIFF } from '../../src/pipeline/stages/sniff.ts';
import { makeImage, tempDir } from '../media/fixtures.ts';
import { contextFor, itemFor, put } from './stage-helpers.ts';

let dir: string;
let remove: () => Promise<void>;
let ctx: StageContext;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-sniff-'));
  ctx = await contextFor(dir, 'rules:\n  - match: "**/*"\n    request: { type: image, prompt: x }\n');
});
afterAll(() => remove());

describe('stage sniff', () => {
  it('takes the type from the bytes: a .png that holds a JPEG is a JPEG', async () => {
    const jpeg = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#808080' } })
      .jpeg()
      .toBuffer();
    await put(dir, 'photo.png', jpeg);
    const item = await sniff(await itemFor(dir, 'photo.png'), ctx);
    expect(item.state).toBe('sniffed');
    expect(item.sniff).toEqual({ mime: 'image/jpeg', ext: 'jpg', kind: 'image' });
  });

  it('recognises a real image and a UTF-8 prompt file (with multi-byte characters)', async () => {
    await makeImage(join(dir, 'real.webp'), { width: 10, height: 10 });
    expect((await sniff(await itemFor(dir, 'real.webp'), ctx)).sniff).toMatchObject({
      mime: 'image/webp',
      kind: 'image',
    });
    await put(dir, 'prompt.jpg', 'une aquarelle, lumière douce — 水彩\n');
    expect((await sniff(await itemFor(dir, 'prompt.jpg'), ctx)).sniff).toEqual(TEXT_SNIFF);
  });

  it('knows a TIFF whose first IFD lies past the head it reads (as libtiff writes a large one)', async () => {
    const raw = Buffer.alloc(200 * 200 * 3);
    for (let i = 0; i < raw.length; i++) raw[i] = (i * 7919) % 251;
    const tiff = await sharp(raw, { raw: { width: 200, height: 200, channels: 3 } })
      .tiff({ compression: 'none' })
      .toBuffer();
    expect(tiff.readUInt32LE(4)).toBeGreaterThan(64 * 1024); // the IFD comes after the pixels
    await put(dir, 'scan.tif', tiff);
    expect((await sniff(await itemFor(dir, 'scan.tif'), ctx)).sniff).toEqual({
      mime: 'image/tiff',
      ext: 'tif',
      kind: 'image',
    });
    // A TIFF header alone, its IFD past the end of a short file, is a TIFF cut short, not unknown bytes.
    await put(dir, 'cut.tif', tiff.subarray(0, 4096));
    expect((await sniff(await itemFor(dir, 'cut.tif'), ctx)).sniff).toMatchObject({ mime: 'image/tiff' });
  });

  it('records empty files and unknown bytes without failing them (plan decides)', async () => {
    await put(dir, 'empty.png', '');
    const empty = await sniff(await itemFor(dir, 'empty.png'), ctx);
    expect(empty.state).toBe('sniffed');
    expect(empty.sniff).toEqual(EMPTY_SNIFF);
    await put(dir, 'noise.jpg', Buffer.from([0x00, 0x13, 0x37, 0xff, 0xfe, 0x00, 0x01, 0x02, 0x03, 0x04]));
    expect((await sniff(await itemFor(dir, 'noise.jpg'), ctx)).sniff).toEqual(UNKNOWN_SNIFF);
    await put(dir, 'latin1.txt', Buffer.from('caf\xe9 au lait', 'latin1'));
    expect((await sniff(await itemFor(dir, 'latin1.txt'), ctx)).sniff).toEqual(UNKNOWN_SNIFF);
  });

  it('fails an item whose file is gone, and leaves the input item unchanged', async () => {
    await put(dir, 'gone.png', 'x');
    const item = await itemFor(dir, 'gone.png');
    await rm(join(dir, 'gone.png'));
    const next = await sniff(item, ctx);
    expect(next).toMatchObject({
      state: 'failed',
      failedAt: 'sniff',
      reason: 'file not found or not readable',
    });
    expect(item.state).toBe('discovered');
  });

  it('rejects an item in the wrong state and an aborted batch', async () => {
    const item = await itemFor(dir, 'photo.png');
    await expect(sniff({ ...item, state: 'planned' }, ctx)).rejects.toThrow(
      "takes an item in state 'discovered'",
    );
    const ac = new AbortController();
    ac.abort(new Error('batch stopped'));
    await expect(sniff(item, { ...ctx, signal: ac.signal })).rejects.toThrow('batch stopped');
  });
});
