/**
 * Small real media files for the media tests, made on the spot with sharp and ffmpeg in a temp dir:
 * tiny images, 1-2 s low-resolution videos.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import sharp from 'sharp';
import { runFfmpeg } from '../../src/media/index.ts';

/** A fresh temp dir and its remover. */
export async function tempDir(
  prefix = 'genpipe-media-',
): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * A width x height image with a few coloured shapes; the format follows the file extension. Its file
 * name is in its metadata (where the format keeps EXIF: not GIF), so two images of the same shapes
 * under different names are different files, as two photos are: genpipe reuses the work of a file
 * with the same content under another name.
 */
export async function makeImage(
  path: string,
  o: { width: number; height: number; alpha?: boolean; grey?: boolean },
): Promise<string> {
  const { width: w, height: h } = o;
  const svg = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}">` +
      `<rect width="${w}" height="${h}" fill="${o.alpha ? 'none' : '#d04020'}"/>` +
      `<circle cx="${w * 0.4}" cy="${h * 0.5}" r="${Math.min(w, h) * 0.3}" fill="#2050e0"/>` +
      `<rect x="${w * 0.6}" y="${h * 0.1}" width="${w * 0.3}" height="${h * 0.4}" fill="#30c060" opacity="0.7"/>` +
      '</svg>',
  );
  let img = sharp(svg).resize(w, h, { fit: 'fill' });
  if (!o.alpha) img = img.removeAlpha();
  if (o.grey) img = img.toColourspace('b-w');
  await img.withExif({ IFD0: { ImageDescription: basename(path) } }).toFile(path);
  return path;
}

/**
 * A video from ffmpeg's test pattern; the container follows the extension (.mp4/.mov H.264, .webm VP8).
 * Its file name is its title, so two such videos under different names are different files.
 */
export async function makeVideo(
  path: string,
  o: { seconds: number; fps: number; width: number; height: number; rotate?: number },
): Promise<string> {
  const codec = path.endsWith('.webm')
    ? ['-c:v', 'libvpx', '-b:v', '200k', '-deadline', 'realtime']
    : ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
  const source = `testsrc2=size=${o.width}x${o.height}:rate=${o.fps}:duration=${o.seconds}`;
  const title = ['-metadata', `title=${basename(path)}`];
  if (!o.rotate) {
    await runFfmpeg(['-f', 'lavfi', '-i', source, ...codec, ...title, path]);
    return path;
  }
  // A display-rotation tag sticks on a stream copy (not on an encode with this ffmpeg).
  const plain = `${path}.plain.mp4`;
  await runFfmpeg(['-f', 'lavfi', '-i', source, ...codec, plain]);
  await runFfmpeg(['-i', plain, '-c', 'copy', ...title, '-metadata:s:v:0', `rotate=${o.rotate}`, path]);
  await rm(plain, { force: true });
  return path;
}

/** Writes the first `fraction` of `src`'s bytes to `dst`. */
export async function truncated(src: string, dst: string, fraction: number): Promise<string> {
  const bytes = await readFile(src);
  await writeFile(dst, bytes.subarray(0, Math.floor(bytes.length * fraction)));
  return dst;
}

/** The first frame of a video as raw RGB, with its size. */
export async function firstFrame(videoPath: string, dir: string): Promise<sharp.Sharp> {
  const png = join(dir, `frame-${Math.random().toString(36).slice(2)}.png`);
  await runFfmpeg(['-i', videoPath, '-frames:v', '1', png]);
  return sharp(png);
}
