/**
 * Decisions for everything the interface leaves "not shown". Each is written once here, used by the
 * client and the emulator alike, and listed in the README's "Choices" section.
 */
import type { GenerationType, Model } from './enums.ts';

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
} as const;

/** 413 detail of an inline upload over the cap. */
export function inlineTooLargeDetail(maxBytes: number): string {
  return `File exceeds the inline upload limit of ${maxBytes} bytes; use the presigned (JSON) upload flow`;
}
