/**
 * The shared case table of POST /v1/generations validation: every row of the interface's 400, 413 and
 * 422 tables, the JSON-type and unknown-field rows, the rows of our choices, and the order in which
 * several problems are reported. The spec tests run it against validateGenerationRequest; the
 * emulator's tests run the same rows over HTTP.
 *
 * Bodies use only references that need no I/O before validation answers: inline `data` (a 1x1 PNG, a
 * 1 s 32x32 MP4), or generation_id / file_id values that are looked up only after validation. Rows with
 * `media` are about resolved media (413 and source duration): the validator is given the facts; over
 * HTTP the same rows need real bytes of that size.
 */
import type { GenerationType, MediaFacts } from '../../src/spec/index.ts';

export interface GenerationCase {
  name: string;
  body: unknown;
  /** Facts about resolved media, keyed by site path; present only on 413 / duration rows. */
  media?: Record<string, MediaFacts>;
  status: 400 | 413 | 422;
  detail: string;
}

export interface ValidBody {
  name: string;
  body: Record<string, unknown>;
}

/** A 1x1 RGBA PNG (70 bytes). */
export const PNG_1X1_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** A 1 s, 32x32, 4 fps H.264 MP4 (921 bytes). */
export const MP4_1S_BASE64 =
  'AAAAIGZ0eXBpc29tAAACAGlzb21pc28yYXZjMW1wNDEAAAMnbW9vdgAAAGxtdmhkAAAAAAAAAAAAAAAAAAAD6AAAA+gAAQAAAQAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAgAAAnZ0cmFrAAAAXHRraGQAAAADAAAAAAAAAAAAAAABAAAAAAAAA+gAAAAAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAABAAAAAACAAAAAgAAAAAAAkZWR0cwAAABxlbHN0AAAAAAAAAAEAAAPoAAAgAAABAAAAAAHubWRpYQAAACBtZGhkAAAAAAAAAAAAAAAAAABAAAAAQABVxAAAAAAALWhkbHIAAAAAAAAAAHZpZGUAAAAAAAAAAAAAAABWaWRlb0hhbmRsZXIAAAABmW1pbmYAAAAUdm1oZAAAAAEAAAAAAAAAAAAAACRkaW5mAAAAHGRyZWYAAAAAAAAAAQAAAAx1cmwgAAAAAQAAAVlzdGJsAAAAqXN0c2QAAAAAAAAAAQAAAJlhdmMxAAAAAAAAAAEAAAAAAAAAAAAAAAAAAAAAACAAIABIAAAASAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAGP//AAAAM2F2Y0MBZAAK/+EAGWdkAAqscgRJbARAAAADAEAAAAMCA8SJYRgBAAdo6EODksiwAAAAEHBhc3AAAAABAAAAAQAAABhzdHRzAAAAAAAAAAEAAAAEAAAQAAAAABRzdHNzAAAAAAAAAAEAAAABAAAAKGN0dHMAAAAAAAAAAwAAAAEAACAAAAAAAQAAQAAAAAACAAAQAAAAABxzdHNjAAAAAAAAAAEAAAABAAAABAAAAAEAAAAkc3RzegAAAAAAAAAAAAAABAAAABsAAAANAAAADQAAAA0AAAAUc3RjbwAAAAAAAAABAAADVwAAAD11ZHRhAAAANW1ldGEAAAAAAAAAIWhkbHIAAAAAAAAAAG1kaXJhcHBsAAAAAAAAAAAAAAAACGlsc3QAAAAIZnJlZQAAAEptZGF0AAAAF2WIgQACX/47s8Cl3OhOIePD8dYJjaPxAAAACUGaCG2IIf8k4AAAAAlBnhAnEEf/kYEAAAAJAZ4YTUgh/5iA';

/** A generation id no client owns: looked up only after validation. */
export const UNKNOWN_GENERATION_ID = '00000000-0000-4000-8000-0000000000a1';
/** A file id no client owns: looked up only after validation. */
export const UNKNOWN_FILE_ID = '00000000-0000-4000-8000-0000000000f1';

/** An inline image reference (fresh object each call, so rows never share state). */
export const img = (): Record<string, string> => ({ data: PNG_1X1_BASE64, media_type: 'image/png' });
/** An inline video reference. */
export const vid = (): Record<string, string> => ({ data: MP4_1S_BASE64, media_type: 'video/mp4' });
/** A generation reference (unknown id; fine for every row that is answered before lookup). */
export const gen = (): Record<string, string> => ({ generation_id: UNKNOWN_GENERATION_ID });
/** A file reference (unknown id; fine for every row that is answered before lookup). */
export const file = (): Record<string, string> => ({ file_id: UNKNOWN_FILE_ID });

const images = (n: number) => Array.from({ length: n }, img);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

// Minimal valid bodies of each type, extended by the rows below.
const IMAGE = () => ({ prompt: 'a red fox in fresh snow' });
const IMAGE_EDIT = () => ({ type: 'image_edit', prompt: 'make the sky violet', source: img() });
const VIDEO = () => ({ type: 'video', prompt: 'waves rolling in at dusk' });
const VIDEO_EDIT = () => ({ type: 'video_edit', prompt: 'turn it into a watercolor', source: vid() });
const REFRAME = () => ({ type: 'video_reframe', aspect_ratio: '16:9', source: vid() });
const video = (v: Record<string, unknown>) => ({ ...VIDEO(), video: v });
const videoEdit = (v: Record<string, unknown>) => ({ ...VIDEO_EDIT(), video: v });
const reframe = (v: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ...REFRAME(),
  ...extra,
  video: v,
});

const IMAGE_RATIOS = '16:9, 1:1, 1:2, 1:3, 2:1, 2:3, 3:1, 3:2, 9:16';
const VIDEO_RATIOS = '16:9, 1:1, 21:9, 3:4, 4:3, 9:16';
const VIDEO_SOURCE_FORMS =
  'source.generation_id of a completed video generation, source.file_id of an uploaded video, or source.url / source.data with a video/* source.media_type';
const MiB = 1024 * 1024;

const bad400 = (name: string, body: unknown, detail: string): GenerationCase => ({
  name,
  body,
  status: 400,
  detail,
});

// ---- schema: JSON types, unknown fields, enum values, ranges (sharp-style) --------------------

