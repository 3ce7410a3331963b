import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FFMPEG_PATH_ENV,
  FFPROBE_PATH_ENV,
  ffmpegPath,
  ffprobePath,
  isMediaError,
  MediaError,
  mediaKindOf,
  plainWhy,
  probeVideo,
  readImageHeader,
  runFfmpeg,
  sniffFile,
  verifyImage,
} from '../../src/media/index.ts';
import { until } from '../helpers/emulator.ts';
import { makeImage, makeVideo, tempDir, truncated } from './fixtures.ts';

let dir: string;
let remove: () => Promise<void>;
const at = (name: string) => join(dir, name);

beforeAll(async () => {
  ({ dir, remove } = await tempDir());
  await Promise.all([
    makeImage(at('a.png'), { width: 64, height: 48 }),
    makeImage(at('a.jpg'), { width: 64, height: 48 }),
    makeImage(at('a.webp'), { width: 40, height: 30 }),
    makeImage(at('a.gif'), { width: 16, height: 16 }),
    makeImage(at('a.tiff'), { width: 16, height: 16 }),
    makeImage(at('a.avif'), { width: 16, height: 16 }),
    makeVideo(at('v.mp4'), { seconds: 1.5, fps: 30, width: 160, height: 90 }),
  ]);
  await Promise.all([
    makeVideo(at('v.webm'), { seconds: 1, fps: 24, width: 96, height: 64 }),
    makeVideo(at('r.mov'), { seconds: 1, fps: 24, width: 160, height: 90, rotate: 90 }),
  ]);
});
afterAll(() => remove());

