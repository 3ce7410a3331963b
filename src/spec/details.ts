/**
 * Every `detail` text of a generation-request rejection, built in one place so that the validator, the
 * emulator and the tests can never disagree on a word.
 *
 * Texts the interface gives are reproduced exactly; where it writes "..." the sentence is finished here,
 * keeping the given prefix. Texts the interface does not give at all are our choices (docs/interface-choices.md).
 * Wrong JSON types and out-of-range values share one sharp-style builder, {@link expectedDetail}.
 */
import { MANGA_ASPECT_RATIOS, MODELS } from './enums.ts';
import { LIMITS } from './limits.ts';

// ---- the one message builder for types and values ------------------------------------------

/** Longest string value quoted back in a message; longer values are cut and marked with an ellipsis. */
const MAX_QUOTED_CHARS = 40;

/**
 * Renders a received JSON value for a message: strings single-quoted (cut after 40 characters),
 * numbers, booleans and null as written, arrays and objects by kind, a missing value as `nothing`.
 *
 * @param value - any value taken from a parsed JSON body (or undefined when absent)
 * @example describeValue('abc') // "'abc'"; describeValue([1]) // 'an array'
 */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    const chars = [...value];
    return chars.length > MAX_QUOTED_CHARS ? `'${chars.slice(0, MAX_QUOTED_CHARS).join('')}…'` : `'${value}'`;
  }
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/**
 * The sharp-style message every type and value error uses:
 * `Expected <what> for <field path> but received <value>`.
 *
 * @param what - what the field must be, e.g. `boolean`, `one of '5s', '10s'`
 * @param path - the field path, e.g. `video.hdr`, `image_ref[2].url`
 * @param value - the value received (undefined when the field is missing)
 * @example expectedDetail('boolean', 'video.hdr', 'yes') // "Expected boolean for video.hdr but received 'yes'"
 */
export function expectedDetail(what: string, path: string, value: unknown): string {
  return `Expected ${what} for ${path} but received ${describeValue(value)}`;
}

/**
 * The `what` of an enumeration for {@link expectedDetail}: `one of 'a', 'b'`.
 *
 * @param values - the allowed values, in the order they should be listed
 */
export function oneOf(values: readonly string[]): string {
  return `one of ${values.map((v) => `'${v}'`).join(', ')}`;
}

/**
 * A field the request shape does not have (our choice: unknown fields are rejected, not ignored).
 *
 * @param path - the full field path, e.g. `colour` or `video.fps`
 */
export function unknownFieldDetail(path: string): string {
  return `Unknown field '${path}'`;
}

// ---- 400: model, type, aspect ratio, prompt (given texts) ----------------------------------

/**
 * The list of valid values a detail ends with, `Valid: a, b, c`, in the order given: the interface's
 * aspect-ratio detail, and genpipe's addition to the model detail ({@link withValidModels}).
 */
function validList(values: readonly string[]): string {
  return `Valid: ${values.join(', ')}`;
}

const UNKNOWN_MODEL_PREFIX = 'Unknown model: ';

/** 400 when `model` is not a known model, or not on the caller's plan. */
export function unknownModelDetail(model: string): string {
  return `${UNKNOWN_MODEL_PREFIX}${model}`;
}

/**
 * A detail as genpipe shows it to a person: the service's `Unknown model: <model>` followed by the
 * models, as the aspect-ratio detail lists its valid values; any other detail unchanged. The detail
 * itself — what the service and the emulator answer, what an error keeps as `detail` — stays the given
 * text. The service also calls a model of its own unknown when it is not on the caller's plan: then
 * that is what is added.
 *
 * @example withValidModels('Unknown model: uni-9') // 'Unknown model: uni-9. Valid: uni-1, uni-1-max, ray-3.2'
 */
