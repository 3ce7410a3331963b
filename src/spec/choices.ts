/**
 * Decisions for everything the interface leaves "not shown". Each is written once here, used by the
 * client and the emulator alike, and listed in docs/interface-choices.md.
 */
import type { FailureCode, GenerationType, Model } from './enums.ts';

export const CHOICES = {
  /** Default model per generation type when `model` is omitted. */
  defaultModel: {
    image: 'uni-1',
    image_edit: 'uni-1',
    video: 'ray-3.2',
    video_edit: 'ray-3.2',
    video_reframe: 'ray-3.2',
  } satisfies Record<GenerationType, Model>,
  /** Types for which `prompt` may be omitted (when given, it must still be 1..6000 characters). */
  promptOptionalTypes: ['video_reframe'] as readonly GenerationType[],
  defaultImageAspectRatio: '1:1',
  defaultVideoAspectRatio: '16:9',
  defaultVideoDuration: '5s',
  defaultVideoResolution: '720p',
  /** Success status of POST /v1/files (both modes). */
  createFileStatus: 201,
  /** Success status of POST /v1/files/{id}/complete. */
  completeFileStatus: 200,
  /** Default inline (multipart) upload cap in bytes; configurable in the emulator. */
  inlineUploadMaxBytes: 20 * 1024 * 1024,
  /** Requests per rate window on GET endpoints before the API-wide abuse ceiling answers 429. */
  abuseCeilingPerWindow: 6000,
  /** Longest `user_id` accepted on POST /v1/generations, in characters. */
  userIdMaxChars: 256,
  /** `video.edit.strength`: a number in this closed range (its type and values are not shown). */
  editStrength: { min: 0, max: 1 },
  /** Types that accept `image_ref` (only video_edit forbids it); each takes at most LIMITS.imageRefMax entries. */
  imageRefTypes: ['image', 'image_edit', 'video', 'video_reframe'] as readonly GenerationType[],
  /** Types that accept `video.duration`; the output of video_edit and video_reframe follows the source. */
  durationTypes: ['video'] as readonly GenerationType[],
  /** Models that accept `video.keyframes` (the interface: ray-3.2 only). */
  keyframeModels: ['ray-3.2'] as readonly Model[],
  /**
   * Outcomes of POST /v1/generations that take a slot of the request-rate window: creates that passed
   * auth, validation, media checks and both limit checks (201, and 402 when the balance is short).
   * 400/413/422/502/503 and every 429 take none. The window is one shared bucket for all types.
   */
  rpmCountedStatuses: [201, 402] as readonly number[],
  /**
   * While the rate-limiting backend is down the create is let through without X-RateLimit-* headers
   * and is not counted (fail open); the concurrent-job ceiling is still enforced (it is job tracking,
   * not the rate backend).
   */
  rateBackendDownEnforcesConcurrency: true,
  /** GenerationOutput.type per kind of output (only `layering` is named by the interface). */
  outputTypes: { image: 'image', video: 'video', layers: 'layering' },
  /** A whole word (case-insensitive) in an image_edit prompt that asks for a layer stack. */
  layersPromptWord: 'layers',
  /** Timeout of a url media fetch, for headers and between body chunks. */
  fetchTimeoutMs: 30_000,
  /** Redirects followed by a url media fetch; every hop must be on the allow-list again. */
  fetchMaxRedirects: 5,
  /**
   * Byte cap of a url-referenced source video of video_edit / video_reframe (the interface gives no 413
   * for them; the cap is the largest object the file store takes, 5 GiB).
   */
  urlVideoMaxBytes: 5 * 1024 * 1024 * 1024,
  /** failure_reason per failure_code when nothing more specific is known. */
  failureReasons: {
    content_moderated: 'The prompt or an input image violated the content guidelines.',
    generation_failed: 'The model failed to produce an output. Retrying the same request may succeed.',
    budget_exhausted: 'The balance ran out before the generation completed. Please add funds to continue.',
    output_not_found: 'The generated output could not be retrieved. Retrying the same request may succeed.',
    image_too_large: 'An input image exceeded the size limit during processing.',
    unsupported_format: 'An input media file is in an unsupported format.',
    corrupt_input: 'An input media file could not be decoded.',
    invalid_request: 'The request was rejected as invalid during generation.',
    rate_limited: 'An upstream provider rate-limited the generation. Retry with backoff.',
  } satisfies Record<FailureCode, string>,
} as const;

/** Every fixed `detail` text the interface does not give, in one place. */
export const DETAILS = {
  generationNotFound: 'Generation not found',
  fileNotFound: 'File not found',
  routeNotFound: 'Not found',
  abuseCeiling: 'Too many requests',
  upstreamUnavailable: 'Upstream service unavailable',
  ingestionUnavailable: 'Image ingestion unavailable',
  invalidJson: 'Request body is not valid JSON',
  bodyTooLarge: 'Request body too large',
  uploadUrlExpired: 'Upload URL has expired',
  uploadSignatureInvalid: 'Upload signature does not match',
  outputUrlExpired: 'Output URL has expired',
  outputSignatureInvalid: 'Output URL signature does not match',
  internal: 'Internal server error',
  adminLoopbackOnly: 'The emulator admin endpoints answer loopback callers only',
  holdNotFound: 'Hold not found',
} as const;

