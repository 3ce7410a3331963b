/**
 * Requests of a recipe rule and of a planned item: where the item's own media goes (`input_as`), how
 * shared references are written (`{ ref: <name> }`), and validation with src/spec while the media are
 * still placeholders. Pure functions: no I/O.
 */
import {
  checkMediaFacts,
  GENERATION_TYPES,
  type GenerationType,
  type ImageRef,
  listMediaRefs,
  type MediaFacts,
  type MediaPosition,
  type NormalizedGenerationRequest,
  type Rejection,
  TOP_FIELDS,
  validateGenerationRequest,
} from '../spec/index.ts';
import { INPUT_PLACEHOLDER, type InputAs, type MediaKind, referencePlaceholder } from './item.ts';
import {
  holdsLegacyInput,
  legacyGenerationType,
  legacyProblem,
  legacySitePath,
  legacyWireBody,
  namesSurface,
  placeLegacyInput,
} from './legacy-request.ts';
import { type FieldPath, formatPath } from './recipe-yaml.ts';

export type Json = Record<string, unknown>;

/** Every value `input_as` takes. */
export const INPUT_AS_VALUES: readonly InputAs[] = [
  'source',
  'start_frame',
  'end_frame',
  'image_ref',
  'prompt',
];

/** The `file_id` of the item's own media in a planned request. */
export const INPUT_FILE_ID = INPUT_PLACEHOLDER.file_id as string;
/** Prefix of the `file_id` of a shared recipe reference in a planned request (`$ref:<name>`). */
export const REF_FILE_ID_PREFIX = '$ref:';

