/** What the emulator's renderers return: the files they wrote and their shape. */
import type { AlphaHint, LayerBounds } from '../../spec/index.ts';

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
  /** Number of frames written (24 per second). */
  frames?: number;
}

export type { LayerBounds } from '../../spec/index.ts';

export interface RenderedLayer {
  path: string;
  alpha_hint: AlphaHint;
  description: string;
  index: number;
  bounds: LayerBounds;
}

/** Normalized rectangle of the source inside a reframe's output canvas (fractions of its sides). */
export interface SourcePosition {
  x_norm?: number;
  y_norm?: number;
  w_norm?: number;
  h_norm?: number;
}
