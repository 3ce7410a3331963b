/**
 * A layer stack of a source image: foreground layers cut out with binary alpha masks and cropped to
 * their visible-alpha bounding box, over an opaque background whose pixels under the cut-outs are
 * "filled in" (a coarse blur of the region). Foreground alpha is exactly 0 or 255, and foreground RGB
 * is the source RGB, so pasting the layers back to front at (x, y) rebuilds the source exactly.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { imageErrorFrom, readImageHeader } from '../../media/index.ts';
import type { AlphaHint } from '../../spec/index.ts';
import { scratchPathFor, writeAtomically } from './output-file.ts';
import { orientedSize } from './render-image.ts';
import type { RenderedLayer } from './types.ts';

/**
 * A binary mask cropped to its own bounding box: `data` holds width*height bytes of 0 or 255 (one
 * byte per pixel of the box: the only per-pixel data of a layer stack that lives in JS memory).
 */
export interface CroppedMask {
  x: number;
  y: number;
  width: number;
  height: number;
  data: Buffer;
}

/** A shape in normalized canvas coordinates (centre and half-sizes as fractions of the sides). */
interface ShapeSpec {
  kind: 'ellipse' | 'rounded-rect';
  cx: number;
  cy: number;
  rx: number;
  ry: number;
  alpha_hint: Exclude<AlphaHint, 'none'>;
  description: string;
}

/** The foreground shapes, front first. */
const FOREGROUND: readonly ShapeSpec[] = [
  {
    kind: 'rounded-rect',
    cx: 0.2,
    cy: 0.2,
    rx: 0.13,
    ry: 0.11,
    alpha_hint: 'hard',
    description: 'foreground object (solid edges)',
  },
  {
    kind: 'ellipse',
    cx: 0.55,
    cy: 0.58,
    rx: 0.28,
    ry: 0.33,
    alpha_hint: 'soft',
    description: 'main subject (soft edges)',
  },
];
const BACKGROUND_DESCRIPTION = 'background (filled in behind the foreground)';

/** Whether pixel (px, py) of a W x H canvas lies inside the shape (tested at the pixel's centre). */
function inside(s: ShapeSpec, w: number, h: number, px: number, py: number): boolean {
  const dx = (px + 0.5 - s.cx * w) / (s.rx * w);
  const dy = (py + 0.5 - s.cy * h) / (s.ry * h);
  if (s.kind === 'ellipse') return dx * dx + dy * dy <= 1;
  // Rounded rectangle: a superellipse of degree 6 (square-ish with rounded corners).
  return dx ** 6 + dy ** 6 <= 1;
}

/**
 * The binary mask of a shape on a W x H canvas, cropped to its bounding box. Never empty: a shape that
 * covers no pixel centre (tiny canvases) becomes the single pixel under its centre.
 */
export function shapeMask(s: ShapeSpec, w: number, h: number): CroppedMask {
  const x0 = Math.max(0, Math.floor((s.cx - s.rx) * w));
  const x1 = Math.min(w, Math.ceil((s.cx + s.rx) * w));
  const y0 = Math.max(0, Math.floor((s.cy - s.ry) * h));
  const y1 = Math.min(h, Math.ceil((s.cy + s.ry) * h));
  let minX = w;
  let minY = h;
  let maxX = -1;
  let maxY = -1;
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      if (!inside(s, w, h, x, y)) continue;
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
  }
  if (maxX < 0) {
    const x = Math.min(w - 1, Math.floor(s.cx * w));
    const y = Math.min(h - 1, Math.floor(s.cy * h));
    return { x, y, width: 1, height: 1, data: Buffer.from([255]) };
  }
  const width = maxX - minX + 1;
  const height = maxY - minY + 1;
  const data = Buffer.alloc(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (inside(s, w, h, minX + x, minY + y)) data[y * width + x] = 255;
    }
  }
  return { x: minX, y: minY, width, height, data };
}

/** A region of the image as an RGBA PNG whose alpha is the mask. */
function cutOut(normPath: string, m: CroppedMask): sharp.Sharp {
  return sharp(normPath)
    .extract({ left: m.x, top: m.y, width: m.width, height: m.height })
    .joinChannel(m.data, { raw: { width: m.width, height: m.height, channels: 1 } });
}

