/**
 * `tiny_outputs`: every output is a minimal valid file (an 8×8 PNG, a one-frame 16×16 MP4) instead of
 * a rendering, still downloadable and decodable.
 */

import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningEmulator, resolveConfig } from '../../src/emulator/index.ts';
import { probeVideo } from '../../src/media/index.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { download, terminal } from './generations-helpers.ts';

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startTestEmulator({ tiny_outputs: true });
});
afterAll(async () => {
  await emu.close();
});

describe('tiny_outputs', () => {
  it('gives an image an 8×8 PNG whatever its aspect ratio', async () => {
    const created = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'image', prompt: 'a lighthouse', aspect_ratio: '16:9' },
    });
    const done = await terminal(emu, created.body.id);
    expect(done.state).toBe('completed');
    const file = await download(done.output[0].url);
    expect(file.type).toBe('image/png');
    const meta = await sharp(file.bytes).metadata();
    expect([meta.width, meta.height]).toEqual([8, 8]);
  });

  it('gives a video a one-frame 16×16 MP4', async () => {
    const created = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'video', prompt: 'waves', aspect_ratio: '16:9', video: { resolution: '360p' } },
    });
    const done = await terminal(emu, created.body.id);
    expect(done.state).toBe('completed');
    const file = await download(done.output[0].url);
    expect(file.type).toBe('video/mp4');
    const path = join(await mkdtemp(join(tmpdir(), 'genpipe-tiny-')), 'v.mp4');
    await writeFile(path, file.bytes);
    const probe = await probeVideo(path);
    expect([probe.width, probe.height]).toEqual([16, 16]);
  });

  it('refuses a value that is not true or false', () => {
    expect(() => resolveConfig({ tiny_outputs: 'yes' })).toThrow(/tiny_outputs/);
  });
});