const SCHEMA: GenerationCase[] = [
  bad400('body is an array', [IMAGE()], 'Expected object for request body but received an array'),
  bad400('body is a string', 'a red fox', "Expected object for request body but received 'a red fox'"),
  bad400('body is null', null, 'Expected object for request body but received null'),
  bad400('unknown top-level field', { ...IMAGE(), colour: 'red' }, "Unknown field 'colour'"),
  bad400(
    'type is not a known type',
    { ...IMAGE(), type: 'audio' },
    "Expected one of 'image', 'image_edit', 'video', 'video_edit', 'video_reframe' for type but received 'audio'",
  ),
  bad400(
    'type is not a string',
    { ...IMAGE(), type: 3 },
    "Expected one of 'image', 'image_edit', 'video', 'video_edit', 'video_reframe' for type but received 3",
  ),
  bad400('model is not a string', { ...IMAGE(), model: 1 }, 'Expected string for model but received 1'),
  bad400('prompt is not a string', { prompt: 42 }, 'Expected string for prompt but received 42'),
  bad400('prompt is null', { prompt: null }, 'Expected string for prompt but received null'),
  bad400(
    'aspect_ratio is not a string',
    { ...IMAGE(), aspect_ratio: 1.5 },
    'Expected string for aspect_ratio but received 1.5',
  ),
  bad400('style is not a string', { ...IMAGE(), style: true }, 'Expected string for style but received true'),
  bad400('user_id is not a string', { ...IMAGE(), user_id: 7 }, 'Expected string for user_id but received 7'),
  bad400(
    'user_id longer than 256 characters (choice)',
    { ...IMAGE(), user_id: 'u'.repeat(257) },
    `Expected string of at most 256 characters for user_id but received '${'u'.repeat(40)}…'`,
  ),
  bad400(
    'source is not an object',
    { ...IMAGE_EDIT(), source: 'https://example.com/a.png' },
    "Expected object for source but received 'https://example.com/a.png'",
  ),
  bad400(
    'image_ref is not an array',
    { ...IMAGE(), image_ref: img() },
    'Expected array for image_ref but received an object',
  ),
  bad400(
    'image_ref entry is not an object',
    { ...IMAGE(), image_ref: [img(), 'x'] },
    "Expected object for image_ref[1] but received 'x'",
  ),
  bad400(
    'ImageRef url is not a string',
    { ...IMAGE(), image_ref: [{ url: 5 }] },
    'Expected string for image_ref[0].url but received 5',
  ),
  bad400(
    'ImageRef media_type is not a string',
    { ...IMAGE_EDIT(), source: { data: PNG_1X1_BASE64, media_type: ['image/png'] } },
    'Expected string for source.media_type but received an array',
  ),
  bad400(
    'unknown ImageRef field',
    { ...IMAGE_EDIT(), source: { ...img(), mime: 'image/png' } },
    "Unknown field 'source.mime'",
  ),
  bad400(
    'video is not an object',
    { ...VIDEO(), video: true },
    'Expected object for video but received true',
  ),
  bad400('unknown video field', video({ fps: 24 }), "Unknown field 'video.fps'"),
  bad400(
    'video.duration unknown value',
    video({ duration: '7s' }),
    "Expected one of '5s', '10s' for video.duration but received '7s'",
  ),
  bad400(
    'video.duration not a string',
    video({ duration: 5 }),
    "Expected one of '5s', '10s' for video.duration but received 5",
  ),
  bad400(
    'video.resolution unknown value',
    video({ resolution: '4k' }),
    "Expected one of '360p', '540p', '720p', '1080p' for video.resolution but received '4k'",
  ),
  bad400(
    'video.hdr not a boolean',
    video({ hdr: 'true' }),
    "Expected boolean for video.hdr but received 'true'",
  ),
  bad400(
    'video.exr_export not a boolean',
    video({ exr_export: 1 }),
    'Expected boolean for video.exr_export but received 1',
  ),
  bad400(
    'video.loop not a boolean',
    video({ loop: 'yes' }),
    "Expected boolean for video.loop but received 'yes'",
  ),
  bad400(
    'video.start_frame not an object',
    video({ start_frame: PNG_1X1_BASE64.slice(0, 10) }),
    "Expected object for video.start_frame but received 'iVBORw0KGg'",
  ),
  bad400(
    'video.guide_frame not an object',
    video({ guide_frame: [img()] }),
    'Expected object for video.guide_frame but received an array',
  ),
  bad400(
    'video.keyframes not an array',
    video({ keyframes: img(), keyframe_indexes: [0] }),
    'Expected array for video.keyframes but received an object',
  ),
  bad400(
    'video.keyframe_indexes entry not an integer',
    video({ keyframes: [img(), img()], keyframe_indexes: [0, 1.5] }),
    'Expected integer for video.keyframe_indexes[1] but received 1.5',
  ),
  bad400(
    'video.keyframe_indexes entry a string',
    video({ keyframes: [img()], keyframe_indexes: ['0'] }),
    "Expected integer for video.keyframe_indexes[0] but received '0'",
  ),
  bad400(
    'source_position not an object',
    reframe({ source_position: 'center' }),
    "Expected object for video.source_position but received 'center'",
  ),
  bad400(
    'source_position h_norm above 2.0',
    reframe({ source_position: { h_norm: 2.5, w_norm: 1, x_norm: 0, y_norm: 0 } }),
    'Expected number greater than 0 and at most 2 for video.source_position.h_norm but received 2.5',
  ),
  bad400(
    'source_position w_norm zero',
    reframe({ source_position: { h_norm: 1, w_norm: 0, x_norm: 0, y_norm: 0 } }),
    'Expected number greater than 0 and at most 2 for video.source_position.w_norm but received 0',
  ),
  bad400(
    'source_position x_norm not a number',
    reframe({ source_position: { h_norm: 1, w_norm: 1, x_norm: 'left', y_norm: 0 } }),
    "Expected number for video.source_position.x_norm but received 'left'",
  ),
  bad400(
    'source_position y_norm missing (choice: all four are required)',
    reframe({ source_position: { h_norm: 1, w_norm: 1, x_norm: 0 } }),
    'Expected number for video.source_position.y_norm but received nothing',
  ),
  bad400(
    'unknown source_position field',
    reframe({ source_position: { h_norm: 1, w_norm: 1, x_norm: 0, y_norm: 0, z_norm: 0 } }),
    "Unknown field 'video.source_position.z_norm'",
  ),
  bad400(
    'video.edit not an object',
    videoEdit({ edit: [] }),
    'Expected object for video.edit but received an array',
  ),
  bad400(
    'unknown video.edit field',
    videoEdit({ edit: { mode: 'auto' } }),
    "Unknown field 'video.edit.mode'",
  ),
  bad400(
    'video.edit.auto_controls not a boolean',
    videoEdit({ edit: { auto_controls: 'on' } }),
    "Expected boolean for video.edit.auto_controls but received 'on'",
  ),
  bad400(
    'video.edit.controls not an object',
    videoEdit({ edit: { controls: ['depth'] } }),
    'Expected object for video.edit.controls but received an array',
  ),
  bad400(
    'unknown video.edit.controls signal',
    videoEdit({ edit: { controls: { sketch: { enabled: true } } } }),
    "Unknown field 'video.edit.controls.sketch'",
  ),
  bad400(
    'control signal not an object',
    videoEdit({ edit: { controls: { depth: true } } }),
    'Expected object for video.edit.controls.depth but received true',
  ),
  bad400(
    'control signal enabled not a boolean',
    videoEdit({ edit: { controls: { pose: { enabled: 'yes' } } } }),
    "Expected boolean for video.edit.controls.pose.enabled but received 'yes'",
  ),
  bad400(
    'video.edit.strength above 1 (choice)',
    videoEdit({ edit: { strength: 1.5 } }),
    'Expected number between 0 and 1 for video.edit.strength but received 1.5',
  ),
  bad400(
    'video.edit.strength not a number',
    videoEdit({ edit: { strength: 'high' } }),
    "Expected number between 0 and 1 for video.edit.strength but received 'high'",
  ),
  bad400(
    'video.edit.keyframes entry not an object',
    videoEdit({ edit: { keyframes: [1], keyframe_indexes: [0] } }),
    'Expected object for video.edit.keyframes[0] but received 1',
  ),
  bad400(
    'video.edit.keyframe_indexes not an array',
    videoEdit({ edit: { keyframes: [img()], keyframe_indexes: 0 } }),
    'Expected array for video.edit.keyframe_indexes but received 0',
  ),
];

