/**
 * Reading file records the way every route must: only the caller's own, with `expires_at` honoured
 * (past it a file reads as deleted, deleted_at = expires_at, and its bytes are removed).
 */
import { schedule } from '../background.ts';
import type { EmulatorContext } from '../context.ts';
import type { FileRec } from '../store.ts';
import { removeInBackground } from './blobs.ts';

/** setTimeout's largest delay; later expiries are applied lazily on the next read. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Soft-deletes a record at `at` (ms) and removes its bytes; a no-op when it is already deleted. */
export function markDeleted(ctx: EmulatorContext, rec: FileRec, at: number): void {
  if (rec.state === 'deleted') return;
  rec.state = 'deleted';
  rec.deletedAt = at;
  if (rec.blobPath) {
    removeInBackground(ctx, rec.blobPath);
    rec.blobPath = null;
  }
}

/** Turns a file past its expires_at into a deleted one. @returns whether the file is (now) deleted. */
export function applyExpiry(ctx: EmulatorContext, rec: FileRec): boolean {
  if (rec.state !== 'deleted' && rec.expiresAt !== null && rec.expiresAt <= ctx.clock.now()) {
    markDeleted(ctx, rec, rec.expiresAt);
  }
  return rec.state === 'deleted';
}

/** Arms a timer that deletes the file's bytes at its expiry (reads apply expiry anyway). */
export function scheduleExpiry(ctx: EmulatorContext, rec: FileRec): void {
  if (rec.expiresAt === null) return;
  const ms = rec.expiresAt - ctx.clock.now();
  if (ms > MAX_TIMER_MS) return;
  schedule(ctx, ms + 1, () => {
    applyExpiry(ctx, rec);
  });
}

/** The caller's file with that id, expiry applied; null for an unknown id or another client's file. */
export function findClientFile(ctx: EmulatorContext, clientId: string, fileId: string): FileRec | null {
  const rec = ctx.store.files.get(fileId);
  if (!rec || rec.clientId !== clientId) return null;
  applyExpiry(ctx, rec);
  return rec;
}

/** The caller's files, expiry applied, in no particular order. */
export function clientFiles(ctx: EmulatorContext, clientId: string): FileRec[] {
  const out: FileRec[] = [];
  for (const rec of ctx.store.files.values()) {
    if (rec.clientId !== clientId) continue;
    applyExpiry(ctx, rec);
    out.push(rec);
  }
  return out;
}
