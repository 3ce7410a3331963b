/**
 * STUB — implemented by the spec change. The signatures below are the contract other parts code against.
 */
import type { AspectRatio, GenerationType, Model, VideoDuration, VideoResolution } from './enums.ts';

/** An ImageRef as sent: exactly one of url, data, file_id, generation_id. */
export interface ImageRef {
  url?: string;
  data?: string;
  media_type?: string;
  file_id?: string;
  generation_id?: string;
}

/** What a media reference must be: an image position, or the source of video_edit / video_reframe. */
export type MediaPosition = 'image' | 'video_source' | 'image_edit_source';

/** A media reference found in a request, with its detail path (source, image_ref[2], video.start_frame, ...). */
export interface MediaRefSite {
  path: string;
  ref: ImageRef;
  position: MediaPosition;
}

/** Facts about resolved media, keyed by path, used for the 413 checks and the duration limits. */
export interface MediaFacts {
  bytes: number;
  width?: number;
  height?: number;
  durationSeconds?: number;
  /** MIME type of the real bytes. */
  mime?: string;
}

export interface Rejection {
  status: 400 | 413 | 422;
  detail: string;
}

/** The request with defaults applied (type, model, aspect ratio, video duration and resolution). */
export interface NormalizedGenerationRequest {
  type: GenerationType;
  model: Model;
  prompt?: string;
  aspect_ratio?: AspectRatio;
  style?: string;
  source?: ImageRef;
  image_ref?: ImageRef[];
  video?: Record<string, unknown> & { duration?: VideoDuration; resolution?: VideoResolution };
  user_id?: string;
}

export type ValidationResult =
  | { ok: true; request: NormalizedGenerationRequest }
  | ({ ok: false } & Rejection);

export function validateGenerationRequest(
  _body: unknown,
  _media?: Readonly<Record<string, MediaFacts>>,
): ValidationResult {
  throw new Error('not implemented');
}

export function listMediaRefs(_request: NormalizedGenerationRequest): MediaRefSite[] {
  throw new Error('not implemented');
}