describe('ffmpegPath / ffprobePath', () => {
  it('use the bundled binaries, or the system binary named in the environment', () => {
    const saved = { ff: process.env[FFMPEG_PATH_ENV], fp: process.env[FFPROBE_PATH_ENV] };
    try {
      delete process.env[FFMPEG_PATH_ENV];
      delete process.env[FFPROBE_PATH_ENV];
      expect(existsSync(ffmpegPath())).toBe(true);
      expect(existsSync(ffprobePath())).toBe(true);
      expect(ffmpegPath()).toMatch(/@ffmpeg-installer/);
      process.env[FFMPEG_PATH_ENV] = '/usr/local/bin/ffmpeg';
      process.env[FFPROBE_PATH_ENV] = '/usr/local/bin/ffprobe';
      expect(ffmpegPath()).toBe('/usr/local/bin/ffmpeg');
      expect(ffprobePath()).toBe('/usr/local/bin/ffprobe');
    } finally {
      for (const [k, v] of [
        [FFMPEG_PATH_ENV, saved.ff],
        [FFPROBE_PATH_ENV, saved.fp],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

describe('sniffFile', () => {
  it.each([
    ['a.png', 'image/png', 'png', 'image'],
    ['a.jpg', 'image/jpeg', 'jpg', 'image'],
    ['a.webp', 'image/webp', 'webp', 'image'],
    ['a.gif', 'image/gif', 'gif', 'image'],
    ['a.tiff', 'image/tiff', 'tif', 'image'],
    ['a.avif', 'image/avif', 'avif', 'image'],
    ['v.mp4', 'video/mp4', 'mp4', 'video'],
    ['v.webm', 'video/webm', 'webm', 'video'],
    ['r.mov', 'video/quicktime', 'mov', 'video'],
  ])('%s is %s (%s, %s) from its bytes', async (name, mime, ext, kind) => {
    // A misleading name must not matter: copy to a .bin name first.
    const bin = at(`${name}.bin`);
    await copyFile(at(name), bin);
    expect(await sniffFile(bin)).toEqual({ mime, ext, kind });
  });

  it('recognises HEIC from its ftyp brand', async () => {
    const box = Buffer.alloc(24);
    box.writeUInt32BE(24, 0);
    box.write('ftypheic', 4, 'latin1');
    box.write('\0\0\0\0mif1heic', 12, 'latin1');
    await writeFile(at('h.heic'), Buffer.concat([box, Buffer.alloc(64)]));
    expect(await sniffFile(at('h.heic'))).toMatchObject({ mime: 'image/heic', kind: 'image' });
  });

  it('gives null for an empty file or unrecognised bytes, and a MediaError for a missing file', async () => {
    await writeFile(at('empty'), '');
    await writeFile(at('text.png'), 'just some text, not a picture');
    expect(await sniffFile(at('empty'))).toBeNull();
    expect(await sniffFile(at('text.png'))).toBeNull();
    await expect(sniffFile(at('nope'))).rejects.toMatchObject({ name: 'MediaError', code: 'missing' });
  });

  it('classifies MIME types into kinds', () => {
    expect(mediaKindOf('video/matroska')).toBe('video');
    expect(mediaKindOf('image/heic')).toBe('image');
    expect(mediaKindOf('application/mxf')).toBe('video');
    expect(mediaKindOf('audio/mpeg')).toBe('other');
    expect(mediaKindOf('application/pdf')).toBe('other');
  });
});

describe('readImageHeader / verifyImage', () => {
  it('read size and format from the header', async () => {
    expect(await readImageHeader(at('a.png'))).toMatchObject({ width: 64, height: 48, format: 'png' });
    expect(await readImageHeader(at('a.webp'))).toMatchObject({ width: 40, height: 30, format: 'webp' });
    await expect(verifyImage(at('a.jpg'))).resolves.toBeUndefined();
  });

  it('a truncated JPEG passes the header read but fails verification with a plain reason', async () => {
    await truncated(at('a.jpg'), at('t.jpg'), 0.6);
    expect(await readImageHeader(at('t.jpg'))).toMatchObject({ width: 64, height: 48 });
    const err = await verifyImage(at('t.jpg')).catch((e: unknown) => e);
    expect(isMediaError(err, 'corrupt')).toBe(true);
    expect((err as Error).message).toMatch(/^image could not be decoded: the JPEG file is truncated \(/);
    expect((err as Error).message).not.toContain(dir);
  });

  it('a truncated PNG fails verification too', async () => {
    await truncated(at('a.png'), at('t.png'), 0.5);
    await expect(verifyImage(at('t.png'))).rejects.toThrow(
      /^image could not be decoded: the PNG file is truncated \(/,
    );
  });

  it('empty, junk and missing files get plain reasons', async () => {
    await writeFile(at('empty.png'), '');
    await writeFile(at('junk.jpg'), 'hello');
    await expect(readImageHeader(at('empty.png'))).rejects.toThrow(
      'image could not be decoded: file is empty',
    );
    await expect(verifyImage(at('empty.png'))).rejects.toThrow('image could not be decoded: file is empty');
    const junk = await readImageHeader(at('junk.jpg')).catch((e: unknown) => e);
    expect(junk).toBeInstanceOf(MediaError);
    expect(junk).toMatchObject({ code: 'unsupported' });
    expect((junk as Error).message).toMatch(/^image could not be decoded: /);
    await expect(readImageHeader(at('none.png'))).rejects.toMatchObject({ code: 'missing' });
  });

  it('reports alpha and greyscale channels', async () => {
    await makeImage(at('alpha.png'), { width: 8, height: 8, alpha: true });
    await makeImage(at('grey.png'), { width: 8, height: 8, grey: true });
    expect(await readImageHeader(at('alpha.png'))).toMatchObject({ hasAlpha: true, channels: 4 });
    expect(await readImageHeader(at('grey.png'))).toMatchObject({ hasAlpha: false, channels: 1 });
  });
});

describe('probeVideo', () => {
  it('gives duration, size, codec, fps and frame count', async () => {
    const p = await probeVideo(at('v.mp4'));
    expect(p).toMatchObject({ width: 160, height: 90, codec: 'h264', fps: 30, frames: 45 });
    expect(p.durationSeconds).toBeCloseTo(1.5, 2);
    const w = await probeVideo(at('v.webm'));
    expect(w).toMatchObject({ width: 96, height: 64, codec: 'vp8', fps: 24 });
    expect(w.durationSeconds).toBeCloseTo(1, 1);
  });

  it('reports the displayed size of a rotated video', async () => {
    expect(await probeVideo(at('r.mov'))).toMatchObject({ width: 90, height: 160 });
  });

  it('truncated, empty, still-image and missing files get plain reasons', async () => {
    await truncated(at('v.mp4'), at('t.mp4'), 0.3);
    await writeFile(at('empty.mp4'), '');
    const err = await probeVideo(at('t.mp4')).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'MediaError', code: 'corrupt' });
    expect((err as Error).message).toMatch(/^video could not be decoded: /);
    expect((err as Error).message).not.toContain(dir);
    await expect(probeVideo(at('empty.mp4'))).rejects.toThrow('video could not be decoded: file is empty');
    await expect(probeVideo(at('a.png'))).rejects.toMatchObject({
      code: 'unsupported',
      message: 'file is not a video',
    });
    await expect(probeVideo(at('none.mp4'))).rejects.toMatchObject({ code: 'missing' });
  });
});

describe('runFfmpeg', () => {
  it('fails with a plain reason that names no directory', async () => {
    const err = await runFfmpeg(['-i', at('missing-input.mp4'), at('x.mp4')], {
      what: 'video could not be made',
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'MediaError', code: 'tool' });
    expect((err as Error).message).toMatch(/^video could not be made: /);
    expect((err as Error).message).not.toContain(dir);
  });

  it('kills ffmpeg when aborted', async () => {
    const ac = new AbortController();
    // An endless input read in real time: ffmpeg only ever stops because it is killed. The marker
    // finds its process in /proc.
    const marker = `comment=genpipe-kill-test-${randomUUID()}`;
    const running = () =>
      readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .some((pid) => {
          try {
            return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
          } catch {
            return false; // gone meanwhile
          }
        });
    const run = runFfmpeg(
      ['-re', '-f', 'lavfi', '-i', 'testsrc2=size=64x64:rate=24', '-metadata', marker, '-f', 'null', '-'],
      { signal: ac.signal },
    );
    await until(async () => running());
    ac.abort();
    await expect(run).rejects.toMatchObject({ code: 'aborted' });
    await until(async () => !running());
  });

  it('plainWhy keeps the last line and drops paths', () => {
    expect(
      plainWhy('ffprobe exited with code 1\n/tmp/a/b/x.mp4: Invalid data found when processing input'),
    ).toBe('Invalid data found when processing input');
    expect(plainWhy('Error opening /var/data/secret-dir/in.png for reading')).toBe(
      'Error opening in.png for reading',
    );
  });
});