/** Names a shared reference may have: letters, digits, `_` and `-`. */
export const REFERENCE_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The generation type a request asks for: its `type` when that is a known type, else `image` (the
 * service's default; an unknown type is reported by validation).
 */
export function requestType(request: Json): GenerationType {
  if (namesSurface(request)) return legacyGenerationType(request) ?? 'image';
  const t = request.type;
  return typeof t === 'string' && (GENERATION_TYPES as readonly string[]).includes(t)
    ? (t as GenerationType)
    : 'image';
}

/**
 * Where a media file goes when a rule does not say: `source` for image_edit, video_edit and
 * video_reframe, `start_frame` for video, `image_ref` for image. (A text file goes to `prompt`.)
 *
 * @example defaultInputAs('video') // 'start_frame'
 */
export function defaultInputAs(type: GenerationType): Exclude<InputAs, 'prompt'> {
  switch (type) {
    case 'image_edit':
    case 'video_edit':
    case 'video_reframe':
      return 'source';
    case 'video':
      return 'start_frame';
    default:
      return 'image_ref';
  }
}

/**
 * What kind of file a position takes: a video for the source of video_edit / video_reframe, text for
 * the prompt, an image everywhere else.
 */
export function kindForPosition(inputAs: InputAs, type: GenerationType): MediaKind {
  if (inputAs === 'prompt') return 'text';
  if (inputAs === 'source' && (type === 'video_edit' || type === 'video_reframe')) return 'video';
  return 'image';
}

/**
 * The request field a placed input occupies, as a path in `detail` texts: `source`, `video.start_frame`,
 * `video.end_frame`, `image_ref[<n>]` (the input is appended after the request's own entries) or `prompt`.
 *
 * @param request - the request before the input is placed
 */
export function inputSitePath(inputAs: InputAs, request: Json): string {
  if (namesSurface(request)) return legacySitePath(inputAs);
  switch (inputAs) {
    case 'source':
      return 'source';
    case 'start_frame':
    case 'end_frame':
      return `video.${inputAs}`;
    case 'image_ref':
      return `image_ref[${Array.isArray(request.image_ref) ? request.image_ref.length : 0}]`;
    case 'prompt':
      return 'prompt';
  }
}

/**
 * The field `input_as` would fill that the request already sets, or null. `image_ref` never clashes
 * (the input is appended).
 *
 * @example occupiedBy('source', { source: { url: 'https://…' } }) // 'source'
 */
export function occupiedBy(inputAs: InputAs, request: Json): string | null {
  if (namesSurface(request) && inputAs !== 'prompt') return request.media !== undefined ? 'media' : null;
  switch (inputAs) {
    case 'source':
      return request.source !== undefined ? 'source' : null;
    case 'prompt':
      return request.prompt !== undefined ? 'prompt' : null;
    case 'start_frame':
    case 'end_frame':
      return isObject(request.video) && request.video[inputAs] !== undefined ? `video.${inputAs}` : null;
    default:
      return null;
  }
}

/** What is placed: the prompt text for `prompt`, else the media's MIME type (kept on a video source). */
export interface PlacedInput {
  prompt?: string;
  /** The rule's media_url (a legacy request's media by URL). */
  mediaUrl?: string | null;
  mime?: string;
  kind?: MediaKind;
}

/**
 * A copy of `request` with the item placed at `inputAs`: its text as the prompt, or the placeholder
 * `{ file_id: '$input' }` at the media position (with `media_type` from the sniff when it is a video at
 * the source of video_edit / video_reframe). The caller checks {@link occupiedBy} first.
 *
 * @example placeInput({ type: 'image_edit', prompt: 'x' }, 'source', { mime: 'image/png', kind: 'image' })
 * // { type: 'image_edit', prompt: 'x', source: { file_id: '$input' } }
 */
export function placeInput(request: Json, inputAs: InputAs, input: PlacedInput): Json {
  if (namesSurface(request)) return placeLegacyInput(request, inputAs, input.prompt, input.mediaUrl);
  const out = structuredClone(request);
  const ref: ImageRef = { ...INPUT_PLACEHOLDER };
  switch (inputAs) {
    case 'prompt':
      out.prompt = input.prompt ?? '';
      break;
    case 'source':
      if (input.kind === 'video' && input.mime) ref.media_type = input.mime;
      out.source = ref;
      break;
    case 'start_frame':
    case 'end_frame': {
      const video = isObject(out.video) ? out.video : {};
      video[inputAs] = ref;
      out.video = video;
      break;
    }
    case 'image_ref':
      out.image_ref = [...(Array.isArray(out.image_ref) ? out.image_ref : []), ref];
      break;
  }
  return out;
}

// ---- shared references: { ref: <name> } ------------------------------------------------------

/** Where ImageRefs sit in a request: each yields the path of one ImageRef position. */
export function* imageRefPositions(request: Json): Generator<Array<string | number>> {
  if (request.source !== undefined) yield ['source'];
  if (Array.isArray(request.image_ref))
    for (let i = 0; i < request.image_ref.length; i++) yield ['image_ref', i];
  const video = request.video;
  if (!isObject(video)) return;
  for (const key of ['start_frame', 'end_frame', 'guide_frame'] as const) {
    if (video[key] !== undefined) yield ['video', key];
  }
  if (Array.isArray(video.keyframes)) {
    for (let i = 0; i < video.keyframes.length; i++) yield ['video', 'keyframes', i];
  }
  const edit = video.edit;
  if (isObject(edit) && Array.isArray(edit.keyframes)) {
    for (let i = 0; i < edit.keyframes.length; i++) yield ['video', 'edit', 'keyframes', i];
  }
}

/** The value at `path` in `root`, or undefined. */
export function getAt(root: unknown, path: FieldPath): unknown {
  let v: unknown = root;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

/** Sets the value at `path` in `root` (its parent must exist). */
export function setAt(root: Json, path: FieldPath, value: unknown): void {
  const parent = getAt(root, path.slice(0, -1)) as Record<string | number, unknown>;
  parent[path[path.length - 1]!] = value;
}

/**
 * A copy of `request` without the field at `path` (an array element is taken out), or null when it has
 * no such field.
 */
export function withoutField(request: Json, path: FieldPath): Json | null {
  if (path.length === 0 || getAt(request, path) === undefined) return null;
  const copy = structuredClone(request);
  const parent = getAt(copy, path.slice(0, -1));
  const last = path[path.length - 1]!;
  if (Array.isArray(parent) && typeof last === 'number') parent.splice(last, 1);
  else delete (parent as Record<string | number, unknown>)[last];
  return copy;
}

/**
 * Puts a placeholder naming no reference at every `{ ref: <name> }` resolveReferences left (one it
 * found a problem with), in place, so the rest of the request can still be checked.
 */
export function standInUnresolved(request: Json): void {
  for (const path of [...imageRefPositions(request)]) {
    const value = getAt(request, path);
    if (isObject(value) && 'ref' in value) setAt(request, path, referencePlaceholder('?'));
  }
}

/** What a shared reference is, as far as placing it needs. */
export interface ReferenceKind {
  kind: 'image' | 'video';
  mime: string;
}

/** A problem found while resolving references, with the path of the offending value. */
export interface RequestProblem {
  path: Array<string | number>;
  message: string;
}

/**
 * Replaces every `{ ref: <name> }` at an ImageRef position (source, image_ref[i], video.start_frame,
 * video.end_frame, video.guide_frame, video.keyframes[i], video.edit.keyframes[i]) with the placeholder
 * `{ file_id: '$ref:<name>' }` (plus `media_type` for a video), in place. A `ref` naming no reference, or
 * a reference the recipe names but cannot use, or written with other fields beside it, is a problem.
 *
 * @param request - the request, changed in place
 * @param references - the recipe's usable references by name
 * @param unusable - references the recipe names but cannot use (a missing file…), and why
 * @returns the problems, empty when every ref resolved
 * @example resolveReferences(req, { style: { kind: 'image', mime: 'image/png' } })
 */
export function resolveReferences(
  request: Json,
  references: Readonly<Record<string, ReferenceKind>>,
  unusable: Readonly<Record<string, string>> = {},
): RequestProblem[] {
  const problems: RequestProblem[] = [];
  for (const path of [...imageRefPositions(request)]) {
    const value = getAt(request, path);
    if (!isObject(value) || !('ref' in value)) continue;
    const name = value.ref;
    const extra = Object.keys(value).filter((k) => k !== 'ref');
    if (typeof name !== 'string' || name.length === 0) {
      problems.push({ path: [...path, 'ref'], message: 'must be the name of a reference, as a string' });
    } else if (extra.length > 0) {
      problems.push({
        path,
        message: `a shared reference is written { ref: ${name} } alone (remove ${extra.join(', ')})`,
      });
    } else if (Object.hasOwn(unusable, name)) {
      problems.push({
        path: [...path, 'ref'],
        message: `reference '${name}' cannot be used: ${unusable[name]}`,
      });
    } else if (!Object.hasOwn(references, name)) {
      const known = [...Object.keys(references), ...Object.keys(unusable)];
      problems.push({
        path: [...path, 'ref'],
        message: `no reference named '${name}' (${known.length ? `known: ${known.join(', ')}` : 'the recipe has no references'})`,
      });
    } else {
      const ref: ImageRef = referencePlaceholder(name);
      const target = references[name]!;
      if (target.kind === 'video') ref.media_type = target.mime;
      setAt(request, path, ref);
    }
  }
  return problems;
}

/**
 * JSON merge of a sidecar into a rule's request: objects merge key by key (recursively), arrays and
 * other values are replaced, and `null` removes the field (as in RFC 7396 JSON Merge Patch). Neither
 * argument is changed.
 *
 * @example mergeRequest({ video: { resolution: '720p', hdr: true } }, { video: { hdr: null } })
 * // { video: { resolution: '720p' } }
 */
export function mergeRequest(base: Json, patch: Json): Json {
  const out = structuredClone(base);
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (isObject(value) && isObject(out[key])) out[key] = mergeRequest(out[key] as Json, value);
    else out[key] = structuredClone(value);
  }
  return out;
}

// ---- validation with placeholders ----------------------------------------------------------

/** Facts about the media a placeholder stands for, keyed by its file_id (`$input`, `$ref:<name>`). */
export type PlaceholderFacts = Readonly<Record<string, MediaFacts>>;

/** Where a placeholder landed in the normalized request. */
export interface PlaceholderSite {
  /** Detail path, e.g. `source`, `image_ref[1]`. */
  path: string;
  /** `$input` or `$ref:<name>`. */
  placeholder: string;
  position: MediaPosition;
}

export type PlannedValidation =
  | { ok: true; request: NormalizedGenerationRequest; sites: PlaceholderSite[] }
  | ({ ok: false } & Rejection);

const STAND_IN_UUID_PREFIX = '00000000-0000-4000-8000-';
const STEP_STAND_IN_UUID_PREFIX = '00000000-0000-4000-9000-';
const STAND_IN_URL = 'https://stand-in.genpipe.invalid/media';

/**
 * Validates a planned request with src/spec exactly as the service would once the placeholders are
 * uploaded: each placeholder `file_id` is swapped for a syntactically valid stand-in UUID, so the shape
 * rules run unchanged. With `facts`, the 413 size / pixel checks and the source-video duration limit run
 * too, on the sites holding placeholders that have facts, as if their bytes travelled with the request
 * (the local check promises the same texts the service would give for transported media).
 *
 * @param request - the planned request with `$input` / `$ref:<name>` placeholders
 * @param facts - optional facts keyed by placeholder
 * @returns the normalized request and where each placeholder landed, or the service's rejection
 * @example validatePlanned({ type: 'image_edit', prompt: 'x', source: { file_id: '$input' } },
 *   { $input: { bytes: 10, width: 8001, height: 10 } })
 * // { ok: false, status: 413, detail: 'source: image is 8001x10px but each side must be <= 8000px. Resize and try again.' }
 */
export function validatePlanned(request: Json, facts?: PlaceholderFacts): PlannedValidation {
  if (namesSurface(request)) return validateLegacyPlanned(request);
  const body = structuredClone(request);
  const byStandIn = new Map<string, string>();
  let stepStandIns = 0;
  for (const path of [...imageRefPositions(body)]) {
    const ref = getAt(body, path);
    // A chain step's parent output (`$step:<name>`): by generation_id or by url, filled in at the create.
    if (isObject(ref) && typeof ref.generation_id === 'string' && ref.generation_id.startsWith('$')) {
      ref.generation_id = `${STEP_STAND_IN_UUID_PREFIX}${(stepStandIns++).toString(16).padStart(12, '0')}`;
      continue;
    }
    if (isObject(ref) && typeof ref.url === 'string' && ref.url.startsWith('$')) {
      ref.url = STAND_IN_URL;
      continue;
    }
    if (!isObject(ref) || typeof ref.file_id !== 'string' || !ref.file_id.startsWith('$')) continue;
    const standIn = `${STAND_IN_UUID_PREFIX}${byStandIn.size.toString(16).padStart(12, '0')}`;
    byStandIn.set(standIn, ref.file_id);
    ref.file_id = standIn;
  }
  const result = validateGenerationRequest(body);
  if (!result.ok) return result;
  const sites: PlaceholderSite[] = [];
  for (const site of listMediaRefs(result.request)) {
    const placeholder = site.ref.file_id !== undefined ? byStandIn.get(site.ref.file_id) : undefined;
    if (placeholder !== undefined) sites.push({ path: site.path, placeholder, position: site.position });
  }
  if (facts) {
    const transported = structuredClone(result.request);
    const factsBySite: Record<string, MediaFacts> = {};
    for (const site of listMediaRefs(transported)) {
      const placeholder = site.ref.file_id !== undefined ? byStandIn.get(site.ref.file_id) : undefined;
      const f = placeholder !== undefined ? facts[placeholder] : undefined;
      if (!f) continue;
      delete site.ref.file_id;
      site.ref.url = STAND_IN_URL;
      factsBySite[site.path] = f;
    }
    const rejection = checkMediaFacts(transported, factsBySite);
    if (rejection) return { ok: false, ...rejection };
  }
  return { ok: true, request: result.request, sites };
}

/**
 * A legacy request (legacy-request.ts) validated by the legacy surface's own rules: the item's media, at
 * `media`, is a URL the service fetches, so the service's media limits are not known here (the legacy
 * surface shows none) and `facts` are not checked.
 */
function validateLegacyPlanned(request: Json): PlannedValidation {
  const detail = legacyProblem(request);
  if (detail !== null) return { ok: false, status: 400, detail };
  const sites: PlaceholderSite[] = holdsLegacyInput(request)
    ? [
        {
          path: 'media',
          placeholder: INPUT_FILE_ID,
          position: requestType(request) === 'video_reframe' ? 'video_source' : 'image',
        },
      ]
    : [];
  // The legacy body stands where the agents request would: only its sites are read.
  return { ok: true, request: legacyWireBody(request) as unknown as NormalizedGenerationRequest, sites };
}

// ---- detail → field --------------------------------------------------------------------------

function pathsOf(value: unknown, prefix: Array<string | number>, out: Array<Array<string | number>>): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      out.push([...prefix, i]);
      pathsOf(v, [...prefix, i], out);
    });
  } else if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      out.push([...prefix, k]);
      pathsOf(v, [...prefix, k], out);
    }
  }
}