export function withValidModels(detail: string): string {
  if (!detail.startsWith(UNKNOWN_MODEL_PREFIX)) return detail;
  const model = detail.slice(UNKNOWN_MODEL_PREFIX.length);
  return (MODELS as readonly string[]).includes(model)
    ? `${detail} (a model the service has, but not on this API client's plan)`
    : `${detail}. ${validList(MODELS)}`;
}

/** 400 when the model does not accept the generation type. */
export function typeNotSupportedDetail(type: string, model: string): string {
  return `Type '${type}' is not supported for model '${model}'`;
}

/**
 * Orders aspect ratios lexicographically as plain strings (UTF-16 code units), which is what
 * "sorted lexicographically" means: `16:9` sorts before `1:1` because '6' < ':'.
 */
export function compareAspectRatios(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * 400 when aspect_ratio is not valid for the model and type; the valid values are listed sorted
 * lexicographically (see {@link compareAspectRatios}): `16:9, 1:1, 1:2, 1:3, 2:1, 2:3, 3:1, 3:2, 9:16` for
 * the image models, `16:9, 1:1, 21:9, 3:4, 4:3, 9:16` for ray-3.2.
 *
 * @param value - the aspect ratio received
 * @param valid - the aspect ratios valid for the model and type, in any order
 */
export function invalidAspectRatioDetail(value: string, valid: readonly string[]): string {
  return `Invalid aspect_ratio '${value}'. ${validList([...valid].sort(compareAspectRatios))}`;
}

/** 400 when the prompt is missing where required, or shorter than 1 / longer than 6000 characters. */
export const PROMPT_LENGTH_DETAIL = `Prompt must be between ${LIMITS.promptMin} and ${LIMITS.promptMax} characters`;

/**
 * The service's text for a prompt of the wrong length (1 to 6000 characters, counted as code points),
 * or null: the one prompt-length rule, for a create of either surface.
 * @example promptLengthProblem('') // 'Prompt must be between 1 and 6000 characters'
 */
export function promptLengthProblem(prompt: string): string | null {
  const length = [...prompt].length;
  return length < LIMITS.promptMin || length > LIMITS.promptMax ? PROMPT_LENGTH_DETAIL : null;
}

// ---- 400: media references -----------------------------------------------------------------

/** 400 when an ImageRef has both url and data (given text). */
export function urlAndDataDetail(path: string): string {
  return `${path}: provide either 'url' or 'data', not both`;
}

/** 400 when an ImageRef has no reference channel, or more than one other than url+data (our text). */
export function exactlyOneChannelDetail(path: string): string {
  return `${path}: provide exactly one of 'url', 'data', 'file_id' or 'generation_id'`;
}

/** 400 when an ImageRef has data without media_type (given text). */
export function mediaTypeRequiredDetail(path: string): string {
  return `${path}: 'media_type' is required with 'data'`;
}

/** 400 when image_edit has more than 8 image_ref entries (given text). */
export const IMAGE_EDIT_TOO_MANY_REFS_DETAIL = `image_edit supports up to ${LIMITS.imageRefMax} reference images (source occupies one slot)`;

/** 400 when another type that takes image_ref has more than 8 entries (our choice: the same cap). */
export function tooManyImageRefsDetail(type: string): string {
  return `${type} supports up to ${LIMITS.imageRefMax} reference images`;
}

/**
 * The source forms video_edit and video_reframe take, quoted in the source messages. file_id of an
 * uploaded video is accepted as well (our choice; see docs/interface-choices.md).
 */
const VIDEO_SOURCE_FORMS =
  'source.generation_id of a completed video generation, source.file_id of an uploaded video, or source.url / source.data with a video/* source.media_type';

/** 400 when source is given on type image or video (other than as generation_id on video). */
export const SOURCE_ONLY_VALID_DETAIL = `source is only valid for type 'image_edit', 'video_edit', or 'video_reframe' (video_edit and video_reframe take ${VIDEO_SOURCE_FORMS})`;

/** 400 when source is missing on image_edit (given text). */
export const SOURCE_REQUIRED_IMAGE_EDIT_DETAIL = `source is required for type 'image_edit'`;

/** 400 when source is missing on video_edit or video_reframe. */
export function sourceRequiredVideoDetail(type: string): string {
  return `source is required for type '${type}' (give ${VIDEO_SOURCE_FORMS})`;
}

/** 400 when source.generation_id is given on type video (given text; extend uses video.start_frame / video.end_frame). */
export const SOURCE_GENERATION_ID_ONLY_VALID_DETAIL = `source.generation_id is only valid for type 'image_edit', 'video_edit', or 'video_reframe'`;

/** 400 when source.url / source.data on video_edit or video_reframe lacks a video/* media_type. */
export function sourceMediaTypeVideoDetail(type: string): string {
  return `source.media_type must be a video/* type (for example video/mp4) when source.url or source.data is used for type '${type}'`;
}

/** 400 when an image position (image_ref, anchors, image_edit source) declares a non-image media_type (our text). */
export function imageMediaTypeDetail(path: string, mediaType: string): string {
  return expectedDetail('an image/* type', `${path}.media_type`, mediaType);
}

/** 400 when image_ref is given on video_edit (given text). */
export const IMAGE_REF_VIDEO_EDIT_DETAIL = `image_ref is not supported for type 'video_edit'`;

// ---- 400: the video object by type --------------------------------------------------------

/** 400 when a `video` object is sent with an image type (our text). */
export const VIDEO_ONLY_VIDEO_TYPES_DETAIL = `video is only valid for type 'video', 'video_edit', or 'video_reframe'`;

/** 400 when video.loop is true on video_edit (given text). */
export const LOOP_ONLY_VIDEO_DETAIL = `video.loop is only valid for type 'video'`;

/** 400 when video.edit is given on type video (given text). */
export const EDIT_ONLY_VIDEO_EDIT_DETAIL = `video.edit is only valid for type 'video_edit'`;

/** 400 when video.source_position is given on a type other than video_reframe (given text). */
export const SOURCE_POSITION_ONLY_REFRAME_DETAIL = `video.source_position is only valid for type 'video_reframe'`;

/** 400 when video.keyframes / video.keyframe_indexes are given on a type other than video (our text). */
export function keyframesOnlyVideoDetail(field: 'keyframes' | 'keyframe_indexes'): string {
  return `video.${field} is only valid for type 'video'`;
}

/** 400 when video.duration is given on video_edit or video_reframe (our choice: the output follows the source). */
export function durationOnlyVideoDetail(type: string): string {
  return `video.duration is only valid for type 'video' (the output of type '${type}' is as long as its source)`;
}

// ---- 400: video.edit (given texts, sentences finished) and video.keyframes (our texts) ------

/** 400 when video.edit.auto_controls=true is sent together with video.edit.controls. */
export const AUTO_CONTROLS_WITH_CONTROLS_DETAIL =
  'video.edit.auto_controls=true cannot be combined with video.edit.controls (omit controls for automatic mode, or drop auto_controls for manual mode)';

/**
 * 400 when only one of `<prefix>.keyframes` / `<prefix>.keyframe_indexes` is given.
 *
 * @param prefix - `video.edit` (given text) or `video` (the same rule for type video keyframes)
 */
export function keyframesPairDetail(prefix: 'video' | 'video.edit'): string {
  return `${prefix}.keyframes and ${prefix}.keyframe_indexes must both be provided or both omitted`;
}

/** 400 when keyframe_indexes and keyframes differ in length. */
export function keyframeIndexesLengthDetail(prefix: 'video' | 'video.edit'): string {
  return `${prefix}.keyframe_indexes must have the same length as ${prefix}.keyframes`;
}

/** 400 when a keyframe index is negative. */
export function keyframeIndexesNegativeDetail(prefix: 'video' | 'video.edit'): string {
  return `${prefix}.keyframe_indexes must be non-negative`;
}

/** 400 when keyframe indexes repeat. */
export function keyframeIndexesUniqueDetail(prefix: 'video' | 'video.edit'): string {
  return `${prefix}.keyframe_indexes must be unique`;
}

/** 400 when keyframes has fewer than 1 or more than 64 entries (our text). */
export function keyframesCountDetail(prefix: 'video' | 'video.edit'): string {
  return `${prefix}.keyframes must have between ${LIMITS.keyframesMin} and ${LIMITS.keyframesMax} entries`;
}

/** 400 when video.keyframes is used with a model that does not support it (our text). */
export function keyframesModelDetail(model: string, supported: readonly string[]): string {
  return `video.keyframes is not supported for model '${model}' (supported: ${supported.join(', ')})`;
}

/** 400 when a type video keyframe index lies past the 24 fps grid of the duration (our text). */
export function keyframeIndexesRangeDetail(duration: string, maxIndex: number): string {
  return `video.keyframe_indexes must be between 0 and ${maxIndex} for duration '${duration}' (${LIMITS.fps} fps grid)`;
}

/** 400 when video.keyframes is combined with start_frame, end_frame or loop (our text). */
export const KEYFRAMES_EXCLUSIVE_DETAIL =
  'video.keyframes is mutually exclusive with video.start_frame, video.end_frame and video.loop';

/** 400 when video.start_frame is combined with video.edit.keyframes. */
export const START_FRAME_WITH_EDIT_KEYFRAMES_DETAIL =
  'video.start_frame and video.edit.keyframes are mutually exclusive (give the first frame as video.edit.keyframes with index 0)';

// ---- 400: video extend (given texts) -------------------------------------------------------

/** 400 when hdr=true is asked on a video extend request. */
export const HDR_EXTEND_DETAIL = 'HDR is not supported with video extend';

/** 400 when loop=true is asked on a reverse extend (generation_id in end_frame). */
export const LOOP_REVERSE_EXTEND_DETAIL = 'loop is only supported with forward video extend';

/** 400 when generation_id is used in an anchor position other than the single start/end frame of an extend. */
export const GENERATION_KEYFRAMES_DETAIL =
  "generation-ref keyframes are only supported for video extend (type 'video' with exactly one generation_id, in video.start_frame or video.end_frame)";

// ---- 400: video_reframe (given texts) ------------------------------------------------------

/** 400 when aspect_ratio is missing on video_reframe. */
export const REFRAME_ASPECT_RATIO_REQUIRED_DETAIL = `aspect_ratio (the target shape) is required for type 'video_reframe'`;

/** 400 when video.start_frame or video.end_frame is given on video_reframe. */
export const REFRAME_FRAMES_DETAIL = `video.start_frame / video.end_frame are not supported for type 'video_reframe'`;

/** 400 when video.loop is true on video_reframe. */
export const REFRAME_LOOP_DETAIL = `video.loop is not supported for type 'video_reframe'`;

/** 400 when hdr or exr_export is true on video_reframe. */
export const REFRAME_HDR_DETAIL = `HDR / exr_export are not supported for type 'video_reframe'`;

/** 400 when video.edit is given on video_reframe. */
export const REFRAME_EDIT_DETAIL = `video.edit is not supported for type 'video_reframe'`;

/** 400 when a 1080p reframe targets a vertical ratio (9:16, 3:4). */
export function reframeVertical1080Detail(aspectRatio: string): string {
  return `1080p resolution is not yet available for vertical reframe (aspect_ratio '${aspectRatio}'); use 720p or lower for now, 1080p vertical reframe is coming soon`;
}

// ---- 400: incompatible video options (given texts) -----------------------------------------

/** 400 when hdr=true is asked at a resolution other than 720p / 1080p (540p, and 360p which is SDR-only). */
export function hdrResolutionDetail(resolution: string): string {
  return `resolution '${resolution}' is not supported with hdr=true`;
}

/** 400 when hdr=true is asked with duration 10s. */
export const HDR_DURATION_DETAIL = "duration '10s' is not supported with hdr=true";

/** 400 when duration 10s is asked with start_frame or end_frame. */
export const DURATION_FRAMES_DETAIL = "duration '10s' is not supported with start_frame / end_frame";

/** 400 when loop=true is asked with duration 10s. */
export const LOOP_DURATION_DETAIL = "loop is not supported with duration '10s'";

/** 400 when loop=true is asked with hdr=true. */
export const LOOP_HDR_DETAIL = 'loop is not supported with hdr=true';

/** 400 when loop=true is asked with end_frame. */
export const LOOP_END_FRAME_DETAIL = 'loop is not supported with end_frame (no seamless start-end match)';

/** 400 when exr_export=true is asked without hdr=true. */
export const EXR_REQUIRES_HDR_DETAIL = 'exr_export requires hdr=true';

// ---- 422: parameter combination (given text) -----------------------------------------------

/** 422 when style=manga is asked with a non-portrait aspect ratio. */
export function mangaAspectRatioDetail(aspectRatio: string): string {
  return `aspect_ratio='${aspectRatio}' is not allowed when style='manga'. Valid aspect_ratio: ${MANGA_ASPECT_RATIOS.join(', ')}`;
}

// ---- 413 and source duration (given texts; duration text is ours) --------------------------

/** 413 when an input image (or an inline source video) is over 50 MB. */
export function imageTooLargeDetail(path: string): string {
  return `${path}: image exceeds 50 MB limit`;
}

/** 413 when an input image has a side over 8000 px. */
export function imageTooManyPixelsDetail(path: string, width: number, height: number): string {
  return `${path}: image is ${width}x${height}px but each side must be <= ${LIMITS.imageMaxSide}px. Resize and try again.`;
}

/**
 * 422 when a source video of video_edit / video_reframe is longer than allowed (30 s; 18 s with video.edit).
 * The length is rounded up to hundredths so it never reads as equal to the limit.
 *
 * @param path - `source`
 * @param seconds - the measured duration
 * @param maxSeconds - the limit that applies
 * @param type - the generation type
 * @param withEdit - whether video.edit was given (the 18 s limit)
 * @example sourceVideoTooLongDetail('source', 31.5, 30, 'video_reframe', false)
 * // "source: video is 31.5s long but must be at most 30s for type 'video_reframe'"
 */
export function sourceVideoTooLongDetail(
  path: string,
  seconds: number,
  maxSeconds: number,
  type: string,
  withEdit: boolean,
): string {
  const shown = Math.ceil(seconds * 100) / 100;
  return `${path}: video is ${shown}s long but must be at most ${maxSeconds}s for type '${type}'${withEdit ? ' with video.edit' : ''}`;
}

// ---- 422 / 502: media-reference processing (given texts) -----------------------------------

/** 422 when `data` is not valid base64. */
export function invalidBase64Detail(path: string): string {
  return `${path}: invalid base64 data`;
}

/**
 * 422 when a URL could not be fetched: unreachable (no status) or answering an HTTP error (with status).
 *
 * @param path - the reference path
 * @param httpStatus - the HTTP status the remote answered, when it answered
 */
export function fetchFailedDetail(path: string, httpStatus?: number): string {
  return httpStatus === undefined
    ? `${path}: failed to fetch URL`
    : `${path}: failed to fetch URL (HTTP ${httpStatus})`;
}

/** 422 when the media at an image position is not an image. */
export function notAnImageDetail(path: string): string {
  return `${path}: content-type is not an image`;
}

/** 422 when the media at a video source position is not a video (our text, mirroring the image one). */
export function notAVideoDetail(path: string): string {
  return `${path}: content-type is not a video`;
}

/** 502 when the proxy that downloads URL-referenced media is down. */
export function fetchProxyUnavailableDetail(path: string): string {
  return `${path}: fetch proxy unavailable`;
}

// ---- 422: file_id / generation_id references (our texts) -----------------------------------

/**
 * 422 when a file_id names no file of the caller (unknown, another client's, or past its expiry). A file
 * of another client reads exactly the same, so ids never leak across clients.
 */
export function fileNotFoundDetail(path: string, fileId: string): string {
  return `${path}: file '${fileId}' not found`;
}

/**
 * 422 when the caller's file is not in state ready.
 *
 * @param state - the file's state: pending, failed or deleted
 */
export function fileNotReadyDetail(path: string, fileId: string, state: string): string {
  switch (state) {
    case 'pending':
      return `${path}: file '${fileId}' is not ready (state 'pending'); poll the file until its state is 'ready'`;
    case 'failed':
      return `${path}: file '${fileId}' is not ready (state 'failed'); its ingest failed, upload it again`;
    case 'deleted':
      return `${path}: file '${fileId}' is not ready (state 'deleted'); a deleted file cannot be referenced`;
    default:
      return `${path}: file '${fileId}' is not ready (state '${state}')`;
  }
}

/**
 * 422 when the caller's ready file holds the wrong kind of media for the position.
 *
 * @param actual - what the file holds, e.g. `video`
 * @param expected - what the position takes: `image`, or `video` for the source of video_edit / video_reframe
 * @example fileWrongKindDetail('image_ref[0]', id, 'video', 'image')
 * // "image_ref[0]: file '<id>' holds a video, but this position takes an image"
 */
export function fileWrongKindDetail(path: string, fileId: string, actual: string, expected: string): string {
  return `${path}: file '${fileId}' holds ${article(actual)} ${actual}, but this position takes ${article(expected)} ${expected}`;
}

/**
 * 422 when a generation_id names no generation of the caller (unknown, another client's, or a legacy
 * one). Another client's generation reads exactly the same, so ids never leak across clients.
 */
export function generationRefNotFoundDetail(path: string, generationId: string): string {
  return `${path}: generation '${generationId}' not found`;
}

/** 422 when the caller's referenced generation has not completed (queued, processing or failed). */
export function generationRefNotCompletedDetail(path: string, generationId: string, state: string): string {
  return `${path}: generation '${generationId}' is not completed (state '${state}')`;
}

/**
 * 422 when the caller's referenced generation produced the wrong kind of output for the position.
 *
 * @param actualType - the referenced generation's type, e.g. `image`
 * @param expected - the output kind the position needs: `image` or `video`
 * @example generationRefWrongKindDetail('source', id, 'image', 'video')
 * // "source: generation '<id>' is of type 'image', but this position needs a video output"
 */
export function generationRefWrongKindDetail(
  path: string,
  generationId: string,
  actualType: string,
  expected: string,
): string {
  return `${path}: generation '${generationId}' is of type '${actualType}', but this position needs ${article(expected)} ${expected} output`;
}

function article(word: string): string {
  return /^[aeiou]/i.test(word) ? 'an' : 'a';
}

/**
 * The HTTP status of each media-reference failure, so the emulator and the client read one table.
 * Everything here is non-retryable except `fetchProxyUnavailable` (502).
 */
export const MEDIA_REF_FAILURE_STATUS = {
  invalidBase64: 422,
  fetchFailed: 422,
  notAnImage: 422,
  notAVideo: 422,
  fetchProxyUnavailable: 502,
  fileNotFound: 422,
  fileNotReady: 422,
  fileWrongKind: 422,
  generationRefNotFound: 422,
  generationRefNotCompleted: 422,
  generationRefWrongKind: 422,
  imageTooLarge: 413,
  imageTooManyPixels: 413,
  sourceVideoTooLong: 422,
} as const;
