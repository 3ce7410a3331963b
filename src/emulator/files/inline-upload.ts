/**
 * The inline (multipart/form-data) upload: the `file` part is streamed to disk (never buffered) under
 * the inline cap, the text parts purpose, filename, expires_at, user_id and mime_type are checked, and
 * only a completely received body becomes a file record. An over-cap body answers 413 and leaves
 * nothing behind; a client that goes away mid-body leaves nothing behind either.
 */
import { rename } from 'node:fs/promises';
import type { Multipart } from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import {
  FILE_CHOICES,
  FILE_DETAILS,
  type FileFields,
  INLINE_FIELD_NAMES,
  inlineTooLargeDetail,
  normalizeMimeType,
  validateInlineFileFields,
} from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { HttpError } from '../http-error.ts';
import { fileBlobPath, filePartPath, removeQuietly } from './blobs.ts';
import {
  ClientGoneError,
  clientGone,
  discardRest,
  streamToFile,
  TooLargeError,
  unreadBodyHeaders,
} from './stream-to-file.ts';

/** What a fully received multipart body carried. */
export interface InlineUpload {
  fields: FileFields;
  /** Final path of the bytes (already renamed into place). */
  blobPath: string;
  bytes: number;
  /** Content-Type of the `file` part, as a hint (normalized), or null. */
  partMime: string | null;
  /** filename of the `file` part, or null. */
  partFilename: string | null;
}

const KNOWN_FIELDS = new Set<string>(INLINE_FIELD_NAMES);

/** Maps @fastify/multipart and busboy failures to a 400 with a clear detail. */
function multipartError(err: unknown): HttpError {
  const code = (err as { code?: string }).code;
  switch (code) {
    case 'FST_FILES_LIMIT':
      return new HttpError(400, FILE_DETAILS.multipartExtraFile);
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return new HttpError(400, FILE_DETAILS.multipartTooManyParts);
    default:
      return new HttpError(400, FILE_DETAILS.multipartMalformed);
  }
}

/**
 * Receives a multipart upload for `fileId`. Throws HttpError 400/413 for a bad or over-cap body and
 * ClientGoneError when the client disconnected; in every failure the partial bytes are removed.
 */
export async function receiveInlineUpload(
  ctx: EmulatorContext,
  request: FastifyRequest,
  fileId: string,
): Promise<InlineUpload> {
  const max = ctx.config.inline_upload_max_bytes;
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > max + FILE_CHOICES.inlineFramingSlackBytes) {
    throw new HttpError(413, inlineTooLargeDetail(max), unreadBodyHeaders(request));
  }
  const partPath = filePartPath(ctx, fileId);
  const texts: Record<string, string> = {};
  let problem: HttpError | null = null;
  let file: { bytes: number; mime: string | null; filename: string | null } | null = null;
  try {
    const parts = request.parts({
      limits: {
        fileSize: max,
        files: 1,
        fields: FILE_CHOICES.multipartMaxFields,
        fieldSize: FILE_CHOICES.multipartFieldMaxBytes,
        parts: FILE_CHOICES.multipartMaxParts,
      },
    });
    for await (const part of parts as AsyncIterable<Multipart>) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          part.file.resume();
          problem ??= new HttpError(400, FILE_DETAILS.multipartNoFile);
          continue;
        }
        const written = await streamToFile(part.file, partPath, { maxBytes: max, limitEvent: 'limit' });
        // busboy may have hit the cap before the listener above was attached.
        if ((part.file as { truncated?: boolean }).truncated)
          throw new TooLargeError(`more than ${max} bytes`);
        file = {
          bytes: written.bytes,
          mime: part.mimetype ? normalizeMimeType(part.mimetype) : null,
          filename: part.filename ? part.filename : null,
        };
      } else {
        if (part.valueTruncated || part.fieldnameTruncated) {
          problem ??= new HttpError(400, FILE_DETAILS.multipartFieldTooLong);
        } else if (KNOWN_FIELDS.has(part.fieldname)) {
          if (part.fieldname in texts)
            problem ??= new HttpError(400, FILE_DETAILS.fieldRepeated(part.fieldname));
          texts[part.fieldname] = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
        }
      }
    }
    if (!request.raw.complete) throw new ClientGoneError('request body ended early');
  } catch (err) {
    await removeQuietly(partPath);
    discardRest(request);
    if (clientGone(request) || err instanceof ClientGoneError) throw new ClientGoneError('client went away');
    if (err instanceof TooLargeError)
      throw new HttpError(413, inlineTooLargeDetail(max), unreadBodyHeaders(request));
    if (err instanceof HttpError) throw err;
    throw multipartError(err);
  }
  const fail = async (e: HttpError): Promise<never> => {
    await removeQuietly(partPath);
    throw e;
  };
  if (problem) return fail(problem);
  if (file === null) return fail(new HttpError(400, FILE_DETAILS.multipartNoFile));
  const checked = validateInlineFileFields(texts, ctx.clock.now());
  if (!checked.ok) return fail(new HttpError(400, checked.detail));
  if (checked.value.filename === null && file.filename !== null) {
    const fromPart = validateInlineFileFields({ filename: file.filename }, ctx.clock.now());
    if (!fromPart.ok) return fail(new HttpError(400, fromPart.detail));
    checked.value.filename = file.filename;
  }
  const blobPath = fileBlobPath(ctx, fileId);
  await rename(partPath, blobPath);
  return {
    fields: checked.value,
    blobPath,
    bytes: file.bytes,
    partMime: file.mime,
    partFilename: file.filename,
  };
}
