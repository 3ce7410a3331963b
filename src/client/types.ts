/**
 * Wire shapes the client reads and sends. File shapes come from src/spec (one definition for client
 * and emulator); generation shapes are written here from the interface's tables.
 */
import type {
  AlphaHint,
  AspectRatio,
  FailureCode,
  GenerationState,
  GenerationType,
  ImageRef,
  LegacyState,
  Model,
  ModifyVideoRequest,
  VideoOptions,
} from '../spec/index.ts';

export type {
  ApiFile,
  ApiFileList,
  CreateFileResponse,
  FilePurpose,
  FileState,
  ImageRef,
  ModifyVideoRequest,
  PresignedUpload,
  VideoOptions,
} from '../spec/index.ts';

/** The body of POST /v1/generations as the caller writes it (defaults are applied by the service). */
export interface GenerationRequest {
  type?: GenerationType;
  model?: Model;
  prompt?: string;
  aspect_ratio?: AspectRatio;
  style?: string;
  source?: ImageRef;
  image_ref?: ImageRef[];
  video?: VideoOptions;
  user_id?: string;
}

/** Where a layer's pixels sit in the full composite frame (names beyond these: not shown). */
export interface LayerBounds {
  canvas_width: number;
  canvas_height: number;
  x: number;
  y: number;
  height: number;
  width?: number;
  [field: string]: unknown;
}

/** One layer of a `layering` output. */
export interface Layer {
  alpha_hint: AlphaHint;
  description: string;
  index: number;
  bounds?: LayerBounds | null;
  [field: string]: unknown;
}

/** One output of a completed generation; `url` is presigned and expires (1 hour on the service). */
export interface GenerationOutput {
  type: string;
  url: string;
  layer?: Layer | null;
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
  assets: LegacyAssets;
  model: string;
  request: Record<string, unknown>;
}

/** The body of POST {legacy}/generations/video/modify; generation_type defaults to modify_video. */
export type ModifyVideoInput = Omit<ModifyVideoRequest, 'generation_type'> & {
  generation_type?: 'modify_video';
};
