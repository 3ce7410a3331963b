/**
 * The bodies of the legacy creates as a caller writes them (generation_type optional: each path has
 * its own), and the answers of the legacy reads. Written from the interface's shapes; the values are
 * checked by the src/spec validators (legacy-requests.ts) before anything is sent.
 */
import type {
  LEGACY_ASPECT_RATIOS,
  LEGACY_IMAGE_MODELS,
  LEGACY_VIDEO_MODELS,
  LegacyGeneration,
  LegacyReframeGeometry,
} from '../../spec/index.ts';

export type LegacyVideoModel = (typeof LEGACY_VIDEO_MODELS)[number];
export type LegacyImageModel = (typeof LEGACY_IMAGE_MODELS)[number];
export type LegacyAspectRatio = (typeof LEGACY_ASPECT_RATIOS)[number];

/** An http(s) URL the service fetches. */
export interface LegacyMediaInput {
  url: string;
}

/** A first or last frame: an image by URL, or one of your completed generations. */
export type LegacyKeyframe = { type: 'image'; url: string } | { type: 'generation'; id: string };

/** POST {legacy}/generations/video (GenerationRequest). */
export interface LegacyVideoInput {
  generation_type?: 'video';
  prompt?: string;
  aspect_ratio?: LegacyAspectRatio;
  loop?: boolean;
  keyframes?: { frame0?: LegacyKeyframe; frame1?: LegacyKeyframe };
  callback_url?: string;
  model?: LegacyVideoModel;
  resolution?: string;
  duration?: string;
  concepts?: { key: string }[];
}

/** `{ url, weight }` of an image reference. */
export interface LegacyWeightedRef {
  url: string;
  weight?: number;
}

/** POST {legacy}/generations/image (ImageGenerationRequest); `sync` waits up to sync_timeout s. */
export interface LegacyImageInput {
  generation_type?: 'image';
  model?: LegacyImageModel;
  prompt?: string;
  aspect_ratio?: LegacyAspectRatio;
  format?: 'jpg' | 'png';
  callback_url?: string;
  image_ref?: LegacyWeightedRef[];
  style_ref?: LegacyWeightedRef[];
  character_ref?: Record<string, { images: string[] }>;
  modify_image_ref?: LegacyWeightedRef;
  sync?: boolean;
  sync_timeout?: number;
}

/** POST {legacy}/generations/image/reframe (ReframeImageRequest). */
export interface LegacyReframeImageInput extends LegacyReframeGeometry {
  generation_type?: 'reframe_image';
  media: LegacyMediaInput;
  aspect_ratio: LegacyAspectRatio;
  model: LegacyImageModel;
  prompt?: string;
  format?: 'jpg' | 'png';
  callback_url?: string;
}

/** POST {legacy}/generations/video/reframe (ReframeVideoRequest). */
export interface LegacyReframeVideoInput extends LegacyReframeGeometry {
  generation_type?: 'reframe_video';
  media: LegacyMediaInput;
  aspect_ratio: LegacyAspectRatio;
  model: LegacyVideoModel;
  first_frame?: LegacyMediaInput;
  prompt?: string;
  callback_url?: string;
}

/** POST {legacy}/generations/{id}/upscale (UpscaleVideoGenerationRequest). */
export interface LegacyUpscaleInput {
  generation_type?: 'upscale_video';
  resolution?: string;
  callback_url?: string;
}

/** POST {legacy}/generations/{id}/audio (AudioGenerationRequest). */
export interface LegacyAudioInput {
  generation_type?: 'add_audio';
  prompt?: string;
  negative_prompt?: string;
  callback_url?: string;
}

/** One page of GET {legacy}/generations (newest first). */
export interface LegacyGenerationList {
  generations: LegacyGeneration[];
  count: number;
  has_more: boolean;
  limit: number;
  offset: number;
}

/** GET {legacy}/credits: the balance in US cents. */
export interface LegacyCredits {
  credit_balance: number;
}

/** Options of every legacy create. */
export interface LegacyCreateOptions {
  /** X-Request-Id to send (a fresh UUID by default). */
  requestId?: string;
  signal?: AbortSignal;
}
