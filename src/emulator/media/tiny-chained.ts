/**
 * Tiny outputs (config `tiny_outputs`) of requests that use earlier media: still minimal files, but
 * made of that media, so a chain stays checkable: an image_edit is its source scaled to 8×8; an edit
 * or reframe of a video has the source's frames (resampled to 24 fps, so its duration) at a short side
 * of 16 px, in the source's shape or the asked one; a video with a start and/or end frame is that
 * frame (or those two frames) at 16×16, or in the shape of the video it extends.
 */
import { rm, writeFile } from 'node:fs/promises';
import sharp from 'sharp';
import { imageErrorFrom, probeVideo } from '../../media/index.ts';
import { resampled } from './edit-video.ts';
import { encodeMp4, FPS, framesFor } from './encode.ts';
import { aspectValue, type FrameSize, frameForShortSide } from './frame-size.ts';
import { scratchPathFor, writeAtomically } from './output-file.ts';
import type { RenderedVideo } from './types.ts';

/** Side of a tiny image, and short side of a tiny video, px. */
export const TINY_IMAGE_SIDE = 8;
export const TINY_VIDEO_SIDE = 16;

/** Writes an 8×8 PNG of a source image (stretched to the square, like every tiny image). */
export async function writeTinyImageOf(
  sourcePath: string,
  outPath: string,
): Promise<{ path: string; mime: string }> {
  try {
    await writeAtomically(outPath, (tmp) =>
      sharp(sourcePath, { failOn: 'error' })
        .autoOrient()
        .resize(TINY_IMAGE_SIDE, TINY_IMAGE_SIDE, { fit: 'fill' })
        .flatten({ background: '#000000' })
        .png()
        .toFile(tmp),
    );
  } catch (err) {
    throw imageErrorFrom(err);
  }
  return { path: outPath, mime: 'image/png' };
}

/**
 * Writes a tiny MP4 of a source video: every frame of it (at 24 fps), short side 16 px, in the shape
 * of `aspectRatio`, or the source's own shape when none is given.
 * @throws MediaError (code corrupt / unsupported) when the source does not decode
 */
export async function writeTinyVideoOf(o: {
  sourcePath: string;
  aspectRatio?: string;
  outPath: string;
  signal?: AbortSignal;
}): Promise<RenderedVideo> {
  const probe = await probeVideo(o.sourcePath);
  const ratio = o.aspectRatio ? aspectValue(o.aspectRatio) : probe.width / probe.height;
  const size = frameForShortSide(TINY_VIDEO_SIDE, ratio);
  const frames = framesFor(probe.durationSeconds);
  return encodeMp4({
    inputArgs: ['-i', o.sourcePath],
    filterGraph: `[0:v]${resampled(frames)},scale=${size.width}:${size.height},setsar=1,format=yuv420p[v]`,
    frames,
    outPath: o.outPath,
    what: 'video could not be edited',
    signal: o.signal,
  });
}

/** Raw RGB of an image stretched to `size`. */
async function rgbOf(path: string, size: FrameSize): Promise<Buffer> {
  try {
    return await sharp(path, { failOn: 'error' })
      .autoOrient()
      .resize(size.width, size.height, { fit: 'fill' })
      .flatten({ background: '#000000' })
      .removeAlpha()
      .raw()
      .toBuffer();
  } catch (err) {
    throw imageErrorFrom(err);
  }
}

/**
 * Writes a tiny MP4 of anchor images, one frame each, in order (start frame, then end frame): the video
 * opens on the first and closes on the last. 16×16, or short side 16 in the shape of `aspectRatio`.
 */
export async function writeTinyAnchoredVideo(o: {
  anchorPaths: readonly string[];
  aspectRatio?: string;
  outPath: string;
  signal?: AbortSignal;
}): Promise<RenderedVideo> {
  const size = frameForShortSide(TINY_VIDEO_SIDE, o.aspectRatio ? aspectValue(o.aspectRatio) : 1);
  const raw = scratchPathFor(o.outPath, 'rgb');
  try {
    await writeFile(raw, Buffer.concat(await Promise.all(o.anchorPaths.map((p) => rgbOf(p, size)))));
    return await encodeMp4({
      inputArgs: [
        '-f',
        'rawvideo',
        '-pix_fmt',
        'rgb24',
        '-s',
        `${size.width}x${size.height}`,
        '-r',
        String(FPS),
        '-i',
        raw,
      ],
      filterGraph: '[0:v]setsar=1,format=yuv420p[v]',
      frames: o.anchorPaths.length,
      outPath: o.outPath,
      what: 'video could not be rendered',
      signal: o.signal,
    });
  } finally {
    await rm(raw, { force: true });
  }
}
