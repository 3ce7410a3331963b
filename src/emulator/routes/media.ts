/**
 * The emulator's media store, an emulator-only convenience for the legacy surface (which takes media
 * by URL only): `PUT /_emulator/media` takes a file's bytes (loopback callers only, like the admin
 * routes) and answers `{ url, sha256, bytes }`, `url` a signed `GET /_storage/media/:id` the legacy
 * creates can fetch (valid for output_url_ttl_s); `GET /_emulator/media` tells a caller it is talking to
 * the emulator before it sends any bytes. No such thing exists at the service.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { sniffFile } from '../../media/index.ts';
import { DETAILS, FILE_DETAILS } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { removeQuietly } from '../files/blobs.ts';
import { requestPath } from '../files/presigned-upload.ts';
import { HttpError } from '../http-error.ts';
import { publicBase, STORAGE_PREFIX, signUrl, verifySignedRequest } from '../signing.ts';
import { isLoopback } from './admin.ts';

/** What `GET /_emulator/media` answers: the mark genpipe looks for before sending bytes here. */
export const EMULATOR_MEDIA_MARK = { service: 'genpipe-emulator', media: 'PUT the bytes here' } as const;

function mediaDir(ctx: EmulatorContext): string {
  return join(ctx.dataDir, 'blobs', 'media');
}

/** Registers /_emulator/media and /_storage/media/:id (bodies streamed, never parsed). */
export default async function routes(app: FastifyInstance): Promise<void> {
  const ctx = app.emu;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
  const loopbackOnly = async (request: FastifyRequest) => {
    if (!isLoopback(request.socket.remoteAddress)) throw new HttpError(403, DETAILS.adminLoopbackOnly);
  };

  app.get('/_emulator/media', { onRequest: loopbackOnly }, async () => EMULATOR_MEDIA_MARK);

  app.put('/_emulator/media', { onRequest: loopbackOnly }, async (request, reply) => {
    const id = randomUUID();
    await mkdir(mediaDir(ctx), { recursive: true });
    const part = join(mediaDir(ctx), `${id}.part`);
    const hash = createHash('sha256');
    let bytes = 0;
    try {
      await pipeline(
        request.raw,
        new Transform({
          transform(chunk: Buffer, _enc, done) {
            hash.update(chunk);
            bytes += chunk.length;
            done(null, chunk);
          },
        }),
        createWriteStream(part),
      );
      await rename(part, join(mediaDir(ctx), id));
    } catch (err) {
      await removeQuietly(part);
      throw err;
    }
    const path = `${STORAGE_PREFIX}/media/${id}`;
    const { url } = signUrl(ctx, publicBase(request), 'GET', path, ctx.config.output_url_ttl_s);
    return reply.code(201).send({ url, sha256: hash.digest('hex'), bytes });
  });

  app.get(
    `${STORAGE_PREFIX}/media/:id`,
    async (request: FastifyRequest<{ Params: { id: string } }>, reply) => {
      verifySignedRequest(
        ctx,
        'GET',
        requestPath(request),
        request.query as Record<string, unknown>,
        'output',
      );
      const { id } = request.params;
      const file = join(mediaDir(ctx), id);
      const size = /^[0-9a-f-]{36}$/.test(id)
        ? await stat(file).then(
            (s) => s.size,
            () => null,
          )
        : null;
      if (size === null) throw new HttpError(404, FILE_DETAILS.outputNotFound);
      const sniff = await sniffFile(file);
      reply.type(sniff?.mime ?? 'application/octet-stream');
      reply.header('content-length', String(size));
      return reply.send(createReadStream(file));
    },
  );
}
