/**
 * A recipe request that targets the legacy surface: `{ surface: legacy, operation: <operation>, ...body }`,
 * the operation named as `genpipe legacy` names it (generate-image, generate-video, reframe-image,
 * reframe-video) and the body the legacy create of that operation takes. The one place where a request's
 * surface and operation are read: the recipe, the stages and the dry run ask here.
 *
 * The item's own file goes into the body as the agents surface's does, by `input_as`: `prompt` (a text
 * file's text) for the generate operations, `source` (the request's `media`, by URL: see
 * legacy-media-url.ts) for the reframes. Until the URL is known the body holds `{ url: '$input' }`.
 * Pure: no I/O.
 */
import {
  expectedDetail,
  type GenerationType,
  LEGACY_CREATES,
  LEGACY_OPERATIONS,
  type LegacyCreateKind,
  type LegacyRequestType,
  oneOf,
  promptLengthProblem,
} from '../spec/index.ts';
import type { InputAs, MediaKind } from './item.ts';
import { mediaUrlMark } from './legacy-media-url.ts';

type Json = Record<string, unknown>;

/** The legacy operations a rule may name, as `genpipe legacy` names them, and what each takes. */
export const LEGACY_RECIPE_OPERATIONS = {
  'generate-image': { create: 'image', type: 'image', inputAs: 'prompt', kind: 'text' },
  'generate-video': { create: 'video', type: 'video', inputAs: 'prompt', kind: 'text' },
  'reframe-image': { create: 'reframeImage', type: 'reframe_image', inputAs: 'source', kind: 'image' },
  'reframe-video': { create: 'reframeVideo', type: 'reframe_video', inputAs: 'source', kind: 'video' },
} as const satisfies Record<
  string,
  { create: LegacyCreateKind; type: LegacyRequestType; inputAs: InputAs; kind: MediaKind }
>;

export type LegacyRecipeOperation = keyof typeof LEGACY_RECIPE_OPERATIONS;

/** The value of `surface` that targets the legacy surface. */
export const LEGACY_SURFACE = 'legacy';
/** The request fields that say where a request goes; they are not sent. */
const ROUTING_FIELDS = ['surface', 'operation'] as const;
/** The `url` of the item's own media until its URL is known. */
export const LEGACY_INPUT_URL = '$input';
const STAND_IN_URL = 'https://stand-in.genpipe.invalid/media';

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether the request targets the legacy surface (it says `surface: legacy`). */
export function isLegacyRequest(request: Json): boolean {
  return request.surface === LEGACY_SURFACE;
}

/** Whether the request names a surface at all (`surface` given, whatever its value). */
export function namesSurface(request: Json): boolean {
  return request.surface !== undefined;
}

/** The legacy operation the request names, or null (not a legacy request, or no known operation). */
export function legacyOperationOf(request: Json): LegacyRecipeOperation | null {
  if (!isLegacyRequest(request)) return null;
  const op = request.operation;
  return typeof op === 'string' && Object.hasOwn(LEGACY_RECIPE_OPERATIONS, op)
    ? (op as LegacyRecipeOperation)
    : null;
}

/** The body the legacy create is sent: the request without `surface` and `operation`. */
export function legacyWireBody(request: Json): Json {
  const body: Json = { ...request };
  for (const f of ROUTING_FIELDS) delete body[f];
  return body;
}

/**
 * The agents generation type a legacy request is priced and scheduled as (the legacy surface charges
 * each operation as one of them: LEGACY_OPERATIONS' costType): `image` for generate-image, `video_reframe`
 * for reframe-video, …; null for an unknown operation.
 */
export function legacyGenerationType(request: Json): GenerationType | null {
  const op = legacyOperationOf(request);
  if (op === null) return null;
  return LEGACY_OPERATIONS[LEGACY_RECIPE_OPERATIONS[op].type].costType;
}

/**
 * The first problem of a legacy request as the legacy surface would answer it (its `detail`), the
 * item's media URL standing in when still `$input`; `surface` and `operation` first. Null when sound.
 *
 * @example legacyProblem({ surface: 'legacy', operation: 'generate-image', aspect_ratio: '5:4' })
 * // "Expected one of '1:1', … for aspect_ratio but received '5:4'"
 */
export function legacyProblem(request: Json): string | null {
  if (!isLegacyRequest(request)) return expectedDetail(oneOf([LEGACY_SURFACE]), 'surface', request.surface);
  const op = legacyOperationOf(request);
  if (op === null) {
    return expectedDetail(oneOf(Object.keys(LEGACY_RECIPE_OPERATIONS)), 'operation', request.operation);
  }
  const body = legacyWireBody(request);
  if (isObject(body.media) && body.media.url === LEGACY_INPUT_URL) body.media = { url: STAND_IN_URL };
  const result = LEGACY_CREATES[LEGACY_RECIPE_OPERATIONS[op].create].validate(body);
  if (!result.ok) return result.detail;
  // The prompt-length rule is the agents surface's, one for both (a legacy create of an empty prompt is paid).
  return typeof body.prompt === 'string' ? promptLengthProblem(body.prompt) : null;
}

/** Where a legacy operation takes the item's file (its `input_as` when the rule gives none), or null. */
export function legacyInputAsOf(request: Json): InputAs | null {
  const op = legacyOperationOf(request);
  return op === null ? null : LEGACY_RECIPE_OPERATIONS[op].inputAs;
}

/** Where a legacy operation takes the item's file, when `input_as` puts it elsewhere: the reason, or null. */
export function legacyInputAsProblem(request: Json, inputAs: InputAs): string | null {
  const op = legacyOperationOf(request);
  if (op === null) return null;
  const takes = LEGACY_RECIPE_OPERATIONS[op].inputAs;
  return inputAs === takes
    ? null
    : `the legacy operation '${op}' takes the file as input_as '${takes}', not '${inputAs}'`;
}

/** The field the item's file fills in a legacy request: `prompt`, or `media` for `source`. */
export function legacySitePath(inputAs: InputAs): string {
  return inputAs === 'prompt' ? 'prompt' : 'media';
}

/**
 * A copy of a legacy request with the item placed: its text as `prompt`, or `media: { url: '$input' }`
 * with the mark of the rule's media_url (legacy-media-url.ts mediaUrlMark: part of the recipe hash).
 */
export function placeLegacyInput(
  request: Json,
  inputAs: InputAs,
  prompt: string | undefined,
  mediaUrl: string | null = null,
): Json {
  const out = structuredClone(request);
  if (inputAs === 'prompt') out.prompt = prompt ?? '';
  else
    out.media = {
      url: LEGACY_INPUT_URL,
      ...(mediaUrl !== null ? { media_url: mediaUrlMark(mediaUrl) } : {}),
    };
  return out;
}

/** Whether a legacy request still waits for the item's media URL. */
export function holdsLegacyInput(request: Json): boolean {
  return isObject(request.media) && request.media.url === LEGACY_INPUT_URL;
}

/** The media URL a legacy request was sent with (the file's own or the rule's), or null. */
export function legacySentMediaUrl(request: Json): string | null {
  const media = request.media;
  return isObject(media) && typeof media.url === 'string' && media.url !== LEGACY_INPUT_URL
    ? media.url
    : null;
}

/** A copy of a legacy request with the item's media URL in place of `$input`. */
export function withLegacyMediaUrl(request: Json, url: string): Json {
  return { ...request, media: { url } };
}
