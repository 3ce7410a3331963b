/**
 * The shape of a POST /v1/generations request as genpipe and the emulator hold it: the ImageRef and
 * video options as sent, the request with defaults applied, the media reference sites and facts, and
 * the rejection the service gives. validate-generation.ts checks requests against these.
 */
import type {
  AspectRatio,
  EDIT_CONTROL_SIGNALS,
  GenerationType,
  Model,
  VideoDuration,
  VideoResolution,
} from './enums.ts';
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

/** video.source_position: the source rectangle inside the output canvas, in canvas fractions. */
export interface SourcePosition {
  /** Fraction of canvas height, in (0, 2.0]. */
  h_norm: number;
  /** Fraction of canvas width, in (0, 2.0]. */
  w_norm: number;
  x_norm: number;
  y_norm: number;
}

/** One signal of video.edit.controls. Only `enabled` is named by the interface; other keys pass through. */
export interface EditControlSignal extends Record<string, unknown> {
  enabled?: boolean;
}

/** video.edit (video_edit only). */
export interface VideoEditOptions {
  auto_controls?: boolean;
  /** Keyed by signal name (EDIT_CONTROL_SIGNALS). */
  controls?: Partial<Record<(typeof EDIT_CONTROL_SIGNALS)[number], EditControlSignal>>;
  /** A number in CHOICES.editStrength (our choice). */
  strength?: number;
  keyframes?: ImageRef[];
  keyframe_indexes?: number[];
}

/** The `video` object of a generation request. */
export interface VideoOptions extends Record<string, unknown> {
  duration?: VideoDuration;
  resolution?: VideoResolution;
  hdr?: boolean;
  exr_export?: boolean;
  loop?: boolean;
  start_frame?: ImageRef;
  end_frame?: ImageRef;
  guide_frame?: ImageRef;
  keyframes?: ImageRef[];
  keyframe_indexes?: number[];
  source_position?: SourcePosition;
  edit?: VideoEditOptions;
}

/**
 * The request with defaults applied: type, model, aspect ratio (image 1:1, video 16:9; image_edit and
 * video_edit follow their source), and for the video types a `video` object with resolution (and, on type
 * video, duration) filled in.
 */
export interface NormalizedGenerationRequest {
  type: GenerationType;
  model: Model;
  prompt?: string;
  aspect_ratio?: AspectRatio;
  style?: string;
  source?: ImageRef;
  image_ref?: ImageRef[];
  video?: VideoOptions;
  user_id?: string;
}

export type ValidationResult =
  | { ok: true; request: NormalizedGenerationRequest }
  | ({ ok: false } & Rejection);