// ---- model, type, aspect_ratio, prompt -------------------------------------------------------

const HEAD: GenerationCase[] = [
  bad400('unknown model', { ...IMAGE(), model: 'uni-2' }, 'Unknown model: uni-2'),
  bad400('legacy model on the agents surface', { ...VIDEO(), model: 'ray-2' }, 'Unknown model: ray-2'),
  bad400(
    'video type with an image model',
    { ...VIDEO(), model: 'uni-1' },
    "Type 'video' is not supported for model 'uni-1'",
  ),
  bad400(
    'default type image with the video model',
    { ...IMAGE(), model: 'ray-3.2' },
    "Type 'image' is not supported for model 'ray-3.2'",
  ),
  bad400(
    'image_edit with the video model',
    { ...IMAGE_EDIT(), model: 'ray-3.2' },
    "Type 'image_edit' is not supported for model 'ray-3.2'",
  ),
  bad400(
    'video_reframe with uni-1-max',
    { ...REFRAME(), model: 'uni-1-max' },
    "Type 'video_reframe' is not supported for model 'uni-1-max'",
  ),
  bad400(
    'image aspect_ratio 4:3',
    { ...IMAGE(), aspect_ratio: '4:3' },
    `Invalid aspect_ratio '4:3'. Valid: ${IMAGE_RATIOS}`,
  ),
  bad400(
    'image_edit aspect_ratio 21:9',
    { ...IMAGE_EDIT(), aspect_ratio: '21:9' },
    `Invalid aspect_ratio '21:9'. Valid: ${IMAGE_RATIOS}`,
  ),
  bad400(
    'video aspect_ratio 2:3',
    { ...VIDEO(), aspect_ratio: '2:3' },
    `Invalid aspect_ratio '2:3'. Valid: ${VIDEO_RATIOS}`,
  ),
  bad400(
    'video_reframe aspect_ratio 9:21',
    { ...REFRAME(), aspect_ratio: '9:21' },
    `Invalid aspect_ratio '9:21'. Valid: ${VIDEO_RATIOS}`,
  ),
  bad400(
    'video_reframe without aspect_ratio',
    { type: 'video_reframe', source: vid() },
    "aspect_ratio (the target shape) is required for type 'video_reframe'",
  ),
  bad400('prompt missing on image', {}, 'Prompt must be between 1 and 6000 characters'),
  bad400('prompt empty', { prompt: '' }, 'Prompt must be between 1 and 6000 characters'),
  bad400(
    'prompt of 6001 characters',
    { prompt: 'p'.repeat(6001) },
    'Prompt must be between 1 and 6000 characters',
  ),
  bad400(
    'prompt missing on image_edit',
    { type: 'image_edit', source: img() },
    'Prompt must be between 1 and 6000 characters',
  ),
  bad400('prompt missing on video', { type: 'video' }, 'Prompt must be between 1 and 6000 characters'),
  bad400(
    'prompt missing on video_edit',
    { type: 'video_edit', source: vid() },
    'Prompt must be between 1 and 6000 characters',
  ),
  bad400(
    'prompt given empty on video_reframe',
    { ...REFRAME(), prompt: '' },
    'Prompt must be between 1 and 6000 characters',
  ),
];

// ---- references (shape) ----------------------------------------------------------------------

