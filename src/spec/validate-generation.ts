/**
 * The generation-request validator of POST /v1/generations: a pure function from a parsed JSON body
 * (and, optionally, facts about resolved media) to a normalized request or the rejection the service
 * gives. The client pre-checks with it and the emulator answers with it, so both read one rule book.
 *
 * ORDER OF CHECKS — a request with several problems gets the detail of the first check that fails:
 *
 *  0. schema: the body is an object; no unknown fields (top level first, then nested objects in field
 *     order); every field has its JSON type; enum values (type, video.duration, video.resolution) and
 *     value ranges (user_id length, source_position norms, edit strength) hold. Sharp-style messages.
 *  1. model: a known model (`Unknown model: <model>`).
 *  2. type: accepted by the model (type defaults to image, model to CHOICES.defaultModel[type]).
 *  3. aspect_ratio: valid for the model and type; present on video_reframe.
 *  4. prompt: 1..6000 characters; required except on CHOICES.promptOptionalTypes.
 *  5. references (shape), for every ImageRef in listMediaRefs order: not url+data; exactly one channel;
 *     media_type with data; url is http(s); file_id / generation_id are UUIDs; media_type is a MIME type.
 *  6. type/field rules: source by type and form; image_ref by type and count; image positions take
 *     image/* media types; the video object by type (loop, edit, source_position, keyframes, duration,
 *     the video_reframe table); video.edit rules; video.keyframes rules; generation-ref keyframes and
 *     the video extend table.
 *  7. video option combinations, in the interface's table order (hdr resolution, hdr 10s, 10s with
 *     start/end frame, loop 10s, loop hdr, loop end_frame, exr_export without hdr).
 *  8. 422 style=manga with a non-portrait (effective) aspect ratio.
 *  9. only when media facts are passed: checkMediaFacts (413 bytes, 413 pixels, 422 source duration),
 *     site by site in listMediaRefs order.
 */
import { CHOICES } from './choices.ts';
import * as D from './details.ts';
import {
  type AspectRatio,
  EDIT_CONTROL_SIGNALS,
  GENERATION_TYPES,
  type GenerationType,
  HDR_RESOLUTIONS,
  IMAGE_ASPECT_RATIOS,
  IMAGE_MODELS,
  MANGA_ASPECT_RATIOS,
  MODEL_TYPES,
  MODELS,
  type Model,
  VERTICAL_ASPECT_RATIOS,
  VIDEO_ASPECT_RATIOS,
  VIDEO_DURATIONS,
  VIDEO_RESOLUTIONS,
  type VideoDuration,
  type VideoResolution,
} from './enums.ts';
import type {
  EditControlSignal,
  ImageRef,
  MediaFacts,
  MediaPosition,
  MediaRefSite,
  NormalizedGenerationRequest,
  Rejection,
  SourcePosition,
  ValidationResult,
  VideoEditOptions,
  VideoOptions,
} from './generation-request.ts';
import { LIMITS, maxFrameIndex } from './limits.ts';

// ---- internal plumbing ---------------------------------------------------------------------

/** Thrown inside this module only; the exported functions turn it into a Rejection. */
class Rejected extends Error {
  constructor(
    readonly status: Rejection['status'],
    readonly detail: string,
  ) {
    super(detail);
  }
}

function reject(detail: string, status: Rejection['status'] = 400): never {
  throw new Rejected(status, detail);
}

type Json = Record<string, unknown>;

