/**
 * Images with sharp: a new image for a prompt (deterministic shapes and gradients drawn as SVG), and an
 * edit of a source image (a visible colour transform, optionally cover-cropped to a new shape). libvips
 * streams the source; it never passes through JS memory.
 */
import sharp from 'sharp';
import { imageErrorFrom, readImageHeader } from '../../media/index.ts';
import { aspectValue, type FrameSize, imageFrameSize } from './frame-size.ts';
import { writeAtomically } from './output-file.ts';
import { pick, rngFor } from './seed.ts';
import type { RenderedImage } from './types.ts';

/** Shapes drawn per image, by model; unknown models draw the first entry's count. */
const SHAPES_PER_MODEL: Readonly<Record<string, number>> = { 'uni-1': 7, 'uni-1-max': 14 };

function hsl(h: number, s: number, l: number): string {
  return `hsl(${h.toFixed(1)},${s.toFixed(0)}%,${l.toFixed(0)}%)`;
}

/** The SVG of a prompt's image: a two-colour gradient and a few translucent shapes, all seeded. */
export function promptSvg(
  o: { prompt: string; aspectRatio: string; model: string; salt?: string },
  size: FrameSize,
): string {
  const rng = rngFor(o.salt ?? 'image', o.model, o.aspectRatio, o.prompt);
  const { width: w, height: h } = size;
  const hue = rng.next() * 360;
  const hue2 = (hue + 90 + rng.next() * 180) % 360;
  const angle = rng.next() * 360;
  const count = SHAPES_PER_MODEL[o.model] ?? 7;
  const m = Math.min(w, h);
  const shapes: string[] = [];
  for (let i = 0; i < count; i++) {
    const fill = hsl((hue + rng.between(-60, 60) + 360) % 360, rng.between(45, 90), rng.between(30, 80));
    const opacity = rng.between(0.35, 0.85).toFixed(2);
    const cx = rng.next() * w;
    const cy = rng.next() * h;
    const r = m * rng.between(0.06, 0.3);
    switch (pick(rng, 3)) {
      case 0:
        shapes.push(
          `<circle cx="${cx.toFixed(1)}" cy="${cy.toFixed(1)}" r="${r.toFixed(1)}" fill="${fill}" opacity="${opacity}"/>`,
        );
        break;
      case 1:
        shapes.push(
          `<rect x="${(cx - r).toFixed(1)}" y="${(cy - r * 0.6).toFixed(1)}" width="${(2 * r).toFixed(1)}" height="${(1.2 * r).toFixed(1)}" rx="${(r * 0.2).toFixed(1)}" fill="${fill}" opacity="${opacity}" transform="rotate(${(rng.next() * 90).toFixed(1)} ${cx.toFixed(1)} ${cy.toFixed(1)})"/>`,
        );
        break;
      default: {
        const pts = [0, 1, 2]
          .map((k) => {
            const a = (k * 2 * Math.PI) / 3 + rng.next();
            return `${(cx + r * Math.cos(a)).toFixed(1)},${(cy + r * Math.sin(a)).toFixed(1)}`;
          })
          .join(' ');
        shapes.push(`<polygon points="${pts}" fill="${fill}" opacity="${opacity}"/>`);
      }
    }
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">`,
    `<defs><linearGradient id="g" gradientTransform="rotate(${angle.toFixed(1)} 0.5 0.5)">`,
    `<stop offset="0" stop-color="${hsl(hue, 70, 40)}"/><stop offset="1" stop-color="${hsl(hue2, 75, 62)}"/>`,
    '</linearGradient></defs>',
    `<rect width="${w}" height="${h}" fill="url(#g)"/>`,
    ...shapes,
    '</svg>',
  ].join('');
}

/**
 * A new PNG image for a prompt at an aspect ratio (long side 1024 px, e.g. '16:9' → 1024x576,
 * '1:3' → 342x1024). The content is derived from a hash of model, aspect ratio and prompt, so the
 * same inputs give the same pixels.
 *
 * @param o.prompt the prompt text
 * @param o.aspectRatio 'W:H'
 * @param o.model the model id (uni-1-max draws more detail)
 * @param o.outPath where the PNG is written (atomically)
 * @example await renderImage({ prompt: 'a red fox', aspectRatio: '16:9', model: 'uni-1', outPath: 'out.png' })
 */
export async function renderImage(o: {
  prompt: string;
  aspectRatio: string;
  model: string;
  outPath: string;
}): Promise<RenderedImage> {
  const size = imageFrameSize(o.aspectRatio);
  const svg = promptSvg(o, size);
  await writeAtomically(o.outPath, (tmp) =>
    sharp(Buffer.from(svg))
      .resize(size.width, size.height, { fit: 'fill' })
      .removeAlpha()
      .png({ compressionLevel: 6 })
      .toFile(tmp),
  );
  return { path: o.outPath, mime: 'image/png', ...size };
}

/** Displayed size of an image (EXIF orientations 5..8 swap the sides). */
export function orientedSize(header: { width: number; height: number; orientation?: number }): FrameSize {
  const swap = (header.orientation ?? 1) >= 5;
  return swap
    ? { width: header.height, height: header.width }
    : { width: header.width, height: header.height };
}

/** The largest frame of shape `ratio` inside `size` (a centred cover crop keeps this much). */
export function coverCropSize(size: FrameSize, ratio: number): FrameSize {
  if (size.width / size.height > ratio) {
    return { width: Math.max(1, Math.round(size.height * ratio)), height: size.height };
  }
  return { width: size.width, height: Math.max(1, Math.round(size.width / ratio)) };
}

/**
 * An edit of a source image, written as PNG: a visible colour transform seeded by the prompt (a hue
 * rotation for colour sources, a tint for greyscale ones), at the source's displayed size, or
 * cover-cropped (centred) to `aspectRatio` when given.
 *
 * @param o.sourcePath the source image file
 * @param o.prompt the edit prompt (seeds the transform)
 * @param o.aspectRatio optional 'W:H' of the output
 * @param o.outPath where the PNG is written (atomically)
 * @throws MediaError (code corrupt / unsupported) when the source does not decode
 */
export async function editImage(o: {
  sourcePath: string;
  prompt: string;
  aspectRatio?: string;
  outPath: string;
}): Promise<RenderedImage> {
  const header = await readImageHeader(o.sourcePath);
  const source = orientedSize(header);
  const size = o.aspectRatio ? coverCropSize(source, aspectValue(o.aspectRatio)) : source;
  const rng = rngFor('image_edit', o.prompt);
  const hue = Math.round(90 + rng.next() * 180);
  const tint = {
    r: Math.round(rng.between(60, 255)),
    g: Math.round(rng.between(60, 255)),
    b: Math.round(rng.between(60, 255)),
  };
  // Greyscale (1 band, or 2 with alpha) has no hue to rotate: tint it instead.
  const colour = (header.channels ?? 3) >= 3;
  try {
    await writeAtomically(o.outPath, async (tmp) => {
      let img = sharp(o.sourcePath, { failOn: 'error' }).autoOrient();
      if (o.aspectRatio) img = img.resize(size.width, size.height, { fit: 'cover', position: 'centre' });
      img = colour ? img.modulate({ hue, saturation: 1.35 }) : img.pipelineColourspace('srgb').tint(tint);
      img = img.toColourspace('srgb');
      await img.png({ compressionLevel: 6 }).toFile(tmp);
    });
  } catch (err) {
    throw imageErrorFrom(err);
  }
  return { path: o.outPath, mime: 'image/png', ...size };
}