const REFS: GenerationCase[] = [
  bad400(
    'source with url and data',
    { ...IMAGE_EDIT(), source: { ...img(), url: 'https://example.com/a.png' } },
    "source: provide either 'url' or 'data', not both",
  ),
  bad400(
    'image_ref entry with url and data',
    { ...IMAGE(), image_ref: [img(), { ...img(), url: 'https://example.com/a.png' }] },
    "image_ref[1]: provide either 'url' or 'data', not both",
  ),
  bad400(
    'video.start_frame with url and data',
    video({ start_frame: { ...img(), url: 'https://example.com/a.png' } }),
    "video.start_frame: provide either 'url' or 'data', not both",
  ),
  bad400(
    'ImageRef with no channel',
    { ...IMAGE(), image_ref: [{}] },
    "image_ref[0]: provide exactly one of 'url', 'data', 'file_id' or 'generation_id'",
  ),
  bad400(
    'ImageRef with only media_type',
    { ...IMAGE_EDIT(), source: { media_type: 'image/png' } },
    "source: provide exactly one of 'url', 'data', 'file_id' or 'generation_id'",
  ),
  bad400(
    'ImageRef with file_id and generation_id',
    { ...IMAGE_EDIT(), source: { ...file(), ...gen() } },
    "source: provide exactly one of 'url', 'data', 'file_id' or 'generation_id'",
  ),
  bad400(
    'ImageRef with url and file_id',
    video({ end_frame: { url: 'https://example.com/a.png', ...file() } }),
    "video.end_frame: provide exactly one of 'url', 'data', 'file_id' or 'generation_id'",
  ),
  bad400(
    'video.keyframes entry with data and generation_id',
    video({ keyframes: [img(), { ...img(), ...gen() }], keyframe_indexes: [0, 60] }),
    "video.keyframes[1]: provide exactly one of 'url', 'data', 'file_id' or 'generation_id'",
  ),
  bad400(
    'source data without media_type',
    { ...IMAGE_EDIT(), source: { data: PNG_1X1_BASE64 } },
    "source: 'media_type' is required with 'data'",
  ),
  bad400(
    'image_ref data without media_type',
    { ...IMAGE(), image_ref: [{ data: PNG_1X1_BASE64 }] },
    "image_ref[0]: 'media_type' is required with 'data'",
  ),
  bad400(
    'video_edit source data without media_type',
    { ...VIDEO_EDIT(), source: { data: MP4_1S_BASE64 } },
    "source: 'media_type' is required with 'data'",
  ),
  bad400(
    'url not http(s)',
    { ...IMAGE(), image_ref: [{ url: 'ftp://example.com/a.png' }] },
    "Expected http(s) URL for image_ref[0].url but received 'ftp://example.com/a.png'",
  ),
  bad400(
    'url not a URL',
    { ...IMAGE_EDIT(), source: { url: 'a.png' } },
    "Expected http(s) URL for source.url but received 'a.png'",
  ),
  bad400(
    'file_id not a UUID',
    { ...IMAGE_EDIT(), source: { file_id: 'file-1' } },
    "Expected UUID for source.file_id but received 'file-1'",
  ),
  bad400(
    'generation_id not a UUID',
    video({ start_frame: { generation_id: '42' } }),
    "Expected UUID for video.start_frame.generation_id but received '42'",
  ),
  bad400(
    'media_type not a MIME type',
    { ...IMAGE_EDIT(), source: { data: PNG_1X1_BASE64, media_type: 'png' } },
    "Expected MIME type for source.media_type but received 'png'",
  ),
];

// ---- type/field rules ------------------------------------------------------------------------

const SOURCE_ONLY_VALID = `source is only valid for type 'image_edit', 'video_edit', or 'video_reframe' (video_edit and video_reframe take ${VIDEO_SOURCE_FORMS})`;

