/**
 * Wire shapes the client reads and sends. File shapes come from src/spec (one definition for client
 * and emulator); generation shapes are written here from the interface's tables.
 */
import type {
  AspectRatio,
  GenerationType,
  ImageRef,
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
  Generation,
  GenerationOutput,
  ImageRef,
  Layer,
  LayerBounds,
  LegacyAssets,
  LegacyGeneration,
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

/** The body of POST {legacy}/generations/video/modify; generation_type defaults to modify_video. */
export type ModifyVideoInput = Omit<ModifyVideoRequest, 'generation_type'> & {
  generation_type?: 'modify_video';
};
