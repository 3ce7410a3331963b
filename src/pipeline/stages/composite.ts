/**
 * Compositing a downloaded layer stack into `composite.png`: each layer pasted at (bounds.x, bounds.y)
 * on a transparent canvas_width x canvas_height canvas, back to front (the service's output list is
 * front to back, so it is iterated in reverse). libvips reads the layer files and writes the PNG in
 * strips: no layer's pixels are held in JS memory.
 */
import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, rename, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import sharp from 'sharp';
import { LocalWriteError } from '../../client/index.ts';
import { imageErrorFrom, readImageHeader } from '../../media/index.ts';
import { currentStep, type Item, type LayerBounds, withStep } from '../item.ts';
import { failStep } from '../stage.ts';

/** File name of a layer stack's composite, written next to the layers. */
export const COMPOSITE_FILE = 'composite.png';

/**
 * Largest canvas side accepted from layer bounds (sharp's default input-pixel limit is 16383²): a
 * bigger canvas is refused rather than allocated.
 */
export const MAX_CANVAS_SIDE = 16_384;

/** Words that start the reason of an item whose layer stack could not be composited. */
export const COMPOSITE_FAILED = 'layer stack could not be composited';

/** The composite failed; `message` is a plain reason (no absolute paths). */
export class CompositeError extends Error {
  override name = 'CompositeError';
}

/** One layer to paste: its file and where it sits (null bounds: a full-frame layer at (0, 0)). */
export interface LayerToPaste {
  /** Absolute path of the layer image. */
  file: string;
  bounds: LayerBounds | null;
}

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

function layerName(l: LayerToPaste): string {
  return basename(l.file);
}

/**
 * The canvas size of a stack: the bounds' canvas_width x canvas_height, which every layer that has
 * bounds must agree on; when no layer has bounds, the largest layer size (every layer at (0, 0)).
 */
function canvasOf(
  layers: readonly LayerToPaste[],
  sizes: readonly { width: number; height: number }[],
): { width: number; height: number } {
  let canvas: { width: number; height: number } | null = null;
  for (const l of layers) {
    if (!l.bounds) continue;
    const { canvas_width: w, canvas_height: h } = l.bounds;
    if (!isInt(w) || !isInt(h) || w < 1 || h < 1) {
      throw new CompositeError(
        `${layerName(l)}: bounds.canvas_width and canvas_height must be positive integers`,
      );
    }
    if (canvas && (canvas.width !== w || canvas.height !== h)) {
      throw new CompositeError(
        `layers disagree on the canvas size (${canvas.width}x${canvas.height} and ${w}x${h})`,
      );
    }
    canvas = { width: w, height: h };
  }
  canvas ??= {
    width: Math.max(...sizes.map((s) => s.width)),
    height: Math.max(...sizes.map((s) => s.height)),
  };
  if (canvas.width > MAX_CANVAS_SIDE || canvas.height > MAX_CANVAS_SIDE) {
    throw new CompositeError(
      `canvas ${canvas.width}x${canvas.height} is larger than ${MAX_CANVAS_SIDE} px a side`,
    );
  }
  return canvas;
}

/**
 * Writes the composite of `layers` (given front to back, as the service lists them) to `outPath`:
 * pasted back to front at (x, y) on a transparent canvas, as RGBA PNG. The file is written to
 * `<outPath>.part` and renamed, so `outPath` is either absent or complete. A layer that reaches past
 * the canvas is clipped to it; one wholly outside is left out.
 *
 * @param layers front to back; `file` absolute, `bounds.canvas_width`/`canvas_height` shared by all
 * @param outPath absolute path of the PNG to write
 * @returns the canvas size
 * @throws CompositeError with a plain reason when a layer is missing or undecodable or the bounds are unusable
 * @example await compositeLayers([{ file: '/out/a.png/layer-0.png', bounds }, ...], '/out/a.png/composite.png');
 */