const TYPE_RULES: GenerationCase[] = [
  bad400(
    'image_edit with 9 image_ref entries',
    { ...IMAGE_EDIT(), image_ref: images(9) },
    'image_edit supports up to 8 reference images (source occupies one slot)',
  ),
  bad400(
    'image with 9 image_ref entries (choice)',
    { ...IMAGE(), image_ref: images(9) },
    'image supports up to 8 reference images',
  ),
  bad400(
    'video with 9 image_ref entries (choice)',
    { ...VIDEO(), image_ref: images(9) },
    'video supports up to 8 reference images',
  ),
  bad400('source on type image', { ...IMAGE(), source: img() }, SOURCE_ONLY_VALID),
  bad400('source.data on type video', { ...VIDEO(), source: img() }, SOURCE_ONLY_VALID),
  bad400('source.file_id on type video', { ...VIDEO(), source: file() }, SOURCE_ONLY_VALID),
  bad400(
    'source.generation_id on type video',
    { ...VIDEO(), source: gen() },
    "source.generation_id is only valid for type 'image_edit', 'video_edit', or 'video_reframe'",
  ),
  bad400(
    'source missing on image_edit',
    { type: 'image_edit', prompt: 'violet sky' },
    "source is required for type 'image_edit'",
  ),
  bad400(
    'source missing on video_edit',
    { type: 'video_edit', prompt: 'anime' },
    `source is required for type 'video_edit' (give ${VIDEO_SOURCE_FORMS})`,
  ),
  bad400(
    'source missing on video_reframe',
    { type: 'video_reframe', aspect_ratio: '1:1' },
    `source is required for type 'video_reframe' (give ${VIDEO_SOURCE_FORMS})`,
  ),
  bad400(
    'video_edit source.url without media_type',
    { ...VIDEO_EDIT(), source: { url: 'https://example.com/clip.mp4' } },
    "source.media_type must be a video/* type (for example video/mp4) when source.url or source.data is used for type 'video_edit'",
  ),
  bad400(
    'video_reframe source.data with an image media_type',
    { ...REFRAME(), source: img() },
    "source.media_type must be a video/* type (for example video/mp4) when source.url or source.data is used for type 'video_reframe'",
  ),
  bad400(
    'image_edit source with a video media_type (choice)',
    { ...IMAGE_EDIT(), source: vid() },
    "Expected an image/* type for source.media_type but received 'video/mp4'",
  ),
  bad400(
    'image_ref with a video media_type (choice)',
    { ...IMAGE(), image_ref: [{ url: 'https://example.com/a.mp4', media_type: 'video/mp4' }] },
    "Expected an image/* type for image_ref[0].media_type but received 'video/mp4'",
  ),
  bad400(
    'video.start_frame with a non-image media_type (choice)',
    video({ start_frame: { data: PNG_1X1_BASE64, media_type: 'application/pdf' } }),
    "Expected an image/* type for video.start_frame.media_type but received 'application/pdf'",
  ),
  bad400(
    'image_ref on video_edit',
    { ...VIDEO_EDIT(), image_ref: [img()] },
    "image_ref is not supported for type 'video_edit'",
  ),
  bad400(
    'video object on type image (choice)',
    { ...IMAGE(), video: { duration: '5s' } },
    "video is only valid for type 'video', 'video_edit', or 'video_reframe'",
  ),
  bad400(
    'video object on type image_edit (choice)',
    { ...IMAGE_EDIT(), video: {} },
    "video is only valid for type 'video', 'video_edit', or 'video_reframe'",
  ),
  bad400('video.loop on video_edit', videoEdit({ loop: true }), "video.loop is only valid for type 'video'"),
  bad400(
    'video.edit on type video',
    video({ edit: { auto_controls: true } }),
    "video.edit is only valid for type 'video_edit'",
  ),
  bad400(
    'video.source_position on type video',
    video({ source_position: { h_norm: 1, w_norm: 1, x_norm: 0, y_norm: 0 } }),
    "video.source_position is only valid for type 'video_reframe'",
  ),
  bad400(
    'video.source_position on video_edit',
    videoEdit({ source_position: { h_norm: 1, w_norm: 1, x_norm: 0, y_norm: 0 } }),
    "video.source_position is only valid for type 'video_reframe'",
  ),
  bad400(
    'video.keyframes on video_edit (choice text)',
    videoEdit({ keyframes: [img()], keyframe_indexes: [0] }),
    "video.keyframes is only valid for type 'video'",
  ),
  bad400(
    'video.keyframe_indexes on video_reframe (choice text)',
    reframe({ keyframe_indexes: [0] }),
    "video.keyframe_indexes is only valid for type 'video'",
  ),
  bad400(
    'video.duration on video_edit (choice)',
    videoEdit({ duration: '5s' }),
    "video.duration is only valid for type 'video' (the output of type 'video_edit' is as long as its source)",
  ),
  bad400(
    'video.duration on video_reframe (choice)',
    reframe({ duration: '10s' }),
    "video.duration is only valid for type 'video' (the output of type 'video_reframe' is as long as its source)",
  ),
  // video.edit
  bad400(
    'video.edit.auto_controls=true with controls',
    videoEdit({ edit: { auto_controls: true, controls: { depth: { enabled: true } } } }),
    'video.edit.auto_controls=true cannot be combined with video.edit.controls (omit controls for automatic mode, or drop auto_controls for manual mode)',
  ),
  bad400(
    'video.edit.keyframes without keyframe_indexes',
    videoEdit({ edit: { keyframes: [img()] } }),
    'video.edit.keyframes and video.edit.keyframe_indexes must both be provided or both omitted',
  ),
  bad400(
    'video.edit.keyframe_indexes without keyframes',
    videoEdit({ edit: { keyframe_indexes: [0] } }),
    'video.edit.keyframes and video.edit.keyframe_indexes must both be provided or both omitted',
  ),
  bad400(
    'video.edit.keyframes empty (choice text)',
    videoEdit({ edit: { keyframes: [], keyframe_indexes: [] } }),
    'video.edit.keyframes must have between 1 and 64 entries',
  ),
  bad400(
    'video.edit.keyframes over 64 (choice text)',
    videoEdit({ edit: { keyframes: images(65), keyframe_indexes: range(65) } }),
    'video.edit.keyframes must have between 1 and 64 entries',
  ),
  bad400(
    'video.edit keyframe lengths differ',
    videoEdit({ edit: { keyframes: [img(), img()], keyframe_indexes: [0] } }),
    'video.edit.keyframe_indexes must have the same length as video.edit.keyframes',
  ),
  bad400(
    'video.edit negative keyframe index',
    videoEdit({ edit: { keyframes: [img(), img()], keyframe_indexes: [0, -1] } }),
    'video.edit.keyframe_indexes must be non-negative',
  ),
  bad400(
    'video.edit duplicate keyframe index',
    videoEdit({ edit: { keyframes: [img(), img()], keyframe_indexes: [3, 3] } }),
    'video.edit.keyframe_indexes must be unique',
  ),
  bad400(
    'video.start_frame with video.edit.keyframes',
    videoEdit({ start_frame: img(), edit: { keyframes: [img()], keyframe_indexes: [10] } }),
    'video.start_frame and video.edit.keyframes are mutually exclusive (give the first frame as video.edit.keyframes with index 0)',
  ),
  // video.keyframes on type video (choice texts)
  bad400(
    'video.keyframes without keyframe_indexes',
    video({ keyframes: [img()] }),
    'video.keyframes and video.keyframe_indexes must both be provided or both omitted',
  ),
  bad400(
    'video.keyframe_indexes without keyframes',
    video({ keyframe_indexes: [0] }),
    'video.keyframes and video.keyframe_indexes must both be provided or both omitted',
  ),
  bad400(
    'video.keyframes with start_frame',
    video({ start_frame: img(), keyframes: [img()], keyframe_indexes: [60] }),
    'video.keyframes is mutually exclusive with video.start_frame, video.end_frame and video.loop',
  ),
  bad400(
    'video.keyframes with end_frame',
    video({ end_frame: img(), keyframes: [img()], keyframe_indexes: [0] }),
    'video.keyframes is mutually exclusive with video.start_frame, video.end_frame and video.loop',
  ),
  bad400(
    'video.keyframes with loop',
    video({ loop: true, keyframes: [img()], keyframe_indexes: [0] }),
    'video.keyframes is mutually exclusive with video.start_frame, video.end_frame and video.loop',
  ),
  bad400(
    'video.keyframes empty',
    video({ keyframes: [], keyframe_indexes: [] }),
    'video.keyframes must have between 1 and 64 entries',
  ),
  bad400(
    'video.keyframes over 64',
    video({ keyframes: images(65), keyframe_indexes: range(65) }),
    'video.keyframes must have between 1 and 64 entries',
  ),
  bad400(
    'video keyframe lengths differ',
    video({ keyframes: [img()], keyframe_indexes: [0, 60] }),
    'video.keyframe_indexes must have the same length as video.keyframes',
  ),
  bad400(
    'video negative keyframe index',
    video({ keyframes: [img(), img()], keyframe_indexes: [-5, 60] }),
    'video.keyframe_indexes must be non-negative',
  ),
  bad400(
    'video duplicate keyframe index',
    video({ keyframes: [img(), img()], keyframe_indexes: [60, 60] }),
    'video.keyframe_indexes must be unique',
  ),
  bad400(
    'video keyframe index past the 5s grid',
    video({ keyframes: [img(), img()], keyframe_indexes: [0, 121] }),
    "video.keyframe_indexes must be between 0 and 120 for duration '5s' (24 fps grid)",
  ),
  bad400(
    'video keyframe index past the 10s grid',
    video({ duration: '10s', keyframes: [img()], keyframe_indexes: [241] }),
    "video.keyframe_indexes must be between 0 and 240 for duration '10s' (24 fps grid)",
  ),
  // generation-ref keyframes and video extend
  bad400(
    'generation_id in both start_frame and end_frame',
    video({ start_frame: gen(), end_frame: { generation_id: '00000000-0000-4000-8000-0000000000a2' } }),
    "generation-ref keyframes are only supported for video extend (type 'video' with exactly one generation_id, in video.start_frame or video.end_frame)",
  ),
  bad400(
    'generation_id in video.keyframes',
    video({ keyframes: [gen()], keyframe_indexes: [0] }),
    "generation-ref keyframes are only supported for video extend (type 'video' with exactly one generation_id, in video.start_frame or video.end_frame)",
  ),
  bad400(
    'generation_id in video.guide_frame',
    video({ guide_frame: gen() }),
    "generation-ref keyframes are only supported for video extend (type 'video' with exactly one generation_id, in video.start_frame or video.end_frame)",
  ),
  bad400(
    'generation_id start_frame on video_edit',
    videoEdit({ start_frame: gen() }),
    "generation-ref keyframes are only supported for video extend (type 'video' with exactly one generation_id, in video.start_frame or video.end_frame)",
  ),
  bad400(
    'generation_id in video.edit.keyframes',
    videoEdit({ edit: { keyframes: [gen()], keyframe_indexes: [0] } }),
    "generation-ref keyframes are only supported for video extend (type 'video' with exactly one generation_id, in video.start_frame or video.end_frame)",
  ),
  bad400(
    'HDR on forward extend',
    video({ start_frame: gen(), hdr: true }),
    'HDR is not supported with video extend',
  ),
  bad400(
    'HDR on reverse extend',
    video({ end_frame: gen(), hdr: true }),
    'HDR is not supported with video extend',
  ),
  bad400(
    'loop on reverse extend',
    video({ end_frame: gen(), loop: true }),
    'loop is only supported with forward video extend',
  ),
  // video_reframe
  bad400(
    'video_reframe with start_frame',
    reframe({ start_frame: img() }),
    "video.start_frame / video.end_frame are not supported for type 'video_reframe'",
  ),
  bad400(
    'video_reframe with end_frame',
    reframe({ end_frame: img() }),
    "video.start_frame / video.end_frame are not supported for type 'video_reframe'",
  ),
  bad400(
    'video_reframe with loop',
    reframe({ loop: true }),
    "video.loop is not supported for type 'video_reframe'",
  ),
  bad400(
    'video_reframe with hdr',
    reframe({ hdr: true }),
    "HDR / exr_export are not supported for type 'video_reframe'",
  ),
  bad400(
    'video_reframe with exr_export',
    reframe({ exr_export: true }),
    "HDR / exr_export are not supported for type 'video_reframe'",
  ),
  bad400(
    'video_reframe with video.edit',
    reframe({ edit: { auto_controls: true } }),
    "video.edit is not supported for type 'video_reframe'",
  ),
  bad400(
    'video_reframe 1080p to 9:16',
    reframe({ resolution: '1080p' }, { aspect_ratio: '9:16' }),
    "1080p resolution is not yet available for vertical reframe (aspect_ratio '9:16'); use 720p or lower for now, 1080p vertical reframe is coming soon",
  ),
  bad400(
    'video_reframe 1080p to 3:4',
    reframe({ resolution: '1080p' }, { aspect_ratio: '3:4' }),
    "1080p resolution is not yet available for vertical reframe (aspect_ratio '3:4'); use 720p or lower for now, 1080p vertical reframe is coming soon",
  ),
];

