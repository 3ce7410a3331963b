/**
 * The legacy creates: each one's path (LEGACY_PATHS, `:id` the source generation of an upscale or
 * add-audio) and the validator of its body. The client checks a create with it before sending; the
 * emulator registers its routes from it. Pure: no I/O.
 */
import { LEGACY_PATHS } from './legacy-operations.ts';
import {
  type LegacyRequestResult,
  validateAudioRequest,
  validateImageRequest,
  validateReframeImageRequest,
  validateReframeVideoRequest,
  validateUpscaleRequest,
  validateVideoRequest,
} from './legacy-requests.ts';

export const LEGACY_CREATES = {
  video: { path: LEGACY_PATHS.video, validate: validateVideoRequest },
  image: { path: LEGACY_PATHS.image, validate: validateImageRequest },
  reframeImage: { path: LEGACY_PATHS.reframeImage, validate: validateReframeImageRequest },
  reframeVideo: { path: LEGACY_PATHS.reframeVideo, validate: validateReframeVideoRequest },
  upscale: { path: LEGACY_PATHS.upscale, validate: validateUpscaleRequest },
  audio: { path: LEGACY_PATHS.audio, validate: validateAudioRequest },
} as const satisfies Record<string, { path: string; validate: (body: unknown) => LegacyRequestResult }>;

export type LegacyCreateKind = keyof typeof LEGACY_CREATES;