/** The top-level fields of a generation request, in the schema's order. */
export const TOP_FIELDS = [
  'type',
  'model',
  'prompt',
  'aspect_ratio',
  'style',
  'source',
  'image_ref',
  'video',
  'user_id',
] as const;
const IMAGE_REF_FIELDS = ['url', 'data', 'media_type', 'file_id', 'generation_id'] as const;
const VIDEO_FIELDS = [
  'duration',
  'resolution',
  'hdr',
  'exr_export',
  'loop',
  'start_frame',
  'end_frame',
  'guide_frame',
  'keyframes',
  'keyframe_indexes',
  'source_position',
  'edit',
] as const;
const SOURCE_POSITION_FIELDS = ['h_norm', 'w_norm', 'x_norm', 'y_norm'] as const;
const EDIT_FIELDS = ['auto_controls', 'controls', 'strength', 'keyframes', 'keyframe_indexes'] as const;
const VIDEO_TYPES: readonly GenerationType[] = ['video', 'video_edit', 'video_reframe'];

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Whether `text` can be an id of the service: every id it gives (a generation's of either surface, a
 * file's) is a UUID, in any case.
 *
 * @example isUuid('not-a-uuid') // false
 */
export function isUuid(text: string): boolean {
  return UUID_RE.test(text);
}
const MIME_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*(\s*;.*)?$/i;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function join(prefix: string, key: string): string {
  return prefix ? `${prefix}.${key}` : key;
}

function rejectUnknownKeys(obj: Json, allowed: readonly string[], prefix: string): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) reject(D.unknownFieldDetail(join(prefix, key)));
  }
}

function has(obj: Json, key: string): boolean {
  return obj[key] !== undefined;
}

function optString(obj: Json, key: string, path: string): string | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') reject(D.expectedDetail('string', path, v));
  return v;
}

function optBoolean(obj: Json, key: string, path: string): boolean | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') reject(D.expectedDetail('boolean', path, v));
  return v;
}

function optEnum<T extends string>(
  obj: Json,
  key: string,
  path: string,
  values: readonly T[],
): T | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    reject(D.expectedDetail(D.oneOf(values), path, v));
  }
  return v as T;
}

function optObject(obj: Json, key: string, path: string): Json | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (!isObject(v)) reject(D.expectedDetail('object', path, v));
  return v;
}

function optArray(obj: Json, key: string, path: string): unknown[] | undefined {
  const v = obj[key];
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) reject(D.expectedDetail('array', path, v));
  return v;
}