// ---- incompatible video options --------------------------------------------------------------

const COMBOS: GenerationCase[] = [
  bad400(
    '540p with hdr',
    video({ resolution: '540p', hdr: true }),
    "resolution '540p' is not supported with hdr=true",
  ),
  bad400(
    '360p with hdr on type video (SDR-only draft tier)',
    video({ resolution: '360p', hdr: true }),
    "resolution '360p' is not supported with hdr=true",
  ),
  bad400(
    '360p with hdr on video_edit',
    videoEdit({ resolution: '360p', hdr: true }),
    "resolution '360p' is not supported with hdr=true",
  ),
  bad400(
    '10s with hdr',
    video({ duration: '10s', hdr: true }),
    "duration '10s' is not supported with hdr=true",
  ),
  bad400(
    '10s with hdr and keyframes',
    video({ duration: '10s', hdr: true, keyframes: [img()], keyframe_indexes: [0] }),
    "duration '10s' is not supported with hdr=true",
  ),
  bad400(
    '10s with start_frame',
    video({ duration: '10s', start_frame: img() }),
    "duration '10s' is not supported with start_frame / end_frame",
  ),
  bad400(
    '10s with end_frame',
    video({ duration: '10s', end_frame: img() }),
    "duration '10s' is not supported with start_frame / end_frame",
  ),
  bad400(
    '10s forward extend',
    video({ duration: '10s', start_frame: gen() }),
    "duration '10s' is not supported with start_frame / end_frame",
  ),
  bad400(
    'loop with 10s',
    video({ duration: '10s', loop: true }),
    "loop is not supported with duration '10s'",
  ),
  bad400('loop with hdr', video({ loop: true, hdr: true }), 'loop is not supported with hdr=true'),
  bad400(
    'loop with end_frame',
    video({ loop: true, end_frame: img() }),
    'loop is not supported with end_frame (no seamless start-end match)',
  ),
  bad400('exr_export without hdr', video({ exr_export: true }), 'exr_export requires hdr=true'),
  bad400(
    'exr_export with hdr=false',
    videoEdit({ exr_export: true, hdr: false }),
    'exr_export requires hdr=true',
  ),
];

// ---- 422 manga -------------------------------------------------------------------------------

