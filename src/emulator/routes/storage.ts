/**
 * The storage host: `PUT /_storage/uploads/:fileId` receives a presigned upload's bytes and
 * `GET /_storage/outputs/:generationId/:index` serves a generation's output. Signed URLs are the only
 * credential here (no Authorization header, like S3); errors are `{ detail }` like everywhere else.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { receivePresignedUpload } from '../files/presigned-upload.ts';
import { serveOutput } from '../files/serve-output.ts';
import { ClientGoneError } from '../files/stream-to-file.ts';
import { STORAGE_PREFIX } from '../signing.ts';

/** Registers the /_storage routes (an encapsulated plugin whose bodies are never parsed). */
export default async function routes(app: FastifyInstance): Promise<void> {
  const ctx = app.emu;
  // Bodies are streamed by the handler, never buffered by a parser, whatever their type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  app.put(
    `${STORAGE_PREFIX}/uploads/:fileId`,
    async (request: FastifyRequest<{ Params: { fileId: string } }>, reply) => {
      let md5: string;
      try {
        md5 = await receivePresignedUpload(ctx, request, request.params.fileId);
      } catch (err) {
        if (err instanceof ClientGoneError) {
          reply.hijack();
          reply.raw.destroy();
          return;
        }
        throw err;
      }
      return reply.code(200).header('etag', `"${md5}"`).send();
    },
  );

  app.get(
    `${STORAGE_PREFIX}/outputs/:generationId/:index`,
    async (request: FastifyRequest<{ Params: { generationId: string; index: string } }>, reply) =>
      serveOutput(ctx, request, reply),
  );
}
