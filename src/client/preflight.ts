/**
 * The local check of a create: the src/spec validator, run before anything is sent. A PreflightError
 * carries exactly the status and detail the service would answer, so it is thrown only when the
 * service's answer is certain:
 * - every 400 and 422 the validator gives (they depend on the request body alone);
 * - a 413 for inline `data` over 50 MB, only when the service could not reject the request for
 *   anything else first: every media reference is inline data that is valid base64 of the right kind
 *   (image, or video for a video source), and the oversized one is the first reference checked.
 */
import {
  checkMediaFacts,
  listMediaRefs,
  type MediaFacts,
  type NormalizedGenerationRequest,
  validateGenerationRequest,
  validateModifyRequest,
} from '../spec/index.ts';
import { PreflightError } from './errors.ts';
import { redact } from './redact.ts';
import { mediaKind, SNIFF_BYTES, sniffBytes } from './sniff-mime.ts';
import type { GenerationRequest, ModifyVideoInput } from './types.ts';

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/** Whether a string is standard base64 (whitespace ignored; padding optional but correct when given). */
export function isStandardBase64(data: string): boolean {
  const s = data.replace(/\s+/g, '');
  if (s.length === 0 || !BASE64_RE.test(s)) return false;
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  if (pad > 0) return s.length % 4 === 0 && s.length > pad;
  return s.length % 4 !== 1;
}

/** Bytes that a valid base64 string decodes to, computed without decoding it. */
export function base64DecodedBytes(data: string): number {
  const s = data.replace(/\s+/g, '');
  const pad = s.endsWith('==') ? 2 : s.endsWith('=') ? 1 : 0;
  return Math.floor(((s.length - pad) * 3) / 4);
}

async function sniffBase64Head(data: string): Promise<string | null> {
  const chars = Math.ceil(SNIFF_BYTES / 3) * 4;
  return sniffBytes(Buffer.from(data.replace(/\s+/g, '').slice(0, chars), 'base64'));
}

/** The 413 the service would certainly give for this request, or null (see the module comment). */
async function certainTooLarge(request: NormalizedGenerationRequest): Promise<PreflightError | null> {
  const sites = listMediaRefs(request);
  const first = sites[0];
  if (!first || first.ref.data === undefined) return null;
  const facts: Record<string, MediaFacts> = {};
  for (const site of sites) {
    const data = site.ref.data;
    if (data === undefined || !isStandardBase64(data)) return null;
    const kind = mediaKind(await sniffBase64Head(data));
    if (kind !== (site.position === 'video_source' ? 'video' : 'image')) return null;
    if (site === first) facts[site.path] = { bytes: base64DecodedBytes(data) };
  }
  const rejection = checkMediaFacts(request, facts);
  return rejection?.status === 413 ? new PreflightError(413, rejection.detail) : null;
}

/**
 * Checks a create locally.
 *
 * @param request - the body the caller wants to send
 * @param secrets - texts never to quote back (a field value can echo a key into the detail)
 * @returns the request with the service's defaults applied (for information; the original is sent)
 * @throws PreflightError with the service's status (400, 413, 422) and exact detail
 * @example await preflightGeneration({ model: 'uni-2', prompt: 'x' }) // throws 400 'Unknown model: uni-2'
 */
export async function preflightGeneration(
  request: GenerationRequest,
  secrets: readonly string[] = [],
): Promise<NormalizedGenerationRequest> {
  const checked = validateGenerationRequest(request);
  if (!checked.ok) throw new PreflightError(checked.status, redact(checked.detail, secrets));
  const tooLarge = await certainTooLarge(checked.request);
  if (tooLarge) throw tooLarge;
  return checked.request;
}

/**
 * Checks a legacy modify request locally and applies its default generation_type.
 * @param secrets - texts never to quote back
 * @throws PreflightError 400 with the service's detail
 */
export function preflightModify(
  request: ModifyVideoInput,
  secrets: readonly string[] = [],
): ReturnType<typeof validateModifyRequest> & { ok: true } {
  const checked = validateModifyRequest(request);
  if (!checked.ok) throw new PreflightError(checked.status, redact(checked.detail, secrets));
  return checked;
}