/** 409 detail of POST /_emulator/generations/{id}/release for a generation no hold keeps. */
export function generationNotHeldDetail(id: string): string {
  return `Generation ${id} is not held`;
}

/** 413 detail of a url-referenced source video over CHOICES.urlVideoMaxBytes. */
export function urlVideoTooLargeDetail(path: string): string {
  return `${path}: video exceeds ${CHOICES.urlVideoMaxBytes / (1024 * 1024 * 1024)} GiB limit`;
}

/** 413 detail of an inline upload over the cap. */
export function inlineTooLargeDetail(maxBytes: number): string {
  return `File exceeds the inline upload limit of ${maxBytes} bytes; use the presigned (JSON) upload flow`;
}

// ---- legacy surface (/dream-machine/v1) -------------------------------------------------------

/** Decisions for the legacy surface, whose limits, headers and callback behaviour are not shown. */
export const LEGACY_CHOICES = {
  /**
   * Generation.assets is null until the generation has completed (then an object with its video or
   * image URL): the @ai-sdk/luma provider parses a present assets object as one that holds an image.
   */
  assetsUntilCompleted: null,
  /** Largest source video fetched from media.url (512 MiB); larger sources fail the generation. */
  sourceMaxBytes: 512 * 1024 * 1024,
  /** Largest first_frame image fetched (50 MiB, the agents per-image limit). */
  firstFrameMaxBytes: 50 * 1024 * 1024,
  /** Longest source video (seconds), the agents edit/reframe source limit; the output keeps the source's duration. */
  sourceMaxSeconds: 30,
  /**
   * No request-rate or concurrent-job limits on the legacy surface (and so no X-RateLimit-* headers);
   * legacy jobs do not count toward the agents surface's limits either.
   */
  rateLimited: false,
  /** Responses carry X-Request-Id (the caller's sane value echoed, or a fresh UUID); not X-API-Version. */
  requestIdHeader: true,
  callback: {
    /** Per-attempt timeout for the receiver's response headers and body. */
    timeoutMs: 5000,
    /** Wait after failed attempt n is min(backoffMaxMs, backoffBaseMs * 2^(n-1)); attempts = config.callback_attempts. */
    backoffBaseMs: 250,
    backoffMaxMs: 4000,
    userAgent: 'genpipe-emulator',
    /** 1-based attempt number of this delivery. */
    attemptHeader: 'X-Callback-Attempt',
    /** Id of the HTTP request that created the generation. */
    requestIdHeader: 'X-Request-Id',
    /** `t=<unix seconds>,v1=<hex HMAC-SHA256(api key, "<t>.<body>")>`. */
    signatureHeader: 'X-Callback-Signature',
  },
} as const;

/** Fixed `detail` texts of the legacy surface not given by the interface. */
export const LEGACY_DETAILS = {
  callbackUrlInvalid: 'callback_url must be an absolute http or https URL',
  callbackHostNotAllowed: (host: string): string => `callback_url: host '${host}' is not allowed`,
} as const;

/**
 * Whether a failed legacy generation's failure_reason says the surface could not fetch a media URL
 * (LEGACY_FAILURE_REASONS' fetchFailed, fetchHttp, hostNotAllowed): the URL's fault, not the file's.
 */
export function isLegacyFetchFailure(reason: string | null): boolean {
  return reason !== null && /: failed to fetch URL( \([^)]*\))?$/.test(reason);
}

/** failure_reason texts of failed legacy generations (the legacy surface has no failure_code). */
export const LEGACY_FAILURE_REASONS = {
  fetchFailed: (field: string): string => `${field}: failed to fetch URL`,
  fetchHttp: (field: string, status: number): string => `${field}: failed to fetch URL (HTTP ${status})`,
  hostNotAllowed: (field: string): string => `${field}: failed to fetch URL (host not allowed)`,
  tooLarge: (field: string, maxBytes: number): string => `${field}: media exceeds the ${maxBytes}-byte limit`,
  notVideo: (field: string): string => `${field}: content-type is not a video`,
  notImage: (field: string): string => `${field}: content-type is not an image`,
  undecodable: (field: string): string => `${field}: video could not be decoded`,
  imageUndecodable: (field: string): string => `${field}: image could not be decoded`,
  tooLong: (field: string, maxSeconds: number): string =>
    `${field}: video is longer than ${maxSeconds} seconds`,
  /** The agents surface's texts for the same failures. */
  generationFailed: CHOICES.failureReasons.generation_failed,
  budgetExhausted: CHOICES.failureReasons.budget_exhausted,
} as const;
