/**
 * Reframe of an image to a target aspect ratio: the source (optionally cropped first) placed on a
 * canvas of the new shape — fitted and centred, or at the asked size and position — over a blurred,
 * darkened cover of itself. Also the jpg/png encode of a finished image.
 */
import sharp from 'sharp';
import { imageErrorFrom, readImageHeader } from '../../media/index.ts';
import { placeSource, reframeCanvas } from './edit-video.ts';
import { writeAtomically } from './output-file.ts';
import { orientedSize } from './render-image.ts';
import type { RenderedImage, SourcePosition } from './types.ts';

export interface ImageCrop {
  left: number;
  top: number;
  width: number;
  height: number;
}

/**
 * @param o.crop optional rectangle of the source kept (px of the source)
 * @param o.place optional size and top-left of the source on the canvas, px of the canvas
 * @param o.format 'jpg' or 'png'
 */
export async function reframeImage(o: {
  sourcePath: string;
  aspectRatio: string;
  crop?: ImageCrop;
  place?: { width?: number; height?: number; x?: number; y?: number };
  format: 'jpg' | 'png';
  outPath: string;
}): Promise<RenderedImage> {
  try {
    const header = await readImageHeader(o.sourcePath);
    let source = await sharp(o.sourcePath, { failOn: 'error' }).autoOrient().png().toBuffer();
    let size = orientedSize(header);
    if (o.crop) {
      const c = clampCrop(o.crop, size);
      source = await sharp(source).extract(c).png().toBuffer();
      size = { width: c.width, height: c.height };
    }
    const canvas = reframeCanvas(size, o.aspectRatio);
    const pos: SourcePosition = {};
    if (o.place?.width !== undefined) pos.w_norm = o.place.width / canvas.width;
    if (o.place?.height !== undefined) pos.h_norm = o.place.height / canvas.height;
    if (o.place?.x !== undefined) pos.x_norm = o.place.x / canvas.width;
    if (o.place?.y !== undefined) pos.y_norm = o.place.y / canvas.height;
    const p = placeSource(size, canvas, pos);
    const background = await sharp(source)
      .resize(canvas.width, canvas.height, { fit: 'cover' })
      .blur(20)
      .modulate({ brightness: 0.6 })
      .toBuffer();
    const fg = await sharp(source).resize(p.width, p.height, { fit: 'fill' }).toBuffer();
    // Only what lies on the canvas is composited (a placement may bleed off its edges).
    const left = Math.max(0, p.x);
    const top = Math.max(0, p.y);
    const visible = {
      left: left - p.x,
      top: top - p.y,
      width: Math.min(p.width - (left - p.x), canvas.width - left),
      height: Math.min(p.height - (top - p.y), canvas.height - top),
    };
    const layers =
      visible.width > 0 && visible.height > 0
        ? [{ input: await sharp(fg).extract(visible).toBuffer(), left, top }]
        : [];
    const composed = await sharp(background).composite(layers).png().toBuffer();
    return await encodeImage(composed, o.format, o.outPath);
  } catch (err) {
    throw imageErrorFrom(err);
  }
}

function clampCrop(c: ImageCrop, size: { width: number; height: number }): ImageCrop {
  const left = Math.min(c.left, size.width - 1);
  const top = Math.min(c.top, size.height - 1);
  return {
    left,
    top,
    width: Math.max(1, Math.min(c.width, size.width - left)),
    height: Math.max(1, Math.min(c.height, size.height - top)),
  };
}

/**
 * Writes an image (a file path or bytes) as JPEG or PNG at `outPath`, atomically.
 * @example await encodeImage('render.png', 'jpg', 'output.jpg')
 */
export async function encodeImage(
  input: string | Buffer,
  format: 'jpg' | 'png',
  outPath: string,
): Promise<RenderedImage> {
  const img = sharp(input).removeAlpha();
  const meta = await sharp(input).metadata();
  await writeAtomically(outPath, (tmp) =>
    (format === 'jpg' ? img.jpeg({ quality: 85 }) : img.png({ compressionLevel: 6 })).toFile(tmp),
  );
  return {
    path: outPath,
    mime: format === 'jpg' ? 'image/jpeg' : 'image/png',
    width: meta.width ?? 0,
    height: meta.height ?? 0,
  };
}
