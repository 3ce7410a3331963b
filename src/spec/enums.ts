/**
 * Every enumeration of the service interface, as data.
 * Arrays are `as const` so that the union types below are derived from them, never written twice.
 */

/** API version sent in `X-API-Version` on every `/v1` response. */
export const API_VERSION = '2026-04-01';
/** Prefix every agents-surface API key must start with. */
export const API_KEY_PREFIX = 'svc-api-';

// ---- agents surface (A) -------------------------------------------------------------------

export const GENERATION_TYPES = ['image', 'image_edit', 'video', 'video_edit', 'video_reframe'] as const;
export type GenerationType = (typeof GENERATION_TYPES)[number];

export const IMAGE_MODELS = ['uni-1', 'uni-1-max'] as const;
export const VIDEO_MODELS = ['ray-3.2'] as const;
export const MODELS = [...IMAGE_MODELS, ...VIDEO_MODELS] as const;
export type Model = (typeof MODELS)[number];

/** Which generation types each model accepts. */
export const MODEL_TYPES: Readonly<Record<Model, readonly GenerationType[]>> = {
  'uni-1': ['image', 'image_edit'],
  'uni-1-max': ['image', 'image_edit'],
  'ray-3.2': ['video', 'video_edit', 'video_reframe'],
};

export const IMAGE_ASPECT_RATIOS = ['1:1', '1:2', '1:3', '16:9', '2:1', '2:3', '3:1', '3:2', '9:16'] as const;
export const VIDEO_ASPECT_RATIOS = ['9:16', '3:4', '1:1', '4:3', '16:9', '21:9'] as const;
export type ImageAspectRatio = (typeof IMAGE_ASPECT_RATIOS)[number];
export type VideoAspectRatio = (typeof VIDEO_ASPECT_RATIOS)[number];
export type AspectRatio = ImageAspectRatio | VideoAspectRatio;

/** Portrait aspect ratios accepted together with style=manga, in the order the 422 detail lists them. */
export const MANGA_ASPECT_RATIOS = ['1:2', '1:3', '2:3', '9:16'] as const;
/** Styles the interface names. Other values are accepted and ignored (see choices). */
export const KNOWN_STYLES = ['manga'] as const;

export const VIDEO_DURATIONS = ['5s', '10s'] as const;
export type VideoDuration = (typeof VIDEO_DURATIONS)[number];
export const VIDEO_RESOLUTIONS = ['360p', '540p', '720p', '1080p'] as const;
export type VideoResolution = (typeof VIDEO_RESOLUTIONS)[number];
/** Resolutions HDR accepts. */
export const HDR_RESOLUTIONS = ['720p', '1080p'] as const;
/** Vertical targets for which a 1080p reframe is not yet available. */
export const VERTICAL_ASPECT_RATIOS = ['9:16', '3:4'] as const;

/** Signals of video.edit.controls. The fifth signal's name is not shown; `canny` is our choice. */
export const EDIT_CONTROL_SIGNALS = ['depth', 'face', 'normals', 'pose', 'canny'] as const;

export const GENERATION_STATES = ['queued', 'processing', 'completed', 'failed'] as const;
export type GenerationState = (typeof GENERATION_STATES)[number];
export const TERMINAL_GENERATION_STATES: readonly GenerationState[] = ['completed', 'failed'];

export const FILE_STATES = ['pending', 'ready', 'failed', 'deleted'] as const;
export type FileState = (typeof FILE_STATES)[number];
export const FILE_PURPOSES = ['input', 'reference'] as const;
export type FilePurpose = (typeof FILE_PURPOSES)[number];

export const ALPHA_HINTS = ['soft', 'hard', 'none'] as const;
export type AlphaHint = (typeof ALPHA_HINTS)[number];

/** Machine-readable failure codes of asynchronous failures, with whether a retry of the same request may help. */
export const FAILURE_CODES = {
  content_moderated: { retryable: false, meaning: 'prompt or input image violated content guidelines' },
  generation_failed: { retryable: true, meaning: 'internal model error' },
  budget_exhausted: { retryable: false, meaning: 'funds ran out mid-generation' },
  output_not_found: { retryable: true, meaning: 'generated output could not be retrieved' },
  image_too_large: {
    retryable: false,
    meaning: 'input image exceeded the size limit, found during processing',
  },
  unsupported_format: { retryable: false, meaning: 'input media in an unsupported format' },
  corrupt_input: { retryable: false, meaning: 'input media could not be decoded' },
  invalid_request: { retryable: false, meaning: 'request rejected as invalid during generation' },
  rate_limited: { retryable: true, meaning: 'an upstream provider rate-limited the generation' },
} as const;
export type FailureCode = keyof typeof FAILURE_CODES;
export const FAILURE_CODE_NAMES = Object.keys(FAILURE_CODES) as FailureCode[];

/** HTTP statuses of the agents surface and whether the interface calls them retryable. */
export const HTTP_STATUS_RETRYABLE: Readonly<Record<number, boolean>> = {
  400: false,
  401: false,
  402: false,
  403: false,
  404: false,
  413: false,
  422: false,
  429: true,
  502: true,
  503: true,
};

// ---- legacy surface (L) -------------------------------------------------------------------

export const LEGACY_BASE_PATH = '/dream-machine/v1';
export const LEGACY_VERSION = '1.1.0';
export const LEGACY_STATES = ['queued', 'dreaming', 'completed', 'failed'] as const;
export type LegacyState = (typeof LEGACY_STATES)[number];
/** States in which a callback is POSTed to callback_url. */
export const LEGACY_CALLBACK_STATES: readonly LegacyState[] = ['dreaming', 'completed', 'failed'];
export const LEGACY_VIDEO_MODELS = ['ray-2', 'ray-flash-2'] as const;
export const LEGACY_IMAGE_MODELS = ['photon-1', 'photon-flash-1'] as const;
export const LEGACY_MODIFY_MODES = [
  'adhere_1',
  'adhere_2',
  'adhere_3',
  'flex_1',
  'flex_2',
  'flex_3',
  'reimagine_1',
  'reimagine_2',
  'reimagine_3',
] as const;
export type LegacyModifyMode = (typeof LEGACY_MODIFY_MODES)[number];
export const LEGACY_ASPECT_RATIOS = ['1:1', '16:9', '9:16', '4:3', '3:4', '21:9', '9:21'] as const;