const MANGA_VALID = 'Valid aspect_ratio: 1:2, 1:3, 2:3, 9:16';
const MANGA: GenerationCase[] = [
  {
    name: 'manga with 16:9',
    body: { ...IMAGE(), style: 'manga', aspect_ratio: '16:9' },
    status: 422,
    detail: `aspect_ratio='16:9' is not allowed when style='manga'. ${MANGA_VALID}`,
  },
  {
    name: 'manga with the default image aspect ratio 1:1',
    body: { ...IMAGE(), style: 'manga' },
    status: 422,
    detail: `aspect_ratio='1:1' is not allowed when style='manga'. ${MANGA_VALID}`,
  },
  {
    name: 'manga with landscape 3:2 on image_edit',
    body: { ...IMAGE_EDIT(), style: 'manga', aspect_ratio: '3:2' },
    status: 422,
    detail: `aspect_ratio='3:2' is not allowed when style='manga'. ${MANGA_VALID}`,
  },
  {
    name: 'manga on type video with the default 16:9',
    body: { ...VIDEO(), style: 'manga' },
    status: 422,
    detail: `aspect_ratio='16:9' is not allowed when style='manga'. ${MANGA_VALID}`,
  },
];

// ---- 413 and source duration (media facts) ---------------------------------------------------

const OVER_BYTES = 50 * MiB + 1;
const MEDIA: GenerationCase[] = [
  {
    name: 'image_edit source over 50 MB',
    body: IMAGE_EDIT(),
    media: { source: { bytes: OVER_BYTES, width: 100, height: 100 } },
    status: 413,
    detail: 'source: image exceeds 50 MB limit',
  },
  {
    name: 'image_ref entry over 50 MB',
    body: { ...IMAGE(), image_ref: [img(), img(), img()] },
    media: { 'image_ref[2]': { bytes: OVER_BYTES } },
    status: 413,
    detail: 'image_ref[2]: image exceeds 50 MB limit',
  },
  {
    name: 'url image_ref entry over 50 MB',
    body: { ...IMAGE(), image_ref: [{ url: 'https://example.com/big.png' }] },
    media: { 'image_ref[0]': { bytes: OVER_BYTES } },
    status: 413,
    detail: 'image_ref[0]: image exceeds 50 MB limit',
  },
  {
    name: 'image_ref entry wider than 8000 px',
    body: { ...IMAGE_EDIT(), image_ref: [img()] },
    media: {
      source: { bytes: 1000, width: 8000, height: 8000 },
      'image_ref[0]': { bytes: 1000, width: 8001, height: 600 },
    },
    status: 413,
    detail: 'image_ref[0]: image is 8001x600px but each side must be <= 8000px. Resize and try again.',
  },
  {
    name: 'video.start_frame over 50 MB',
    body: video({ start_frame: img() }),
    media: { 'video.start_frame': { bytes: OVER_BYTES } },
    status: 413,
    detail: 'video.start_frame: image exceeds 50 MB limit',
  },
  {
    name: 'video.end_frame taller than 8000 px',
    body: video({ end_frame: img() }),
    media: { 'video.end_frame': { bytes: 5000, width: 640, height: 9000 } },
    status: 413,
    detail: 'video.end_frame: image is 640x9000px but each side must be <= 8000px. Resize and try again.',
  },
  {
    name: 'video.guide_frame over 50 MB (validated like an anchor)',
    body: videoEdit({ guide_frame: img() }),
    media: { 'video.guide_frame': { bytes: OVER_BYTES } },
    status: 413,
    detail: 'video.guide_frame: image exceeds 50 MB limit',
  },
  {
    name: 'video.keyframes entry over 8000 px',
    body: video({ keyframes: [img(), img()], keyframe_indexes: [0, 120] }),
    media: { 'video.keyframes[1]': { bytes: 5000, width: 12000, height: 12000 } },
    status: 413,
    detail:
      'video.keyframes[1]: image is 12000x12000px but each side must be <= 8000px. Resize and try again.',
  },
  {
    name: 'video.edit.keyframes entry over 50 MB',
    body: videoEdit({ edit: { keyframes: [img()], keyframe_indexes: [0] } }),
    media: { 'video.edit.keyframes[0]': { bytes: OVER_BYTES } },
    status: 413,
    detail: 'video.edit.keyframes[0]: image exceeds 50 MB limit',
  },
  {
    name: 'inline source.data video over 50 MB on video_edit',
    body: VIDEO_EDIT(),
    media: { source: { bytes: OVER_BYTES, durationSeconds: 4 } },
    status: 413,
    detail: 'source: image exceeds 50 MB limit',
  },
  {
    name: 'inline source.data video over 50 MB on video_reframe',
    body: REFRAME(),
    media: { source: { bytes: OVER_BYTES, durationSeconds: 4 } },
    status: 413,
    detail: 'source: image exceeds 50 MB limit',
  },
  {
    name: 'video_reframe source longer than 30 s (choice text)',
    body: REFRAME(),
    media: { source: { bytes: 4000, durationSeconds: 31.5 } },
    status: 422,
    detail: "source: video is 31.5s long but must be at most 30s for type 'video_reframe'",
  },
  {
    name: 'video_edit source longer than 30 s (choice text)',
    body: { ...VIDEO_EDIT(), source: { url: 'https://example.com/clip.mp4', media_type: 'video/mp4' } },
    media: { source: { bytes: 4000, durationSeconds: 30.001 } },
    status: 422,
    detail: "source: video is 30.01s long but must be at most 30s for type 'video_edit'",
  },
  {
    name: 'video_edit source longer than 18 s with video.edit (choice text)',
    body: videoEdit({ edit: { auto_controls: true } }),
    media: { source: { bytes: 4000, durationSeconds: 18.5 } },
    status: 422,
    detail: "source: video is 18.5s long but must be at most 18s for type 'video_edit' with video.edit",
  },
  {
    name: 'generation_id video source longer than 30 s',
    body: { ...REFRAME(), source: gen() },
    media: { source: { bytes: 0, durationSeconds: 40 } },
    status: 422,
    detail: "source: video is 40s long but must be at most 30s for type 'video_reframe'",
  },
];

// ---- order: which detail a request with several problems gets ---------------------------------

