/**
 * STUB — real media outputs of the emulator: images with sharp, videos with ffmpeg.
 * Every function writes its output files and returns what it wrote.
 */
import type { AlphaHint } from '../../spec/index.ts';

export interface RenderedImage {
  path: string;
  mime: string;
  width: number;
  height: number;
}

export interface RenderedVideo {
  path: string;
  mime: string;
  width: number;
  height: number;
  durationSeconds: number;
}

export interface RenderedLayer {
  path: string;
  alpha_hint: AlphaHint;
  description: string;
  index: number;
  bounds: {
    canvas_width: number;
    canvas_height: number;
    x: number;
    y: number;
    width: number;
    height: number;
  };
}

/** A new image for a prompt at an aspect ratio (e.g. '16:9'); deterministic for the same inputs. */
export async function renderImage(_o: {
  prompt: string;
  aspectRatio: string;
  model: string;
  outPath: string;
}): Promise<RenderedImage> {
  throw new Error('not implemented');
}

/** An edit of a source image: same frame shape unless aspectRatio is given. */
export async function editImage(_o: {
  sourcePath: string;
  prompt: string;
  aspectRatio?: string;
  outPath: string;
}): Promise<RenderedImage> {
  throw new Error('not implemented');
}

/**
 * A layer stack of the source image: output order is front to back (the last entry is the opaque
 * background); pasting them back to front at (x, y) on a transparent canvas rebuilds the source exactly.
 */
export async function layerStack(_o: { sourcePath: string; outDir: string }): Promise<RenderedLayer[]> {
  throw new Error('not implemented');
}

/** A new video: duration '5s' | '10s' at 24 fps, aspect ratio, resolution ('360p'..'1080p', the short side). */
export async function renderVideo(_o: {
  prompt: string;
  aspectRatio: string;
  duration: string;
  resolution: string;
  outPath: string;
  startFramePath?: string;
  endFramePath?: string;
}): Promise<RenderedVideo> {
  throw new Error('not implemented');
}

/** A video edit: keeps the source duration; resolution defaults to the source's. */
export async function editVideo(_o: {
  sourcePath: string;
  prompt: string;
  resolution?: string;
  outPath: string;
}): Promise<RenderedVideo> {
  throw new Error('not implemented');
}

/** A reframe: the output has the target aspect ratio's frame shape and the source's duration. */
export async function reframeVideo(_o: {
  sourcePath: string;
  aspectRatio: string;
  resolution?: string;
  outPath: string;
  sourcePosition?: { x_norm?: number; y_norm?: number; w_norm?: number; h_norm?: number };
}): Promise<RenderedVideo> {
  throw new Error('not implemented');
}