/**
 * The field of `request` a validation `detail` is about, found from the field names the detail
 * mentions (first mention wins; a bare name such as `resolution` matches the shortest path ending in
 * it). Names outside quotes come first: a quoted word is a value (`one of 'image', 'video'`), and is
 * taken as a field only when no unquoted word is one (`Unknown field 'video.foo'`). Null when the
 * detail names no field of the request.
 *
 * @example fieldOfDetail("Expected boolean for video.hdr but received 'yes'", { video: { hdr: 'yes' } })
 * // ['video', 'hdr']
 */
export function fieldOfDetail(detail: string, request: Json): Array<string | number> | null {
  const all: Array<Array<string | number>> = [];
  pathsOf(request, [], all);
  // a field the request lacks (`aspect_ratio … is required`) is named by its own path too
  for (const field of TOP_FIELDS) if (request[field] === undefined) all.push([field]);
  const keyed = all.map((p) => ({ p, text: formatPath(p).toLowerCase() }));
  return fieldNamedIn(detail.replace(/'[^']*'/g, ' '), keyed) ?? fieldNamedIn(detail, keyed);
}

/** The first field of `keyed` that `text` names (see fieldOfDetail). */
function fieldNamedIn(
  text: string,
  keyed: ReadonlyArray<{ p: Array<string | number>; text: string }>,
): Array<string | number> | null {
  for (const m of text.matchAll(/[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\]|\.[A-Za-z_][A-Za-z0-9_]*)*/g)) {
    const token = m[0].toLowerCase();
    const exact = keyed.find((k) => k.text === token);
    if (exact) return exact.p;
    const suffix = keyed
      .filter((k) => k.text.endsWith(`.${token}`))
      .sort((a, b) => a.p.length - b.p.length)[0];
    if (suffix) return suffix.p;
  }
  return null;
}
