/**
 * `GET /_storage/outputs/:generationId/:index`: streams a generation's output from disk with its MIME
 * type and Content-Length, honouring a single `Range` so interrupted downloads can resume. The signed
 * URL is the credential; a tampered or expired one answers 403, an unknown output 404.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { FILE_DETAILS } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { HttpError } from '../http-error.ts';
import { verifySignedRequest } from '../signing.ts';
import { parseRange } from './byte-range.ts';
import { requestPath } from './presigned-upload.ts';

/** Answers an output download (GET, and HEAD through fastify's HEAD routes). */
export async function serveOutput(
  ctx: EmulatorContext,
  request: FastifyRequest<{ Params: { generationId: string; index: string } }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  verifySignedRequest(ctx, 'GET', requestPath(request), request.query as Record<string, unknown>, 'output');
  const { generationId, index } = request.params;
  const gen = ctx.store.generations.get(generationId);
  const i = /^\d{1,4}$/.test(index) ? Number(index) : -1;
  const output = gen?.outputs[i];
  if (!output) throw new HttpError(404, FILE_DETAILS.outputNotFound);
  let size: number;
  try {
    const st = await stat(output.blobPath);
    if (!st.isFile()) throw new Error('not a file');
    size = st.size;
  } catch {
    throw new HttpError(404, FILE_DETAILS.outputNotFound);
  }
  reply.header('accept-ranges', 'bytes');
  reply.header('cache-control', 'private, no-transform');
  const range = parseRange(request.headers.range, size);
  if (range === 'unsatisfiable') {
    throw new HttpError(416, FILE_DETAILS.rangeNotSatisfiable, { 'content-range': `bytes */${size}` });
  }
  reply.type(output.mime);
  if (range === null) {
    reply.header('content-length', String(size));
    return reply.code(200).send(createReadStream(output.blobPath));
  }
  reply.header('content-range', `bytes ${range.start}-${range.end}/${size}`);
  reply.header('content-length', String(range.end - range.start + 1));
  return reply.code(206).send(createReadStream(output.blobPath, { start: range.start, end: range.end }));
}
