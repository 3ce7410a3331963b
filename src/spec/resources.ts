/**
 * The response resources of both surfaces as types: one definition that the emulator writes and the
 * client reads. (File shapes are in files.ts.)
 */
import type { AlphaHint, FailureCode, GenerationState, GenerationType, LegacyState } from './enums.ts';

/**
 * Where a layer's pixels sit in the full composite frame. The interface names canvas_width,
 * canvas_height, height, x and y; `width` is our name for the remaining field.
 */
export interface LayerBounds {
  canvas_width: number;
  canvas_height: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One layer of a `layering` output. The interface's further, unnamed layer field is not modelled. */
export interface Layer {
  alpha_hint: AlphaHint;
  description: string;
  /** Position in the output list, 0 = front. */
  index: number;
  bounds: LayerBounds | null;
}

/** One output of a completed generation; `url` is a presigned storage URL that expires. */
export interface GenerationOutput {
  /** image, video, or layering. */
  type: string;
  url: string;
  layer: Layer | null;
}

/** A generation of the agents surface. */
export interface Generation {
  id: string;
  type: GenerationType;
  state: GenerationState;
  model: string;
  created_at: string;
  output: GenerationOutput[];
  failure_reason: string | null;
  failure_code: FailureCode | null;
}

/** Assets of a legacy generation (each an absolute URL). */
export interface LegacyAssets {
  video?: string;
  image?: string;
  progress_video?: string;
}

/** A generation of the legacy surface. */
export interface LegacyGeneration {
  id: string;
  generation_type: 'video' | 'image';
  state: LegacyState;
  failure_reason: string | null;
  created_at: string;
  /** null until the generation has completed (LEGACY_CHOICES.assetsUntilCompleted). */
  assets: LegacyAssets | null;
  model: string;
  request: Record<string, unknown>;
}