function isNumber(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

// ---- 0. schema -----------------------------------------------------------------------------

interface ParsedRequest {
  type?: GenerationType;
  model?: string;
  prompt?: string;
  aspect_ratio?: string;
  style?: string;
  source?: ImageRef;
  image_ref?: ImageRef[];
  video?: VideoOptions;
  user_id?: string;
}

function parseImageRef(value: unknown, path: string): ImageRef {
  if (!isObject(value)) reject(D.expectedDetail('object', path, value));
  rejectUnknownKeys(value, IMAGE_REF_FIELDS, path);
  const ref: ImageRef = {};
  for (const key of IMAGE_REF_FIELDS) {
    const s = optString(value, key, `${path}.${key}`);
    if (s !== undefined) ref[key] = s;
  }
  return ref;
}

function parseImageRefs(obj: Json, key: string, path: string): ImageRef[] | undefined {
  const list = optArray(obj, key, path);
  return list?.map((item, i) => parseImageRef(item, `${path}[${i}]`));
}

function parseIndexes(obj: Json, key: string, path: string): number[] | undefined {
  const list = optArray(obj, key, path);
  return list?.map((item, i) => {
    if (!Number.isInteger(item)) reject(D.expectedDetail('integer', `${path}[${i}]`, item));
    return item as number;
  });
}

function parseSourcePosition(value: Json, path: string): SourcePosition {
  rejectUnknownKeys(value, SOURCE_POSITION_FIELDS, path);
  const max = LIMITS.sourcePositionMaxNorm;
  const out = {} as SourcePosition;
  for (const key of SOURCE_POSITION_FIELDS) {
    const v = value[key];
    const isSize = key === 'h_norm' || key === 'w_norm';
    const ok = isNumber(v) && (!isSize || (v > 0 && v <= max));
    if (!ok)
      reject(
        D.expectedDetail(isSize ? `number greater than 0 and at most ${max}` : 'number', `${path}.${key}`, v),
      );
    out[key] = v as number;
  }
  return out;
}

function parseControls(value: Json, path: string): NonNullable<VideoEditOptions['controls']> {
  rejectUnknownKeys(value, EDIT_CONTROL_SIGNALS, path);
  const out: NonNullable<VideoEditOptions['controls']> = {};
  for (const signal of EDIT_CONTROL_SIGNALS) {
    const s = optObject(value, signal, `${path}.${signal}`);
    if (s === undefined) continue;
    optBoolean(s, 'enabled', `${path}.${signal}.enabled`);
    out[signal] = { ...s } as EditControlSignal;
  }
  return out;
}

function parseEdit(value: Json, path: string): VideoEditOptions {
  rejectUnknownKeys(value, EDIT_FIELDS, path);
  const edit: VideoEditOptions = {};
  const auto = optBoolean(value, 'auto_controls', `${path}.auto_controls`);
  if (auto !== undefined) edit.auto_controls = auto;
  const controls = optObject(value, 'controls', `${path}.controls`);
  if (controls !== undefined) edit.controls = parseControls(controls, `${path}.controls`);
  if (has(value, 'strength')) {
    const v = value.strength;
    const { min, max } = CHOICES.editStrength;
    if (!isNumber(v) || v < min || v > max) {
      reject(D.expectedDetail(`number between ${min} and ${max}`, `${path}.strength`, v));
    }
    edit.strength = v;
  }
  const keyframes = parseImageRefs(value, 'keyframes', `${path}.keyframes`);
  if (keyframes !== undefined) edit.keyframes = keyframes;
  const indexes = parseIndexes(value, 'keyframe_indexes', `${path}.keyframe_indexes`);
  if (indexes !== undefined) edit.keyframe_indexes = indexes;
  return edit;
}

function parseVideo(value: Json): VideoOptions {
  const p = 'video';
  rejectUnknownKeys(value, VIDEO_FIELDS, p);
  const video: VideoOptions = {};
  const duration = optEnum(value, 'duration', `${p}.duration`, VIDEO_DURATIONS);
  if (duration !== undefined) video.duration = duration;
  const resolution = optEnum(value, 'resolution', `${p}.resolution`, VIDEO_RESOLUTIONS);
  if (resolution !== undefined) video.resolution = resolution;
  for (const key of ['hdr', 'exr_export', 'loop'] as const) {
    const b = optBoolean(value, key, `${p}.${key}`);
    if (b !== undefined) video[key] = b;
  }
  for (const key of ['start_frame', 'end_frame', 'guide_frame'] as const) {
    if (has(value, key)) video[key] = parseImageRef(value[key], `${p}.${key}`);
  }
  const keyframes = parseImageRefs(value, 'keyframes', `${p}.keyframes`);
  if (keyframes !== undefined) video.keyframes = keyframes;
  const indexes = parseIndexes(value, 'keyframe_indexes', `${p}.keyframe_indexes`);
  if (indexes !== undefined) video.keyframe_indexes = indexes;
  const position = optObject(value, 'source_position', `${p}.source_position`);
  if (position !== undefined) video.source_position = parseSourcePosition(position, `${p}.source_position`);
  const edit = optObject(value, 'edit', `${p}.edit`);
  if (edit !== undefined) video.edit = parseEdit(edit, `${p}.edit`);
  return video;
}

function parseSchema(body: unknown): ParsedRequest {
  if (!isObject(body)) reject(D.expectedDetail('object', 'request body', body));
  rejectUnknownKeys(body, TOP_FIELDS, '');
  const req: ParsedRequest = {};
  const type = optEnum(body, 'type', 'type', GENERATION_TYPES);
  if (type !== undefined) req.type = type;
  for (const key of ['model', 'prompt', 'aspect_ratio', 'style'] as const) {
    const s = optString(body, key, key);
    if (s !== undefined) req[key] = s;
  }
  if (has(body, 'source')) req.source = parseImageRef(body.source, 'source');
  const imageRef = parseImageRefs(body, 'image_ref', 'image_ref');
  if (imageRef !== undefined) req.image_ref = imageRef;
  const video = optObject(body, 'video', 'video');
  if (video !== undefined) req.video = parseVideo(video);
  const userId = optString(body, 'user_id', 'user_id');
  if (userId !== undefined) {
    if ([...userId].length > CHOICES.userIdMaxChars) {
      reject(D.expectedDetail(`string of at most ${CHOICES.userIdMaxChars} characters`, 'user_id', userId));
    }
    req.user_id = userId;
  }
  return req;
}

// ---- media reference sites -----------------------------------------------------------------

function sitesOf(req: {
  type?: GenerationType;
  source?: ImageRef;
  image_ref?: ImageRef[];
  video?: VideoOptions;
}): MediaRefSite[] {
  const sites: MediaRefSite[] = [];
  if (req.source) {
    const position: MediaPosition =
      req.type === 'image_edit'
        ? 'image_edit_source'
        : req.type === 'video_edit' || req.type === 'video_reframe'
          ? 'video_source'
          : 'image';
    sites.push({ path: 'source', ref: req.source, position });
  }
  req.image_ref?.forEach((ref, i) => {
    sites.push({ path: `image_ref[${i}]`, ref, position: 'image' });
  });
  const v = req.video;
  if (v) {
    for (const key of ['start_frame', 'end_frame', 'guide_frame'] as const) {
      const ref = v[key];
      if (ref) sites.push({ path: `video.${key}`, ref, position: 'image' });
    }
    v.keyframes?.forEach((ref, i) => {
      sites.push({ path: `video.keyframes[${i}]`, ref, position: 'image' });
    });
    v.edit?.keyframes?.forEach((ref, i) => {
      sites.push({ path: `video.edit.keyframes[${i}]`, ref, position: 'image' });
    });
  }
  return sites;
}

/**
 * Every ImageRef site of a request, in a fixed order: source, image_ref[i], video.start_frame,
 * video.end_frame, video.guide_frame, video.keyframes[i], video.edit.keyframes[i]. The path is the one
 * used in `detail` texts and as the key of MediaFacts.
 *
 * @param request - a normalized request (from validateGenerationRequest)
 * @returns the sites; `position` says whether the site takes an image or is a video source
 * @example listMediaRefs(req).map((s) => s.path) // ['source', 'image_ref[0]']
 */
export function listMediaRefs(request: NormalizedGenerationRequest): MediaRefSite[] {
  return sitesOf(request);
}

// ---- 5. reference shape --------------------------------------------------------------------

function isHttpUrl(s: string): boolean {
  if (!URL.canParse(s)) return false;
  const { protocol } = new URL(s);
  return protocol === 'http:' || protocol === 'https:';
}

function checkReferenceShape(site: MediaRefSite): void {
  const { path, ref } = site;
  if (ref.url !== undefined && ref.data !== undefined) reject(D.urlAndDataDetail(path));
  const channels = [ref.url, ref.data, ref.file_id, ref.generation_id].filter((c) => c !== undefined);
  if (channels.length !== 1) reject(D.exactlyOneChannelDetail(path));
  if (ref.data !== undefined && ref.media_type === undefined) reject(D.mediaTypeRequiredDetail(path));
  if (ref.url !== undefined && !isHttpUrl(ref.url))
    reject(D.expectedDetail('http(s) URL', `${path}.url`, ref.url));
  for (const key of ['file_id', 'generation_id'] as const) {
    const id = ref[key];
    if (id !== undefined && !UUID_RE.test(id)) reject(D.expectedDetail('UUID', `${path}.${key}`, id));
  }
  if (ref.media_type !== undefined && !MIME_RE.test(ref.media_type)) {
    reject(D.expectedDetail('MIME type', `${path}.media_type`, ref.media_type));
  }
}

function mediaTypeIs(ref: ImageRef, kind: 'image' | 'video'): boolean {
  return ref.media_type?.toLowerCase().startsWith(`${kind}/`) === true;
}

// ---- 6. type/field rules -------------------------------------------------------------------

function checkSource(req: ParsedRequest, type: GenerationType): void {
  const { source } = req;
  if (type === 'image' && source) reject(D.SOURCE_ONLY_VALID_DETAIL);
  if (type === 'video' && source) {
    reject(
      source.generation_id !== undefined
        ? D.SOURCE_GENERATION_ID_ONLY_VALID_DETAIL
        : D.SOURCE_ONLY_VALID_DETAIL,
    );
  }
  if (type === 'image_edit' && !source) reject(D.SOURCE_REQUIRED_IMAGE_EDIT_DETAIL);
  if (type === 'video_edit' || type === 'video_reframe') {
    if (!source) reject(D.sourceRequiredVideoDetail(type));
    if ((source.url !== undefined || source.data !== undefined) && !mediaTypeIs(source, 'video')) {
      reject(D.sourceMediaTypeVideoDetail(type));
    }
  }
}

function checkImageRefs(req: ParsedRequest, type: GenerationType): void {
  const refs = req.image_ref;
  if (refs === undefined) return;
  if (!CHOICES.imageRefTypes.includes(type)) reject(D.IMAGE_REF_VIDEO_EDIT_DETAIL);
  if (refs.length > LIMITS.imageRefMax) {
    reject(type === 'image_edit' ? D.IMAGE_EDIT_TOO_MANY_REFS_DETAIL : D.tooManyImageRefsDetail(type));
  }
}

function checkImageMediaTypes(sites: readonly MediaRefSite[]): void {
  for (const { path, ref, position } of sites) {
    if (position !== 'video_source' && ref.media_type !== undefined && !mediaTypeIs(ref, 'image')) {
      reject(D.imageMediaTypeDetail(path, ref.media_type));
    }
  }
}

function checkVideoByType(video: VideoOptions, type: GenerationType, aspectRatio: string | undefined): void {
  if (type === 'video_edit' && video.loop === true) reject(D.LOOP_ONLY_VIDEO_DETAIL);
  if (type === 'video' && video.edit) reject(D.EDIT_ONLY_VIDEO_EDIT_DETAIL);
  if (type !== 'video_reframe' && video.source_position) reject(D.SOURCE_POSITION_ONLY_REFRAME_DETAIL);
  if (type === 'video_reframe') {
    if (video.start_frame || video.end_frame) reject(D.REFRAME_FRAMES_DETAIL);
    if (video.loop === true) reject(D.REFRAME_LOOP_DETAIL);
    if (video.hdr === true || video.exr_export === true) reject(D.REFRAME_HDR_DETAIL);
    if (video.edit) reject(D.REFRAME_EDIT_DETAIL);
    const vertical = (VERTICAL_ASPECT_RATIOS as readonly string[]).includes(aspectRatio ?? '');
    if (video.resolution === '1080p' && vertical) reject(D.reframeVertical1080Detail(aspectRatio as string));
  }
  if (type !== 'video') {
    if (video.keyframes) reject(D.keyframesOnlyVideoDetail('keyframes'));
    if (video.keyframe_indexes) reject(D.keyframesOnlyVideoDetail('keyframe_indexes'));
  }
  if (video.duration !== undefined && !CHOICES.durationTypes.includes(type)) {
    reject(D.durationOnlyVideoDetail(type));
  }
}

type KeyframePrefix = 'video' | 'video.edit';

function checkKeyframeIndexes(
  prefix: KeyframePrefix,
  keyframes: readonly ImageRef[],
  indexes: readonly number[],
): void {
  if (keyframes.length < LIMITS.keyframesMin || keyframes.length > LIMITS.keyframesMax) {
    reject(D.keyframesCountDetail(prefix));
  }
  if (indexes.length !== keyframes.length) reject(D.keyframeIndexesLengthDetail(prefix));
  if (indexes.some((i) => i < 0)) reject(D.keyframeIndexesNegativeDetail(prefix));
  if (new Set(indexes).size !== indexes.length) reject(D.keyframeIndexesUniqueDetail(prefix));
}

function checkEdit(video: VideoOptions): void {
  const { edit } = video;
  if (!edit) return;
  if (edit.auto_controls === true && edit.controls !== undefined)
    reject(D.AUTO_CONTROLS_WITH_CONTROLS_DETAIL);
  if ((edit.keyframes === undefined) !== (edit.keyframe_indexes === undefined)) {
    reject(D.keyframesPairDetail('video.edit'));
  }
  if (edit.keyframes && edit.keyframe_indexes) {
    checkKeyframeIndexes('video.edit', edit.keyframes, edit.keyframe_indexes);
    if (video.start_frame) reject(D.START_FRAME_WITH_EDIT_KEYFRAMES_DETAIL);
  }
}

function checkVideoKeyframes(video: VideoOptions, model: Model): void {
  if (video.keyframes === undefined && video.keyframe_indexes === undefined) return;
  if (video.keyframes === undefined || video.keyframe_indexes === undefined)
    reject(D.keyframesPairDetail('video'));
  if (!CHOICES.keyframeModels.includes(model)) reject(D.keyframesModelDetail(model, CHOICES.keyframeModels));
  if (video.start_frame || video.end_frame || video.loop === true) reject(D.KEYFRAMES_EXCLUSIVE_DETAIL);
  checkKeyframeIndexes('video', video.keyframes, video.keyframe_indexes);
  const duration = video.duration ?? (CHOICES.defaultVideoDuration as VideoDuration);
  const max = maxFrameIndex(duration);
  if (video.keyframe_indexes.some((i) => i > max)) reject(D.keyframeIndexesRangeDetail(duration, max));
}

/** Generation-ref anchors and video extend (rule 3 and the extend table). */
function checkExtend(video: VideoOptions, type: GenerationType): void {
  const anchors: Array<[string, ImageRef | undefined]> = [
    ['start_frame', video.start_frame],
    ['end_frame', video.end_frame],
    ['guide_frame', video.guide_frame],
    ...(video.keyframes ?? []).map((r): [string, ImageRef] => ['keyframes', r]),
    ...(video.edit?.keyframes ?? []).map((r): [string, ImageRef] => ['edit.keyframes', r]),
  ];
  const genRefs = anchors.filter(([, ref]) => ref?.generation_id !== undefined).map(([name]) => name);
  if (genRefs.length === 0) return;
  const extend =
    type === 'video' && genRefs.length === 1 && (genRefs[0] === 'start_frame' || genRefs[0] === 'end_frame');
  if (!extend) reject(D.GENERATION_KEYFRAMES_DETAIL);
  if (video.hdr === true) reject(D.HDR_EXTEND_DETAIL);
  if (video.loop === true && genRefs[0] === 'end_frame') reject(D.LOOP_REVERSE_EXTEND_DETAIL);
}

// ---- 7. video option combinations ----------------------------------------------------------

function checkCombinations(video: VideoOptions): void {
  const hdr = video.hdr === true;
  const loop = video.loop === true;
  const resolution = video.resolution ?? (CHOICES.defaultVideoResolution as VideoResolution);
  const tenSeconds = video.duration === '10s';
  if (hdr && !(HDR_RESOLUTIONS as readonly string[]).includes(resolution))
    reject(D.hdrResolutionDetail(resolution));
  if (tenSeconds && hdr) reject(D.HDR_DURATION_DETAIL);
  if (tenSeconds && (video.start_frame || video.end_frame)) reject(D.DURATION_FRAMES_DETAIL);
  if (loop && tenSeconds) reject(D.LOOP_DURATION_DETAIL);
  if (loop && hdr) reject(D.LOOP_HDR_DETAIL);
  if (loop && video.end_frame) reject(D.LOOP_END_FRAME_DETAIL);
  if (video.exr_export === true && !hdr) reject(D.EXR_REQUIRES_HDR_DETAIL);
}

// ---- normalization -------------------------------------------------------------------------

function validAspectRatios(model: Model): readonly string[] {
  return (IMAGE_MODELS as readonly string[]).includes(model) ? IMAGE_ASPECT_RATIOS : VIDEO_ASPECT_RATIOS;
}

function defaultAspectRatio(type: GenerationType): AspectRatio | undefined {
  if (type === 'image') return CHOICES.defaultImageAspectRatio;
  if (type === 'video') return CHOICES.defaultVideoAspectRatio;
  return undefined;
}

function normalizeVideo(video: VideoOptions | undefined, type: GenerationType): VideoOptions | undefined {
  if (!VIDEO_TYPES.includes(type)) return undefined;
  const out: VideoOptions = { ...video };
  if (type === 'video') out.duration = video?.duration ?? (CHOICES.defaultVideoDuration as VideoDuration);
  out.resolution = video?.resolution ?? (CHOICES.defaultVideoResolution as VideoResolution);
  return out;
}

// ---- the validator -------------------------------------------------------------------------

function validate(
  body: unknown,
  media: Readonly<Record<string, MediaFacts>> | undefined,
): NormalizedGenerationRequest {
  // 0. schema
  const req = parseSchema(body);

  // 1. model
  if (req.model !== undefined && !(MODELS as readonly string[]).includes(req.model)) {
    reject(D.unknownModelDetail(req.model));
  }

  // 2. type
  const type: GenerationType = req.type ?? 'image';
  const model = (req.model ?? CHOICES.defaultModel[type]) as Model;
  if (!MODEL_TYPES[model].includes(type)) reject(D.typeNotSupportedDetail(type, model));

  // 3. aspect_ratio
  if (req.aspect_ratio !== undefined) {
    const valid = validAspectRatios(model);
    if (!valid.includes(req.aspect_ratio)) reject(D.invalidAspectRatioDetail(req.aspect_ratio, valid));
  } else if (type === 'video_reframe') {
    reject(D.REFRAME_ASPECT_RATIO_REQUIRED_DETAIL);
  }
  const aspectRatio = (req.aspect_ratio as AspectRatio | undefined) ?? defaultAspectRatio(type);

  // 4. prompt
  if (req.prompt !== undefined) {
    const problem = D.promptLengthProblem(req.prompt);
    if (problem !== null) reject(problem);
  } else if (!CHOICES.promptOptionalTypes.includes(type)) {
    reject(D.PROMPT_LENGTH_DETAIL);
  }

  // 5. references (shape)
  const sites = sitesOf({ ...req, type });
  for (const site of sites) checkReferenceShape(site);

  // 6. type/field rules
  checkSource(req, type);
  checkImageRefs(req, type);
  checkImageMediaTypes(sites);
  const video = req.video;
  if (video !== undefined && !VIDEO_TYPES.includes(type)) reject(D.VIDEO_ONLY_VIDEO_TYPES_DETAIL);
  if (video) {
    checkVideoByType(video, type, aspectRatio);
    checkEdit(video);
    checkVideoKeyframes(video, model);
    checkExtend(video, type);
    // 7. video option combinations
    checkCombinations(video);
  }

  // 8. 422 manga
  if (req.style === 'manga' && aspectRatio !== undefined) {
    if (!(MANGA_ASPECT_RATIOS as readonly string[]).includes(aspectRatio)) {
      reject(D.mangaAspectRatioDetail(aspectRatio), 422);
    }
  }

  const request: NormalizedGenerationRequest = { type, model };
  if (req.prompt !== undefined) request.prompt = req.prompt;
  if (aspectRatio !== undefined) request.aspect_ratio = aspectRatio;
  if (req.style !== undefined) request.style = req.style;
  if (req.source !== undefined) request.source = req.source;
  if (req.image_ref !== undefined) request.image_ref = req.image_ref;
  const normalizedVideo = normalizeVideo(video, type);
  if (normalizedVideo !== undefined) request.video = normalizedVideo;
  if (req.user_id !== undefined) request.user_id = req.user_id;

  // 9. media facts
  if (media) {
    const rejection = checkMediaFacts(request, media);
    if (rejection) reject(rejection.detail, rejection.status);
  }
  return request;
}

/**
 * Validates a POST /v1/generations body and applies the defaults. Checks run in the order written at
 * the top of this file; the first failing check decides the answer.
 *
 * @param body - the parsed JSON body, as received
 * @param media - optional facts about resolved media, keyed by site path (`source`, `image_ref[0]`,
 *   `video.start_frame`, ...); when given, the 413 and source-duration checks run last
 * @returns `{ ok: true, request }` with defaults applied, or `{ ok: false, status, detail }`
 * @example
 * validateGenerationRequest({ prompt: 'a cat' })
 * // { ok: true, request: { type: 'image', model: 'uni-1', prompt: 'a cat', aspect_ratio: '1:1' } }
 * validateGenerationRequest({ model: 'uni-2', prompt: 'a cat' })
 * // { ok: false, status: 400, detail: 'Unknown model: uni-2' }
 */
export function validateGenerationRequest(
  body: unknown,
  media?: Readonly<Record<string, MediaFacts>>,
): ValidationResult {
  try {
    return { ok: true, request: validate(body, media) };
  } catch (err) {
    if (err instanceof Rejected) return { ok: false, status: err.status, detail: err.detail };
    throw err;
  }
}

/**
 * The media-size part of validation alone, for the emulator to call after it resolved references:
 * for each site with facts (in listMediaRefs order), 413 when url/data media at an image position is over
 * 50 MB or over 8000 px on a side, 413 when an inline (`data`) video source is over 50 MB, and 422 when a
 * video_edit / video_reframe source video is longer than 30 s (18 s when video.edit is given).
 * generation_id and file_id sites get no 413 (no bytes travel with the request; an oversized file fails
 * the generation later with image_too_large); the duration limit applies to every source channel.
 *
 * @param request - the normalized request
 * @param media - facts keyed by site path; sites without facts are skipped
 * @returns the first rejection, or null when every site is within the limits
 * @example checkMediaFacts(req, { 'image_ref[0]': { bytes: 60 * MiB } })
 * // { status: 413, detail: 'image_ref[0]: image exceeds 50 MB limit' }
 */
export function checkMediaFacts(
  request: NormalizedGenerationRequest,
  media: Readonly<Record<string, MediaFacts>>,
): Rejection | null {
  for (const { path, ref, position } of sitesOf(request)) {
    const facts = media[path];
    if (!facts) continue;
    const transported = ref.url !== undefined || ref.data !== undefined;
    if (position === 'video_source') {
      if (ref.data !== undefined && facts.bytes > LIMITS.imageMaxBytes) {
        return { status: 413, detail: D.imageTooLargeDetail(path) };
      }
      if (facts.durationSeconds !== undefined) {
        const withEdit = request.video?.edit !== undefined;
        const max = withEdit ? LIMITS.editVideoMaxSeconds : LIMITS.sourceVideoMaxSeconds;
        if (facts.durationSeconds > max) {
          return {
            status: 422,
            detail: D.sourceVideoTooLongDetail(path, facts.durationSeconds, max, request.type, withEdit),
          };
        }
      }
      continue;
    }
    if (!transported) continue;
    const rejection = checkImageFacts(path, facts);
    if (rejection) return rejection;
  }
  return null;
}

/**
 * The limits of every input image (source, image_ref, start/end frames): 413 over 50 MB, 413 over 8000
 * px on a side (when the dimensions are known); null within them.
 *
 * @param path - the detail's path (`source`, `image_ref[0]`, …)
 * @example checkImageFacts('source', { bytes: 10, width: 9000, height: 10 })
 * // { status: 413, detail: 'source: image is 9000x10px but each side must be <= 8000px. Resize and try again.' }
 */
export function checkImageFacts(path: string, facts: MediaFacts): Rejection | null {
  if (facts.bytes > LIMITS.imageMaxBytes) return { status: 413, detail: D.imageTooLargeDetail(path) };
  const { width, height } = facts;
  if (width !== undefined && height !== undefined) {
    if (width > LIMITS.imageMaxSide || height > LIMITS.imageMaxSide) {
      return { status: 413, detail: D.imageTooManyPixelsDetail(path, width, height) };
    }
  }
  return null;
}