const ORDER: GenerationCase[] = [
  bad400('order: unknown field before a wrong type', { prompt: 1, colour: 'red' }, "Unknown field 'colour'"),
  bad400(
    'order: wrong JSON type before unknown model',
    { model: 'uni-9', video: 1 },
    'Expected object for video but received 1',
  ),
  bad400('order: model before type', { type: 'video', model: 'uni-9', prompt: '' }, 'Unknown model: uni-9'),
  bad400(
    'order: type before aspect_ratio',
    { type: 'video', model: 'uni-1', aspect_ratio: '5:5' },
    "Type 'video' is not supported for model 'uni-1'",
  ),
  bad400(
    'order: aspect_ratio before prompt',
    { aspect_ratio: '5:4' },
    `Invalid aspect_ratio '5:4'. Valid: ${IMAGE_RATIOS}`,
  ),
  bad400(
    'order: prompt before references',
    { prompt: '', image_ref: [{}] },
    'Prompt must be between 1 and 6000 characters',
  ),
  bad400(
    'order: reference shape before type rules',
    { ...IMAGE(), source: { url: 'https://example.com/a.png', data: PNG_1X1_BASE64 } },
    "source: provide either 'url' or 'data', not both",
  ),
  bad400(
    'order: type rules before option combinations',
    videoEdit({ loop: true, duration: '10s' }),
    "video.loop is only valid for type 'video'",
  ),
  bad400(
    'order: extend rules before option combinations',
    video({ end_frame: gen(), loop: true }),
    'loop is only supported with forward video extend',
  ),
  bad400(
    'order: combinations in table order',
    video({ resolution: '540p', duration: '10s', hdr: true, loop: true }),
    "resolution '540p' is not supported with hdr=true",
  ),
  bad400(
    'order: 400 before 422 manga',
    { ...IMAGE(), style: 'manga', video: {} },
    "video is only valid for type 'video', 'video_edit', or 'video_reframe'",
  ),
  {
    name: 'order: 422 manga before 413',
    body: { ...IMAGE_EDIT(), style: 'manga', aspect_ratio: '16:9' },
    media: { source: { bytes: OVER_BYTES } },
    status: 422,
    detail: `aspect_ratio='16:9' is not allowed when style='manga'. ${MANGA_VALID}`,
  },
  {
    name: 'order: 413 bytes before pixels, first site first',
    body: { ...IMAGE_EDIT(), image_ref: [img()] },
    media: { source: { bytes: 10, width: 9000, height: 10 }, 'image_ref[0]': { bytes: OVER_BYTES } },
    status: 413,
    detail: 'source: image is 9000x10px but each side must be <= 8000px. Resize and try again.',
  },
];

/** Every rejection row, in table order. */
export const GENERATION_CASES: readonly GenerationCase[] = [
  ...SCHEMA,
  ...HEAD,
  ...REFS,
  ...TYPE_RULES,
  ...COMBOS,
  ...MANGA,
  ...MEDIA,
  ...ORDER,
];

/** Bodies every type accepts (references are inline, so they resolve without any network). */
export const VALID_BODIES: Readonly<Record<GenerationType, readonly ValidBody[]>> = {
  image: [
    { name: 'prompt only (type, model and aspect ratio default)', body: IMAGE() },
    {
      name: 'every field',
      body: {
        type: 'image',
        model: 'uni-1-max',
        prompt: 'ink drawing of a lighthouse',
        aspect_ratio: '9:16',
        style: 'manga',
        image_ref: images(8),
        user_id: 'end-user-17',
      },
    },
    { name: 'manga with 2:3', body: { ...IMAGE(), style: 'manga', aspect_ratio: '2:3' } },
    { name: 'unknown style is accepted', body: { ...IMAGE(), style: 'watercolor', aspect_ratio: '3:1' } },
    { name: 'prompt of 6000 characters', body: { prompt: 'p'.repeat(6000) } },
  ],
  image_edit: [
    { name: 'source only', body: IMAGE_EDIT() },
    {
      name: 'source, 8 image_ref entries and an aspect ratio',
      body: { ...IMAGE_EDIT(), model: 'uni-1-max', image_ref: images(8), aspect_ratio: '1:2' },
    },
  ],
  video: [
    { name: 'prompt only (5s, 720p, 16:9 by default)', body: VIDEO() },
    {
      name: 'keyframes at 10s 1080p across the whole grid',
      body: video({
        duration: '10s',
        resolution: '1080p',
        keyframes: [img(), img(), img()],
        keyframe_indexes: [0, 120, 240],
      }),
    },
    {
      name: 'keyframes with hdr and exr_export',
      body: video({ hdr: true, exr_export: true, keyframes: [img()], keyframe_indexes: [120] }),
    },
    {
      name: 'start_frame and end_frame at 1080p hdr',
      body: video({ resolution: '1080p', hdr: true, start_frame: img(), end_frame: img() }),
    },
    {
      name: 'seamless loop from a start frame',
      body: { ...video({ loop: true, start_frame: img() }), aspect_ratio: '9:16' },
    },
    { name: 'draft tier 360p, 10s', body: video({ resolution: '360p', duration: '10s' }) },
    {
      name: 'image_ref and a guide_frame',
      body: { ...video({ guide_frame: img() }), image_ref: [img()], aspect_ratio: '21:9' },
    },
    { name: 'manga at 9:16', body: { ...VIDEO(), style: 'manga', aspect_ratio: '9:16' } },
  ],
  video_edit: [
    { name: 'inline source', body: VIDEO_EDIT() },
    {
      name: 'auto controls and a strength',
      body: videoEdit({ edit: { auto_controls: true, strength: 0.4 } }),
    },
    {
      name: 'manual controls with guide keyframes',
      body: videoEdit({
        resolution: '1080p',
        hdr: true,
        edit: {
          controls: { depth: { enabled: true }, pose: { enabled: false } },
          strength: 1,
          keyframes: [img(), img()],
          keyframe_indexes: [0, 12],
        },
      }),
    },
    { name: 'start_frame and 360p', body: videoEdit({ start_frame: img(), resolution: '360p' }) },
  ],
  video_reframe: [
    { name: 'no prompt, target 9:16 at 720p', body: { ...REFRAME(), aspect_ratio: '9:16' } },
    {
      name: '1080p landscape with a source position bleeding off-canvas',
      body: reframe(
        { resolution: '1080p', source_position: { h_norm: 2, w_norm: 0.5, x_norm: -0.25, y_norm: 0.1 } },
        { prompt: 'extend the beach', image_ref: [img()] },
      ),
    },
    {
      name: '1080p square with a guide frame',
      body: reframe({ resolution: '1080p', guide_frame: img() }, { aspect_ratio: '1:1' }),
    },
  ],
};
