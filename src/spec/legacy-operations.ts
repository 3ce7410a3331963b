/**
 * The legacy surface's operations as the public SDKs (`lumaai`, `@ai-sdk/luma`) call them, and the
 * choices the interface leaves open for them ("not shown": paths, status codes, the sync timeout, costs,
 * the concepts list). Paths are relative to LEGACY_BASE_PATH; `:id` is a generation id.
 */
import type { GenerationType } from './enums.ts';

export const LEGACY_PATHS = {
  ping: '/ping',
  credits: '/credits',
  list: '/generations',
  get: '/generations/:id',
  delete: '/generations/:id',
  concepts: '/generations/concepts/list',
  /** lumaai's `generations.create` and `generations.video.create` both post here. */
  video: '/generations/video',
  modify: '/generations/video/modify',
  reframeVideo: '/generations/video/reframe',
  /** lumaai's `generations.image.create` and @ai-sdk/luma's `generateImage`. */
  image: '/generations/image',
  reframeImage: '/generations/image/reframe',
  upscale: '/generations/:id/upscale',
  audio: '/generations/:id/audio',
} as const;

/** Each request's generation_type: the Generation's own generation_type and the internal cost type. */
export const LEGACY_OPERATIONS = {
  video: { generationType: 'video', costType: 'video' },
  image: { generationType: 'image', costType: 'image' },
  modify_video: { generationType: 'video', costType: 'video_edit' },
  reframe_video: { generationType: 'video', costType: 'video_reframe' },
  reframe_image: { generationType: 'image', costType: 'image_edit' },
  upscale_video: { generationType: 'video', costType: 'video_edit' },
  add_audio: { generationType: 'video', costType: 'video_edit' },
} as const satisfies Record<string, { generationType: 'video' | 'image'; costType: GenerationType }>;

export type LegacyRequestType = keyof typeof LEGACY_OPERATIONS;

/** Decisions for the operations beyond modify (the interface gives shapes, not paths or behaviour). */
export const LEGACY_OPERATION_CHOICES = {
  /** Every create (async or sync) answers 201 with the Generation. */
  createStatus: 201,
  /** DELETE answers 204 with no body; the generation and its outputs are gone (GET is then 404). */
  deleteStatus: 204,
  /** `GET /ping` answers this body. */
  pingBody: { message: 'pong' },
  /**
   * `sync_timeout` is in seconds (default 60). A sync image create waits for the generation to end; when
   * the time runs out first it answers 201 with the generation as it stands (queued or dreaming), which
   * the caller then polls like an async one — no error, nothing is cancelled.
   */
  syncTimeoutDefaultSeconds: 60,
  /** Longest sync wait accepted (seconds); larger values are clipped to it. */
  syncTimeoutMaxSeconds: 600,
  /** `GET /generations` without `limit` lists this many; `limit` is 1..100, `offset` ≥ 0; newest first. */
  listDefaultLimit: 10,
  listMaxLimit: 100,
  /**
   * `GET /credits` answers the client's balance as `credit_balance`, in USD cents as the lumaai SDK
   * documents: one emulator credit is one cent, so the number is the configured balance as is.
   */
  creditUnit: 'usd_cents',
  /** Output format of video outputs and images when `format` is not sent. */
  defaultImageFormat: 'jpg',
  /** Default video shape when the request does not say. */
  defaultAspectRatio: '16:9',
  defaultResolution: '720p',
  defaultDuration: '5s',
  /** Resolution of an upscale that sends none. */
  defaultUpscaleResolution: '1080p',
  /**
   * The @ai-sdk/luma provider sends an image's references as `image`, `style`, `character` and
   * `modify_image`: accepted as the interface's `image_ref`, `style_ref`, `character_ref` and
   * `modify_image_ref` (stored and echoed under the interface's names).
   */
  imageRefAliases: {
    image: 'image_ref',
    style: 'style_ref',
    character: 'character_ref',
    modify_image: 'modify_image_ref',
  },
  /** Largest image fetched for a keyframe, a reference or a reframe (50 MiB). */
  imageMaxBytes: 50 * 1024 * 1024,
} as const;

/** The keys `concepts[].key` accepts, and `GET /generations/concepts/list` answers (not shown: ours). */
export const LEGACY_CONCEPTS = [
  'dolly_zoom',
  'pan_left',
  'pan_right',
  'tilt_up',
  'tilt_down',
  'zoom_in',
  'zoom_out',
  'orbit_left',
  'orbit_right',
  'crane_up',
  'crane_down',
  'handheld',
  'static',
] as const;

/** Fixed `detail` texts of these operations (not shown by the interface). */
export const LEGACY_OPERATION_DETAILS = {
  unknownConcept: (i: number, key: string): string =>
    `Unknown concept '${key}' for concepts[${i}].key. Valid: ${LEGACY_CONCEPTS.join(', ')}`,
  keyframeGenerationNotFound: (path: string, id: string): string =>
    `${path}.id: generation '${id}' not found`,
  keyframeGenerationNotCompleted: (path: string, id: string): string =>
    `${path}.id: generation '${id}' is not completed`,
  sourceNotVideo: (id: string): string => `generation '${id}' is not a video generation`,
  sourceNotCompleted: (id: string): string => `generation '${id}' is not completed`,
  listLimit: (value: string): string =>
    `Expected an integer from 1 to ${LEGACY_OPERATION_CHOICES.listMaxLimit} for limit but received '${value}'`,
  listOffset: (value: string): string =>
    `Expected an integer of at least 0 for offset but received '${value}'`,
} as const;
