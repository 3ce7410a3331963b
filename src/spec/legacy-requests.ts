/**
 * Validation of the legacy request shapes beyond modify: GenerationRequest (video),
 * ImageGenerationRequest, ReframeImageRequest, ReframeVideoRequest, UpscaleVideoGenerationRequest and
 * AudioGenerationRequest. Pure: a parsed JSON body in, the request with its defaults applied (as
 * Generation.request echoes it) or a 400 detail out. Fields are checked in the interface's order.
 */
import { expectedDetail } from './details.ts';
import { LEGACY_ASPECT_RATIOS, LEGACY_IMAGE_MODELS, LEGACY_VIDEO_MODELS } from './enums.ts';
import {
  arrayCheck,
  booleanCheck,
  enumCheck,
  type FieldRule,
  isObject,
  type Json,
  mediaCheck,
  nonNegativeIntegerCheck,
  objectCheck,
  shapeProblem,
  stringCheck,
  uriCheck,
  weightedRefCheck,
} from './legacy-fields.ts';
import {
  LEGACY_CONCEPTS,
  LEGACY_OPERATION_CHOICES,
  LEGACY_OPERATION_DETAILS,
  type LegacyRequestType,
} from './legacy-operations.ts';

export type LegacyRequestResult =
  | { ok: true; request: Json & { generation_type: LegacyRequestType } }
  | { ok: false; status: 400; detail: string };

const FORMATS = ['jpg', 'png'] as const;
const aspectRatio: FieldRule['check'] = enumCheck(LEGACY_ASPECT_RATIOS);

/** A Keyframe: `{ type: generation, id }` or `{ type: image, url }`, `type` discriminating. */
function keyframeCheck(value: unknown, path: string): string | null {
  const typeCheck = enumCheck(['generation', 'image']);
  if (!isObject(value)) return expectedDetail('object', path, value);
  const typeProblem = typeCheck(value.type, `${path}.type`);
  if (typeProblem) return typeProblem;
  const variant: FieldRule[] =
    value.type === 'generation'
      ? [
          { name: 'type', check: () => null },
          { name: 'id', required: true, check: uuidCheck },
        ]
      : [
          { name: 'type', check: () => null },
          { name: 'url', required: true, check: uriCheck },
        ];
  return shapeProblem(value, variant, path);
}

function uuidCheck(value: unknown, path: string): string | null {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  return typeof value === 'string' && uuid.test(value) ? null : expectedDetail('uuid string', path, value);
}

function conceptsCheck(value: unknown, path: string): string | null {
  const shape = arrayCheck(objectCheck([{ name: 'key', required: true, check: stringCheck }]))(value, path);
  if (shape) return shape;
  const concepts = value as { key: string }[];
  const bad = concepts.findIndex((c) => !(LEGACY_CONCEPTS as readonly string[]).includes(c.key));
  return bad < 0 ? null : LEGACY_OPERATION_DETAILS.unknownConcept(bad, concepts[bad]!.key);
}

const callbackRule: FieldRule = { name: 'callback_url', check: uriCheck };

const VIDEO_RULES: FieldRule[] = [
  { name: 'generation_type', check: enumCheck(['video']) },
  { name: 'prompt', check: stringCheck },
  { name: 'aspect_ratio', check: aspectRatio },
  { name: 'loop', check: booleanCheck },
  {
    name: 'keyframes',
    check: objectCheck([
      { name: 'frame0', check: keyframeCheck },
      { name: 'frame1', check: keyframeCheck },
    ]),
  },
  callbackRule,
  { name: 'model', check: enumCheck(LEGACY_VIDEO_MODELS) },
  { name: 'resolution', check: stringCheck },
  { name: 'duration', check: stringCheck },
  { name: 'concepts', check: conceptsCheck },
];

const IMAGE_RULES: FieldRule[] = [
  { name: 'generation_type', check: enumCheck(['image']) },
  { name: 'model', check: enumCheck(LEGACY_IMAGE_MODELS) },
  { name: 'prompt', check: stringCheck },
  { name: 'aspect_ratio', check: aspectRatio },
  { name: 'format', check: enumCheck(FORMATS) },
  callbackRule,
  { name: 'image_ref', check: arrayCheck(weightedRefCheck) },
  { name: 'style_ref', check: arrayCheck(weightedRefCheck) },
  { name: 'character_ref', check: characterRefCheck },
  { name: 'modify_image_ref', check: weightedRefCheck },
  { name: 'sync', check: booleanCheck },
  { name: 'sync_timeout', check: positiveNumberCheck },
];

/** character_ref: `{ identity0: { images: [uri, ...] } }` (further identityN accepted alike). */
function characterRefCheck(value: unknown, path: string): string | null {
  if (!isObject(value)) return objectCheck([])(value, path);
  const identity = objectCheck([{ name: 'images', required: true, check: arrayCheck(uriCheck) }]);
  const rules = Object.keys(value).map((name) => ({
    name: /^identity\d+$/.test(name) ? name : `\0${name}`,
    check: identity,
  }));
  return shapeProblem(value, rules, path);
}

