/**
 * Validation of the legacy surface's one specified operation, POST {base_url}/generations/video/modify
 * (ModifyVideoRequest). Pure: a parsed JSON body in, a normalized request or a 400 detail out.
 *
 * Checks run in the interface's field order — body is an object, unknown fields, generation_type,
 * media, first_frame, model, mode, prompt, callback_url — and the first failure answers, with the same
 * sharp-style message builder as the agents surface (`Expected <what> for <path> but received <value>`).
 */
import { expectedDetail, oneOf, unknownFieldDetail } from './details.ts';
import { LEGACY_MODIFY_MODES, LEGACY_VIDEO_MODELS, type LegacyModifyMode } from './enums.ts';
import type { LegacyMedia } from './legacy-fields.ts';

/** ModifyVideoRequest with its default applied (generation_type is always present). */
export interface ModifyVideoRequest {
  generation_type: 'modify_video';
  media: LegacyMedia;
  first_frame?: LegacyMedia;
  model: (typeof LEGACY_VIDEO_MODELS)[number];
  mode: LegacyModifyMode;
  prompt?: string;
  callback_url?: string;
}

export type ModifyValidationResult =
  | { ok: true; request: ModifyVideoRequest }
  | { ok: false; status: 400; detail: string };

const MODIFY_FIELDS = ['generation_type', 'media', 'first_frame', 'model', 'mode', 'prompt', 'callback_url'];
const MEDIA_FIELDS = ['url'];
const GENERATION_TYPES = ['modify_video'] as const;

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isHttpUri(value: unknown): value is string {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === 'http:' || protocol === 'https:';
}

/** Returns a detail for the first problem of a Media object, or null. */
function mediaProblem(value: unknown, path: string): string | null {
  if (!isObject(value)) return expectedDetail('object', path, value);
  const unknown = Object.keys(value).find((k) => !MEDIA_FIELDS.includes(k));
  if (unknown !== undefined) return unknownFieldDetail(`${path}.${unknown}`);
  if (!isHttpUri(value.url)) return expectedDetail('http(s) URL', `${path}.url`, value.url);
  return null;
}

function enumProblem(value: unknown, path: string, values: readonly string[]): string | null {
  return typeof value === 'string' && values.includes(value)
    ? null
    : expectedDetail(oneOf(values), path, value);
}

/**
 * Validates a legacy ModifyVideoRequest body and applies the default generation_type (modify_video).
 *
 * @param body - the parsed JSON body
 * @param body.generation_type - optional; only `modify_video`
 * @param body.media - required Media `{ url }`, the source video; url an absolute http(s) URI
 * @param body.first_frame - optional Media
 * @param body.model - required, `ray-2` or `ray-flash-2`
 * @param body.mode - required, one of LEGACY_MODIFY_MODES
 * @param body.prompt - optional string
 * @param body.callback_url - optional absolute http(s) URI
 * @returns `{ ok: true, request }` or `{ ok: false, status: 400, detail }`
 * @example
 * validateModifyRequest({ media: { url: 'https://x/a.mp4' }, model: 'ray-2', mode: 'flex_1' })
 * // { ok: true, request: { generation_type: 'modify_video', media: { url: 'https://x/a.mp4' }, model: 'ray-2', mode: 'flex_1' } }
 */
export function validateModifyRequest(body: unknown): ModifyValidationResult {
  const fail = (detail: string): ModifyValidationResult => ({ ok: false, status: 400, detail });
  if (!isObject(body)) return fail(expectedDetail('object', 'request body', body));
  const unknown = Object.keys(body).find((k) => !MODIFY_FIELDS.includes(k));
  if (unknown !== undefined) return fail(unknownFieldDetail(unknown));

  if (body.generation_type !== undefined) {
    const problem = enumProblem(body.generation_type, 'generation_type', GENERATION_TYPES);
    if (problem) return fail(problem);
  }
  const mediaIssue = mediaProblem(body.media, 'media');
  if (mediaIssue) return fail(mediaIssue);
  if (body.first_frame !== undefined) {
    const problem = mediaProblem(body.first_frame, 'first_frame');
    if (problem) return fail(problem);
  }
  const modelIssue = enumProblem(body.model, 'model', LEGACY_VIDEO_MODELS);
  if (modelIssue) return fail(modelIssue);
  const modeIssue = enumProblem(body.mode, 'mode', LEGACY_MODIFY_MODES);
  if (modeIssue) return fail(modeIssue);
  if (body.prompt !== undefined && typeof body.prompt !== 'string') {
    return fail(expectedDetail('string', 'prompt', body.prompt));
  }
  if (body.callback_url !== undefined && !isHttpUri(body.callback_url)) {
    return fail(expectedDetail('http(s) URL', 'callback_url', body.callback_url));
  }

  const request: ModifyVideoRequest = {
    generation_type: 'modify_video',
    media: { url: (body.media as LegacyMedia).url },
    model: body.model as ModifyVideoRequest['model'],
    mode: body.mode as LegacyModifyMode,
  };
  if (body.first_frame !== undefined) request.first_frame = { url: (body.first_frame as LegacyMedia).url };
  if (body.prompt !== undefined) request.prompt = body.prompt as string;
  if (body.callback_url !== undefined) request.callback_url = body.callback_url;
  return { ok: true, request };
}
