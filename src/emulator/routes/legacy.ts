/**
 * The legacy surface under /dream-machine/v1: POST /generations/video/modify and GET /generations/:id
 * here, the other creates in legacy-operations.ts, list/delete/credits/ping/concepts in legacy-reads.ts.
 * Bearer-key auth like /v1; errors are `{ detail }`; no rate limits and no X-RateLimit headers; every
 * response carries X-Request-Id (X-API-Version stays a /v1 header).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DETAILS, LEGACY_BASE_PATH, LEGACY_OPERATIONS, validateModifyRequest } from '../../spec/index.ts';
import { authenticate } from '../auth.ts';
import { checkBalance } from '../generations/balance.ts';
import { HttpError } from '../http-error.ts';
import { callbackUrlProblem } from '../legacy/callbacks.ts';
import { legacyView } from '../legacy/legacy-view.ts';
import { createModifyGeneration } from '../legacy/modify.ts';
import { legacyRuntime } from '../legacy/runtime.ts';
import { callerGeneration } from '../legacy/sources.ts';
import { publicBase } from '../signing.ts';
import { registerLegacyOperations } from './legacy-operations.ts';
import { registerLegacyReads } from './legacy-reads.ts';

function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  return (typeof header === 'string' ? /^Bearer +(\S+)\s*$/.exec(header)?.[1] : undefined) ?? '';
}

async function legacyPlugin(app: FastifyInstance): Promise<void> {
  const ctx = app.emu;
  const log = (msg: string) => app.log.warn(msg);

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('X-Request-Id', request.id);
    request.client = authenticate(ctx, request);
  });

  // Stop source fetches, render waits and callback retries as soon as the app starts closing.
  app.addHook('preClose', async () => {
    legacyRuntime(ctx).closing.abort();
  });

  app.setNotFoundHandler((request, reply) => {
    reply.header('X-Request-Id', request.id);
    return reply.status(404).send({ detail: DETAILS.routeNotFound });
  });

  app.post('/generations/video/modify', async (request, reply) => {
    const client = request.client!;
    const result = validateModifyRequest(request.body);
    if (!result.ok) throw new HttpError(result.status, result.detail);
    const body = result.request;
    if (body.callback_url !== undefined) {
      const problem = callbackUrlProblem(ctx, body.callback_url);
      if (problem) throw new HttpError(400, problem);
    }
    checkBalance(client, ctx.config.costs[LEGACY_OPERATIONS.modify_video.costType]);
    const rec = createModifyGeneration(ctx, {
      client,
      request: body,
      requestId: request.id,
      base: publicBase(request),
      apiKey: bearerKey(request),
      log,
    });
    return reply.status(201).send(legacyView(ctx, publicBase(request), rec));
  });

  app.get<{ Params: { id: string } }>('/generations/:id', async (request, reply) => {
    const rec = callerGeneration(ctx, request.client!.id, request.params.id);
    // Counted as the agents surface's reads are (the admin view's `reads`).
    rec.reads = (rec.reads ?? 0) + 1;
    return reply.send(legacyView(ctx, publicBase(request), rec));
  });

  registerLegacyReads(app);
  registerLegacyOperations(app);
}

/** Registers the legacy surface under its base path, encapsulated (its hooks apply to it alone). */
export default async function routes(app: FastifyInstance): Promise<void> {
  await app.register(legacyPlugin, { prefix: LEGACY_BASE_PATH });
}