/**
 * Writes the "filled-in" patch behind a cut-out to `path`: the region shrunk 12x and enlarged back,
 * with the cut-out's mask as alpha. Only the 1/144-size thumbnail passes through JS memory.
 */
async function writeFillPatch(normPath: string, m: CroppedMask, path: string): Promise<void> {
  const small = await sharp(normPath)
    .extract({ left: m.x, top: m.y, width: m.width, height: m.height })
    .resize(Math.max(1, Math.ceil(m.width / 12)), Math.max(1, Math.ceil(m.height / 12)), { fit: 'fill' })
    .png({ compressionLevel: 1 })
    .toBuffer();
  await sharp(small)
    .resize(m.width, m.height, { fit: 'fill' })
    .joinChannel(m.data, { raw: { width: m.width, height: m.height, channels: 1 } })
    .png({ compressionLevel: 1 })
    .toFile(path);
}

/**
 * A layer stack of the source image, written as RGBA PNGs `layer-<index>.png` in `outDir`. Output
 * order is front to back: foreground layers first (alpha_hint 'hard' or 'soft', cropped to their
 * visible-alpha bounding box), the opaque full-canvas background (alpha_hint 'none') last. Pasting them
 * back to front at (bounds.x, bounds.y) on a transparent canvas_width x canvas_height canvas rebuilds
 * the source's RGB exactly (as decoded to 8-bit sRGB, after EXIF orientation).
 *
 * @param o.sourcePath the source image file
 * @param o.outDir directory for the layer files (created when missing)
 * @throws MediaError (code corrupt / unsupported) when the source does not decode
 */
export async function layerStack(o: { sourcePath: string; outDir: string }): Promise<RenderedLayer[]> {
  const header = await readImageHeader(o.sourcePath);
  const { width: W, height: H } = orientedSize(header);
  await mkdir(o.outDir, { recursive: true });
  // One normalized copy (oriented, 8-bit sRGB, no alpha) that every layer is cut from.
  const normPath = scratchPathFor(join(o.outDir, 'source'), 'png');
  const scratch = [normPath];
  try {
    await sharp(o.sourcePath, { failOn: 'error' })
      .autoOrient()
      .removeAlpha()
      .toColourspace('srgb')
      .png({ compressionLevel: 1 })
      .toFile(normPath);
    const masks = FOREGROUND.map((s) => shapeMask(s, W, H));
    const layers: RenderedLayer[] = [];
    for (const [i, spec] of FOREGROUND.entries()) {
      const m = masks[i]!;
      const path = join(o.outDir, `layer-${i}.png`);
      await writeAtomically(path, (tmp) => cutOut(normPath, m).png().toFile(tmp));
      layers.push({
        path,
        alpha_hint: spec.alpha_hint,
        description: spec.description,
        index: i,
        bounds: { canvas_width: W, canvas_height: H, x: m.x, y: m.y, width: m.width, height: m.height },
      });
    }
    // Background: the image, opaque, with each foreground region filled in (back to front, like a paint).
    const patches: sharp.OverlayOptions[] = [];
    for (let i = masks.length - 1; i >= 0; i--) {
      const m = masks[i]!;
      const patchPath = scratchPathFor(join(o.outDir, `patch-${i}`), 'png');
      scratch.push(patchPath);
      await writeFillPatch(normPath, m, patchPath);
      patches.push({ input: patchPath, left: m.x, top: m.y });
    }
    const bgIndex = FOREGROUND.length;
    const bgPath = join(o.outDir, `layer-${bgIndex}.png`);
    await writeAtomically(bgPath, (tmp) =>
      sharp(normPath).ensureAlpha(1).composite(patches).png().toFile(tmp),
    );
    layers.push({
      path: bgPath,
      alpha_hint: 'none',
      description: BACKGROUND_DESCRIPTION,
      index: bgIndex,
      bounds: { canvas_width: W, canvas_height: H, x: 0, y: 0, width: W, height: H },
    });
    return layers;
  } catch (err) {
    throw imageErrorFrom(err);
  } finally {
    await Promise.all(scratch.map((p) => rm(p, { force: true })));
  }
}
