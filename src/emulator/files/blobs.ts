/**
 * Where stored bytes live and how upload URLs are made: uploaded files under `<dataDir>/blobs/files`,
 * presigned upload URLs (`PUT /_storage/uploads/:fileId`). Output URLs (`GET
 * /_storage/outputs/:generationId/:index`) come from output-url.ts and are re-exported here.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { track } from '../background.ts';
import type { EmulatorContext } from '../context.ts';
import { type SignedUrl, STORAGE_PREFIX, signUrl } from '../signing.ts';

export { outputPath, outputUrl } from './output-url.ts';

/** Directory of uploaded files' bytes. */
export function filesDir(ctx: EmulatorContext): string {
  return join(ctx.dataDir, 'blobs', 'files');
}

/** Final path of a file's bytes (written only once they are completely received). */
export function fileBlobPath(ctx: EmulatorContext, fileId: string): string {
  return join(filesDir(ctx), fileId);
}

/** A fresh temporary path next to the file's final path; renamed into place only when complete. */
export function filePartPath(ctx: EmulatorContext, fileId: string): string {
  return join(filesDir(ctx), `${fileId}.${randomBytes(6).toString('hex')}.part`);
}

/** Path (without query) of a file's presigned upload URL. */
export function uploadPath(fileId: string): string {
  return `${STORAGE_PREFIX}/uploads/${fileId}`;
}

/**
 * A signed PUT URL for a presigned upload, bound to the exact size, valid for config.upload_url_ttl_s.
 * @param base scheme://host[:port] the caller reached us on (see publicBase)
 */
export function uploadUrl(ctx: EmulatorContext, base: string, fileId: string, sizeBytes: number): SignedUrl {
  return signUrl(ctx, base, 'PUT', uploadPath(fileId), ctx.config.upload_url_ttl_s, sizeBytes);
}

/** Removes a file if it exists; never throws. */
export async function removeQuietly(path: string): Promise<void> {
  await rm(path, { force: true }).catch(() => undefined);
}

/** Removes a file in the background (close() waits for it). */
export function removeInBackground(ctx: EmulatorContext, path: string): void {
  track(ctx, removeQuietly(path));
}
