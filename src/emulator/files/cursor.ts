/**
 * The opaque keyset cursor of GET /v1/files: base64url of (created_at ms, seq, id) plus an HMAC bound to
 * the calling client, so a cursor that was altered, made up or taken from another client is rejected.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { EmulatorContext } from '../context.ts';

/** A position in the newest-first order: records strictly after it come next. */
export interface CursorPosition {
  createdAt: number;
  seq: number;
  id: string;
}

function mac(ctx: EmulatorContext, clientId: string, payload: string): Buffer {
  return createHmac('sha256', ctx.signingSecret)
    .update(`files-cursor\n${clientId}\n${payload}`)
    .digest()
    .subarray(0, 16);
}

/** Encodes the position of the last record of a page. */
export function encodeCursor(ctx: EmulatorContext, clientId: string, pos: CursorPosition): string {
  const payload = `${pos.createdAt}:${pos.seq}:${pos.id}`;
  return `${Buffer.from(payload).toString('base64url')}.${mac(ctx, clientId, payload).toString('base64url')}`;
}

/** Decodes a cursor given by the caller; null when it is malformed, altered or another client's. */
export function decodeCursor(ctx: EmulatorContext, clientId: string, cursor: string): CursorPosition | null {
  const m = /^([A-Za-z0-9_-]{1,400})\.([A-Za-z0-9_-]{22})$/.exec(cursor);
  if (!m) return null;
  const payload = Buffer.from(m[1]!, 'base64url').toString('utf8');
  // Compare the canonical re-encoding, so no altered character (not even unused base64 bits) passes.
  const expected = Buffer.from(
    `${Buffer.from(payload).toString('base64url')}.${mac(ctx, clientId, payload).toString('base64url')}`,
  );
  const given = Buffer.from(cursor);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  // The MAC proved the payload is one we made; parse it all the same.
  const [t, seq, id, ...rest] = payload.split(':');
  const createdAt = Number(t);
  const n = Number(seq);
  if (rest.length > 0 || !id || !Number.isFinite(createdAt) || !Number.isInteger(n)) return null;
  return { createdAt, seq: n, id };
}

/** Newest first: created_at descending, then creation order (seq) descending for equal times. */
export function compareNewestFirst(a: CursorPosition, b: CursorPosition): number {
  return b.createdAt - a.createdAt || b.seq - a.seq;
}
