/**
 * `PUT /_storage/uploads/:fileId`: the storage side of a presigned upload. The signature is the
 * credential (no Authorization header, like S3). The raw body is streamed to `<id>.<rand>.part` and
 * renamed into place only when exactly the signed number of bytes arrived; a later PUT replaces the
 * object until the upload is completed.
 */
import { rename } from 'node:fs/promises';
import type { FastifyRequest } from 'fastify';
import { DETAILS, FILE_CHOICES, FILE_DETAILS, sameMediaType } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { HttpError } from '../http-error.ts';
import { verifySignedRequest } from '../signing.ts';
import { fileBlobPath, filePartPath, removeQuietly } from './blobs.ts';
import { applyExpiry } from './file-access.ts';
import {
  ClientGoneError,
  clientGone,
  streamToFile,
  TooLargeError,
  unreadBodyHeaders,
} from './stream-to-file.ts';

/** The path of a request as it was sent (no query), which is what a signature covers. */
export function requestPath(request: FastifyRequest): string {
  const q = request.url.indexOf('?');
  return q === -1 ? request.url : request.url.slice(0, q);
}

/** Checks everything that can be checked before reading the body; throws HttpError. */
function admit(ctx: EmulatorContext, request: FastifyRequest, fileId: string) {
  const size = verifySignedRequest(
    ctx,
    'PUT',
    requestPath(request),
    request.query as Record<string, unknown>,
    'upload',
  );
  const rec = ctx.store.files.get(fileId);
  if (rec?.mode !== 'presigned') throw new HttpError(404, DETAILS.fileNotFound);
  if (size !== rec.size_bytes) throw new HttpError(403, DETAILS.uploadSignatureInvalid);
  if (applyExpiry(ctx, rec)) throw new HttpError(FILE_CHOICES.conflictStatus, FILE_DETAILS.fileDeleted);
  if (rec.ingestStarted)
    throw new HttpError(FILE_CHOICES.conflictStatus, FILE_DETAILS.uploadAlreadyCompleted);
  const lengthHeader = request.headers['content-length'];
  if (lengthHeader === undefined) {
    throw new HttpError(FILE_CHOICES.uploadLengthRequiredStatus, FILE_DETAILS.uploadLengthRequired);
  }
  const length = Number(lengthHeader);
  if (length !== size) {
    throw new HttpError(FILE_CHOICES.uploadBadRequestStatus, FILE_DETAILS.uploadLengthMismatch(length, size));
  }
  const type = request.headers['content-type'];
  if (typeof type !== 'string' || !sameMediaType(type, rec.mime_type)) {
    throw new HttpError(FILE_CHOICES.uploadBadRequestStatus, FILE_DETAILS.uploadTypeMismatch(rec.mime_type));
  }
  return { rec, size };
}

/**
 * Receives the bytes of a presigned upload.
 * @returns the hex MD5 of the stored object (sent back as ETag)
 * @throws HttpError 403 (bad or expired signature), 404, 409 (completed or deleted), 411, 400
 *   (Content-Length or Content-Type not as signed/declared); ClientGoneError when the body was cut
 */
export async function receivePresignedUpload(
  ctx: EmulatorContext,
  request: FastifyRequest,
  fileId: string,
): Promise<string> {
  let admitted: ReturnType<typeof admit>;
  try {
    admitted = admit(ctx, request, fileId);
  } catch (err) {
    // Answered before reading: do not drain a large body we refused.
    if (err instanceof HttpError) throw new HttpError(err.status, err.detail, unreadBodyHeaders(request));
    throw err;
  }
  const { rec, size } = admitted;
  const partPath = filePartPath(ctx, fileId);
  let written: Awaited<ReturnType<typeof streamToFile>>;
  try {
    written = await streamToFile(request.raw, partPath, { maxBytes: size });
  } catch (err) {
    if (clientGone(request)) throw new ClientGoneError('client went away');
    if (err instanceof TooLargeError) {
      throw new HttpError(
        FILE_CHOICES.uploadBadRequestStatus,
        FILE_DETAILS.uploadLengthMismatch(size + 1, size),
      );
    }
    throw err;
  }
  if (written.bytes !== size || !request.raw.complete) {
    await removeQuietly(partPath);
    throw new ClientGoneError('body ended early');
  }
  // The file may have been completed, deleted or expired while the bytes were arriving.
  if (applyExpiry(ctx, rec) || rec.ingestStarted) {
    await removeQuietly(partPath);
    throw new HttpError(
      FILE_CHOICES.conflictStatus,
      rec.state === 'deleted' ? FILE_DETAILS.fileDeleted : FILE_DETAILS.uploadAlreadyCompleted,
    );
  }
  const finalPath = fileBlobPath(ctx, fileId);
  await rename(partPath, finalPath);
  rec.blobPath = finalPath;
  return written.md5;
}
