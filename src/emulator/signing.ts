/**
 * HMAC-signed storage URLs. A signature binds the method, the path, the expiry and (for uploads) the
 * exact size, so a URL cannot be reused for another object, another verb or another length.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { DETAILS } from '../spec/index.ts';
import type { EmulatorContext } from './context.ts';
import { HttpError } from './http-error.ts';

export const STORAGE_PREFIX = '/_storage';

function mac(secret: string, parts: (string | number)[]): string {
  return createHmac('sha256', secret).update(parts.join('\n')).digest('hex');
}

/** Base URL (scheme://host[:port]) the caller reached us on, for building absolute storage URLs. */
export function publicBase(request: FastifyRequest): string {
  const host = request.headers.host ?? `${request.hostname}`;
  return `${request.protocol}://${host}`;
}

export interface SignedUrl {
  url: string;
  expiresAt: number;
}

/**
 * Signs `method path` until `expiresAt` (ms). `size` binds the exact byte count of an upload.
 * Returns the absolute URL with `expires`, optional `size` and `sig` query parameters.
 */
export function signUrl(
  ctx: EmulatorContext,
  base: string,
  method: 'GET' | 'PUT',
  path: string,
  ttlSeconds: number,
  size?: number,
): SignedUrl {
  const expiresAt = ctx.clock.now() + Math.round(ttlSeconds * 1000);
  const expires = Math.floor(expiresAt / 1000);
  const sig = mac(ctx.signingSecret, [method, path, expires, size ?? '']);
  const q = new URLSearchParams({ expires: String(expires) });
  if (size !== undefined) q.set('size', String(size));
  q.set('sig', sig);
  return { url: `${base}${path}?${q.toString()}`, expiresAt: expires * 1000 };
}

/** What a signed storage request's query says of it: the emulator's and in time, the emulator's but past its expiry, or not the emulator's. */
export type SignatureVerdict =
  | { ok: true; size: number | undefined }
  | { ok: false; why: 'invalid' | 'expired' };

/** Checks a storage request's signature and expiry without throwing (see verifySignedRequest). */
export function checkSignature(
  ctx: EmulatorContext,
  method: 'GET' | 'PUT',
  path: string,
  query: Record<string, unknown>,
): SignatureVerdict {
  const expires = Number(query.expires);
  const sizeRaw = query.size;
  const size = sizeRaw === undefined ? undefined : Number(sizeRaw);
  const sig = typeof query.sig === 'string' ? query.sig : '';
  if (!Number.isFinite(expires) || (size !== undefined && !Number.isFinite(size))) {
    return { ok: false, why: 'invalid' };
  }
  const expected = Buffer.from(
    mac(ctx.signingSecret, [method, path, expires, sizeRaw === undefined ? '' : String(sizeRaw)]),
  );
  const given = Buffer.from(sig);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, why: 'invalid' };
  if (expires * 1000 <= ctx.clock.now()) return { ok: false, why: 'expired' };
  return { ok: true, size };
}

/**
 * Verifies a storage request's signature and expiry. Tampered → 403, expired → 403.
 * @returns the signed size, when the URL carries one.
 */
export function verifySignedRequest(
  ctx: EmulatorContext,
  method: 'GET' | 'PUT',
  path: string,
  query: Record<string, unknown>,
  kind: 'upload' | 'output',
): number | undefined {
  const verdict = checkSignature(ctx, method, path, query);
  if (verdict.ok) return verdict.size;
  if (verdict.why === 'invalid') {
    throw new HttpError(
      403,
      kind === 'upload' ? DETAILS.uploadSignatureInvalid : DETAILS.outputSignatureInvalid,
    );
  }
  throw new HttpError(403, kind === 'upload' ? DETAILS.uploadUrlExpired : DETAILS.outputUrlExpired);
}
