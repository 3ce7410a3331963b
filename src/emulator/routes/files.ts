/**
 * The files resource of the agents surface: POST /v1/files (multipart inline upload, or a JSON request
 * for a presigned upload), POST /v1/files/:id/complete, GET /v1/files/:id, GET /v1/files and
 * DELETE /v1/files/:id. Every route authenticates; a client only ever sees its own files.
 *
 * Multipart parts accepted beside `file`: purpose, filename (defaults to the file part's filename),
 * expires_at (RFC 3339), user_id and mime_type (a declared type the bytes must match); others are ignored.
 */
import { mkdir } from 'node:fs/promises';
import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  CHOICES,
  type CreateFileResponse,
  DETAILS,
  FILE_CHOICES,
  FILE_DETAILS,
  normalizeMimeType,
  validateFileListQuery,
  validatePresignedFileRequest,
} from '../../spec/index.ts';
import { AUTH_DETAILS, authHook } from '../auth.ts';
import type { EmulatorContext } from '../context.ts';
import { filesDir, uploadUrl } from '../files/blobs.ts';
import { findClientFile, markDeleted } from '../files/file-access.ts';
import { fileView } from '../files/file-view.ts';
import { startIngest } from '../files/ingest.ts';
import { receiveInlineUpload } from '../files/inline-upload.ts';
import { listFiles } from '../files/list-files.ts';
import { addFileRecord, newFileId } from '../files/new-file-record.ts';
import { ClientGoneError, unreadBodyHeaders } from '../files/stream-to-file.ts';
import { HttpError } from '../http-error.ts';
import { publicBase } from '../signing.ts';
import type { ClientRec, FileRec } from '../store.ts';

type IdRequest = FastifyRequest<{ Params: { id: string } }>;

/** Largest JSON body of POST /v1/files. */
const JSON_BODY_MAX_BYTES = 64 * 1024;

function clientOf(request: FastifyRequest): ClientRec {
  if (!request.client) throw new HttpError(401, AUTH_DETAILS.missing);
  return request.client;
}

function created(
  reply: FastifyReply,
  rec: FileRec,
  upload: CreateFileResponse['upload'],
): CreateFileResponse {
  reply.code(CHOICES.createFileStatus);
  return { id: rec.id, file: fileView(rec), state: rec.state, upload };
}

async function createInline(ctx: EmulatorContext, request: FastifyRequest, reply: FastifyReply) {
  const client = clientOf(request);
  const id = newFileId();
  let upload: Awaited<ReturnType<typeof receiveInlineUpload>>;
  try {
    upload = await receiveInlineUpload(ctx, request, id);
  } catch (err) {
    if (err instanceof ClientGoneError) {
      // Nobody is listening; nothing was stored.
      reply.hijack();
      reply.raw.destroy();
      return;
    }
    throw err;
  }
  const hint =
    upload.partMime !== null && upload.partMime !== 'application/octet-stream' ? upload.partMime : null;
  const rec = addFileRecord(ctx, {
    id,
    clientId: client.id,
    fields: upload.fields,
    mime_type: upload.fields.mime_type ?? hint ?? 'application/octet-stream',
    size_bytes: upload.bytes,
    mode: 'inline',
    blobPath: upload.blobPath,
  });
  startIngest(ctx, rec, upload.fields.mime_type);
  return created(reply, rec, null);
}

function createPresigned(ctx: EmulatorContext, request: FastifyRequest, reply: FastifyReply) {
  const client = clientOf(request);
  const checked = validatePresignedFileRequest(request.body, ctx.clock.now());
  if (!checked.ok) throw new HttpError(400, checked.detail);
  const { value } = checked;
  const rec = addFileRecord(ctx, {
    id: newFileId(),
    clientId: client.id,
    fields: value,
    mime_type: value.mime_type,
    size_bytes: value.size_bytes,
    mode: 'presigned',
    blobPath: null,
  });
  const signed = uploadUrl(ctx, publicBase(request), rec.id, value.size_bytes);
  return created(reply, rec, {
    expires_at: new Date(signed.expiresAt).toISOString(),
    method: 'PUT',
    url: signed.url,
    headers: { 'Content-Type': value.mime_type },
  });
}

function isJson(request: FastifyRequest): boolean {
  const type = request.headers['content-type'];
  return typeof type === 'string' && normalizeMimeType(type) === 'application/json';
}

/** Registers the /v1/files routes (an encapsulated plugin with its own auth hook and body parsers). */
export default async function routes(app: FastifyInstance): Promise<void> {
  const ctx = app.emu;
  await mkdir(filesDir(ctx), { recursive: true });
  // The inline cap is enforced while streaming (see receiveInlineUpload), not by a thrown error.
  await app.register(multipart, { throwFileSizeLimit: false });
  // application/json is the app's parser (an empty body reads as no body: app.ts). Any other type reaches the handler unread, which answers 415 with a clear detail.
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
  app.addHook('onRequest', authHook(ctx));

  app.post('/v1/files', { bodyLimit: JSON_BODY_MAX_BYTES }, async (request, reply) => {
    if (ctx.rng.chance(ctx.config.faults.http_503)) {
      throw new HttpError(503, DETAILS.ingestionUnavailable, unreadBodyHeaders(request));
    }
    if (request.isMultipart()) return createInline(ctx, request, reply);
    if (isJson(request)) return createPresigned(ctx, request, reply);
    throw new HttpError(
      FILE_CHOICES.unsupportedMediaTypeStatus,
      FILE_DETAILS.unsupportedContentType,
      unreadBodyHeaders(request),
    );
  });

  app.post('/v1/files/:id/complete', async (request: IdRequest, reply) => {
    const rec = findClientFile(ctx, clientOf(request).id, request.params.id);
    if (!rec) throw new HttpError(404, DETAILS.fileNotFound);
    if (!rec.ingestStarted) {
      if (rec.state === 'deleted') throw new HttpError(FILE_CHOICES.conflictStatus, FILE_DETAILS.fileDeleted);
      if (!rec.blobPath) throw new HttpError(400, FILE_DETAILS.notUploaded);
      startIngest(ctx, rec, rec.mime_type);
    }
    reply.code(CHOICES.completeFileStatus);
    return fileView(rec);
  });

  app.get('/v1/files/:id', async (request: IdRequest) => {
    const rec = findClientFile(ctx, clientOf(request).id, request.params.id);
    if (!rec) throw new HttpError(404, DETAILS.fileNotFound);
    return fileView(rec);
  });

  app.get('/v1/files', async (request) => {
    const client = clientOf(request);
    const checked = validateFileListQuery(request.query);
    if (!checked.ok) throw new HttpError(400, checked.detail);
    return listFiles(ctx, client.id, checked.value);
  });

  app.delete('/v1/files/:id', async (request: IdRequest, reply) => {
    const rec = findClientFile(ctx, clientOf(request).id, request.params.id);
    if (!rec) throw new HttpError(404, DETAILS.fileNotFound);
    const already = rec.state === 'deleted';
    markDeleted(ctx, rec, ctx.clock.now());
    return reply.code(already ? FILE_CHOICES.deleteTwiceStatus : 204).send();
  });
}