function positiveNumberCheck(value: unknown, path: string): string | null {
  return typeof value === 'number' && Number.isFinite(value) && value > 0
    ? null
    : expectedDetail('number above 0', path, value);
}

/**
 * The reframe geometry (pixels, integers of at least 0) of ReframeImageRequest and ReframeVideoRequest:
 * x_start/x_end/y_start/y_end crop the source, resized_width/resized_height are its size on the output
 * canvas and grid_position_x/y its top-left corner there.
 */
export const LEGACY_REFRAME_GEOMETRY = [
  'grid_position_x',
  'grid_position_y',
  'x_start',
  'x_end',
  'y_start',
  'y_end',
  'resized_width',
  'resized_height',
] as const;

/** The reframe geometry fields as a request carries them (each optional). */
export type LegacyReframeGeometry = Partial<Record<(typeof LEGACY_REFRAME_GEOMETRY)[number], number>>;

const geometryRules: FieldRule[] = LEGACY_REFRAME_GEOMETRY.map((name) => ({
  name,
  check: nonNegativeIntegerCheck,
}));

const REFRAME_IMAGE_RULES: FieldRule[] = [
  { name: 'generation_type', check: enumCheck(['reframe_image']) },
  { name: 'media', required: true, check: mediaCheck },
  { name: 'aspect_ratio', required: true, check: aspectRatio },
  { name: 'model', required: true, check: enumCheck(LEGACY_IMAGE_MODELS) },
  { name: 'prompt', check: stringCheck },
  ...geometryRules,
  { name: 'format', check: enumCheck(FORMATS) },
  callbackRule,
];

const REFRAME_VIDEO_RULES: FieldRule[] = [
  { name: 'generation_type', check: enumCheck(['reframe_video']) },
  { name: 'media', required: true, check: mediaCheck },
  { name: 'aspect_ratio', required: true, check: aspectRatio },
  { name: 'model', required: true, check: enumCheck(LEGACY_VIDEO_MODELS) },
  { name: 'first_frame', check: mediaCheck },
  { name: 'prompt', check: stringCheck },
  ...geometryRules,
  callbackRule,
];

const UPSCALE_RULES: FieldRule[] = [
  { name: 'generation_type', check: enumCheck(['upscale_video']) },
  { name: 'resolution', check: stringCheck },
  callbackRule,
];

const AUDIO_RULES: FieldRule[] = [
  { name: 'generation_type', check: enumCheck(['add_audio']) },
  { name: 'prompt', check: stringCheck },
  { name: 'negative_prompt', check: stringCheck },
  callbackRule,
];

function validateWith(
  body: unknown,
  rules: readonly FieldRule[],
  defaults: Json & { generation_type: LegacyRequestType },
): LegacyRequestResult {
  const detail = shapeProblem(body, rules);
  if (detail) return { ok: false, status: 400, detail };
  const request = { ...defaults, ...(body as Json) } as Json & { generation_type: LegacyRequestType };
  return { ok: true, request };
}

/** GenerationRequest (POST /generations/video): defaults generation_type video, model ray-2. */
export function validateVideoRequest(body: unknown): LegacyRequestResult {
  return validateWith(body, VIDEO_RULES, { generation_type: 'video', model: 'ray-2' });
}

/**
 * ImageGenerationRequest (POST /generations/image): defaults generation_type image, model photon-1,
 * format jpg. The @ai-sdk/luma names of the references (image, style, character, modify_image) are
 * read as the interface's *_ref fields first.
 */
export function validateImageRequest(body: unknown): LegacyRequestResult {
  let renamed = body;
  if (isObject(body)) {
    const aliases: Record<string, string> = LEGACY_OPERATION_CHOICES.imageRefAliases;
    renamed = Object.fromEntries(Object.entries(body).map(([k, v]) => [aliases[k] ?? k, v]));
  }
  return validateWith(renamed, IMAGE_RULES, {
    generation_type: 'image',
    model: 'photon-1',
    format: LEGACY_OPERATION_CHOICES.defaultImageFormat,
  });
}

/** ReframeImageRequest (POST /generations/image/reframe). */
export function validateReframeImageRequest(body: unknown): LegacyRequestResult {
  return validateWith(body, REFRAME_IMAGE_RULES, {
    generation_type: 'reframe_image',
    format: LEGACY_OPERATION_CHOICES.defaultImageFormat,
  });
}

/** ReframeVideoRequest (POST /generations/video/reframe). */
export function validateReframeVideoRequest(body: unknown): LegacyRequestResult {
  return validateWith(body, REFRAME_VIDEO_RULES, { generation_type: 'reframe_video' });
}

/** UpscaleVideoGenerationRequest (POST /generations/:id/upscale); an empty body is accepted. */
export function validateUpscaleRequest(body: unknown): LegacyRequestResult {
  return validateWith(body ?? {}, UPSCALE_RULES, {
    generation_type: 'upscale_video',
    resolution: LEGACY_OPERATION_CHOICES.defaultUpscaleResolution,
  });
}

/** AudioGenerationRequest (POST /generations/:id/audio); an empty body is accepted. */
export function validateAudioRequest(body: unknown): LegacyRequestResult {
  return validateWith(body ?? {}, AUDIO_RULES, { generation_type: 'add_audio' });
}