export async function compositeLayers(
  layers: readonly LayerToPaste[],
  outPath: string,
): Promise<{ width: number; height: number }> {
  if (layers.length === 0) throw new CompositeError('the stack has no layers');
  const sizes: { width: number; height: number }[] = [];
  for (const l of layers) {
    try {
      const h = await readImageHeader(l.file);
      sizes.push({ width: h.width, height: h.height });
    } catch (err) {
      throw new CompositeError(`${layerName(l)}: ${imageErrorFrom(err).message}`);
    }
  }
  const canvas = canvasOf(layers, sizes);
  const part = `${outPath}.part`;
  const scratch: string[] = [];
  try {
    const overlays: sharp.OverlayOptions[] = [];
    // Back to front: the last output is the bottom of the stack.
    for (let i = layers.length - 1; i >= 0; i--) {
      const l = layers[i]!;
      const size = sizes[i]!;
      const x = l.bounds ? l.bounds.x : 0;
      const y = l.bounds ? l.bounds.y : 0;
      if (!isInt(x) || !isInt(y)) {
        throw new CompositeError(`${layerName(l)}: bounds.x and bounds.y must be integers`);
      }
      // The part of the layer that lies on the canvas.
      const left = Math.max(0, x);
      const top = Math.max(0, y);
      const right = Math.min(canvas.width, x + size.width);
      const bottom = Math.min(canvas.height, y + size.height);
      if (right <= left || bottom <= top) continue;
      const whole = left === x && top === y && right - left === size.width && bottom - top === size.height;
      if (whole) {
        overlays.push({ input: l.file, left, top });
        continue;
      }
      const clipped = `${outPath}.${randomUUID().slice(0, 8)}.clip.part`;
      scratch.push(clipped);
      await sharp(l.file)
        .extract({ left: left - x, top: top - y, width: right - left, height: bottom - top })
        .png({ compressionLevel: 1 })
        .toFile(clipped);
      overlays.push({ input: clipped, left, top });
    }
    await sharp({
      create: {
        width: canvas.width,
        height: canvas.height,
        channels: 4,
        background: { r: 0, g: 0, b: 0, alpha: 0 },
      },
    })
      .composite(overlays)
      .png()
      .toFile(part);
    await rename(part, outPath);
    return canvas;
  } catch (err) {
    await rm(part, { force: true });
    if (err instanceof CompositeError) throw err;
    // The disk refused the composite (full, read-only): the machine's failure, not the layers'.
    const refused = LocalWriteError.from(err, outPath) ?? (await refusedWrite(err, dirname(outPath)));
    if (refused) throw refused;
    throw new CompositeError(imageErrorFrom(err).message);
  } finally {
    await Promise.all(scratch.map((p) => rm(p, { force: true })));
  }
}

/** `rel` (a path relative to `outDir`, '/' separated) as an absolute path that stays inside `outDir`. */
function insideOut(outDir: string, rel: string): string {
  const root = resolve(outDir);
  const abs = resolve(root, rel);
  const back = relative(root, abs);
  if (isAbsolute(rel) || back === '' || back.startsWith('..') || isAbsolute(back)) {
    throw new CompositeError(`layer path '${rel}' is not inside the out dir`);
  }
  return abs;
}

/**
 * Composites the layer stack of an item's current step (its `layers`, in the service's order, front to back) into
 * `composite.png` next to the first layer, and records it in the step's `composite` (relative to the out
 * dir). An item without layers is returned unchanged. When the stack cannot be composited the item
 * fails at the download stage with the reason "layer stack could not be composited: <why>".
 *
 * @param item a downloaded item; its step's `layers[].path` are relative to `outDir`
 * @param outDir the batch's out dir
 * @returns a new item (the input is not modified)
 * @example item = await composite(item, '/data/out');
 */
export async function composite(item: Item, outDir: string): Promise<Item> {
  const layers = currentStep(item)?.layers ?? [];
  if (layers.length === 0) return item;
  try {
    const toPaste = layers.map((l) => ({ file: insideOut(outDir, l.path), bounds: l.bounds ?? null }));
    const outPath = join(dirname(toPaste[0]!.file), COMPOSITE_FILE);
    await compositeLayers(toPaste, outPath);
    return withStep(item, { composite: relative(resolve(outDir), outPath).split(sep).join('/') });
  } catch (err) {
    if (err instanceof LocalWriteError) throw err; // the runner's: the out dir refuses writes
    const why = err instanceof CompositeError ? err.message : imageErrorFrom(err).message;
    return failStep(item, 'download', `${COMPOSITE_FAILED}: ${why}`);
  }
}

/**
 * sharp says a refused write only in words (libvips: "No space left on device", "Read-only file
 * system", "Permission denied"): such an error as the LocalWriteError of `dir`, else null. A refusal
 * is confirmed by asking whether the folder may be written.
 */
async function refusedWrite(err: unknown, dir: string): Promise<LocalWriteError | null> {
  const text = err instanceof Error ? err.message : String(err);
  if (/no space left on device/i.test(text)) return new LocalWriteError('ENOSPC', dir, err);
  if (/disk quota exceeded/i.test(text)) return new LocalWriteError('EDQUOT', dir, err);
  if (!/read-only file system|permission denied/i.test(text)) return null;
  const denied = await access(dir, constants.W_OK).then(
    () => null,
    (e: unknown) => e,
  );
  return denied === null ? null : LocalWriteError.from(denied, dir);
}
