/**
 * Builds the emulator's fastify app (no listening here; see server.ts). Cross-cutting pieces live in
 * this file once: request-id and version headers, fault injection at the edge, stats, and the error
 * handler that turns every failure into `{ detail }`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { API_VERSION, DETAILS, isRequestId } from '../spec/index.ts';
import type { Clock } from './clock.ts';
import { systemClock } from './clock.ts';
import { drawMs, type EmulatorConfig } from './config.ts';
import type { EmulatorContext } from './context.ts';
import { Holds } from './generations/holds.ts';
import { checkAbuseCeiling } from './generations/rate-limiter.ts';
import { HttpError } from './http-error.ts';
import { Rng } from './rng.ts';
import adminRoutes from './routes/admin.ts';
import fileRoutes from './routes/files.ts';
import generationRoutes from './routes/generations.ts';
import legacyRoutes from './routes/legacy.ts';
import mediaRoutes from './routes/media.ts';
import storageRoutes from './routes/storage.ts';
import { Store } from './store.ts';

export interface BuildOptions {
  config: EmulatorConfig;
  /** Directory for stored bytes; must exist. */
  dataDir: string;
  clock?: Clock;
  /** fastify logger; off by default. */
  logger?: boolean;
}

const kRateKind = Symbol('rateLimitKind');

function isAgents(request: FastifyRequest): boolean {
  return request.url.startsWith('/v1/') || request.url === '/v1';
}

/** Whether this call's answer is one faults.lose_answers asks to lose (and counts it down). */
function loseAnswer(ctx: EmulatorContext, request: FastifyRequest): boolean {
  const lose = ctx.config.faults.lose_answers;
  const call = `${request.method} ${request.url.split('?')[0]}`;
  const left = lose[call] ?? 0;
  if (left <= 0) return false;
  lose[call] = left - 1;
  return true;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The emulator's one error answer: an HttpError as it says, fastify's own errors (bad JSON, a body over the
 * limit) with the interface's `detail`, anything else as an internal error.
 */
function answerError(error: FastifyError | HttpError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof HttpError) {
    if (error.rateLimitKind) (request as unknown as Record<symbol, unknown>)[kRateKind] = error.rateLimitKind;
    reply.headers(error.headers);
    return reply.status(error.status).send({ detail: error.detail });
  }
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 ? error.statusCode : 500;
  let detail: string;
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      detail = DETAILS.invalidJson;
      break;
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      detail = DETAILS.bodyTooLarge;
      break;
    default:
      detail = status >= 500 ? DETAILS.internal : error.message;
  }
  if (error instanceof SyntaxError) detail = DETAILS.invalidJson;
  if (status >= 500) request.log.error(error);
  return reply.status(status).send({ detail });
}

/**
 * A body-less request may still say application/json (the lumaai SDK sends it on every non-GET, a DELETE or
 * a complete included): an empty JSON body reads as no body, and the route answers.
 */
function readEmptyJsonAsNoBody(app: FastifyInstance): void {
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    return json(request, body as string, done);
  });
}

/** The caller's X-Request-Id when it can be one (spec/request-id.ts), echoed; else a fresh UUID. */
function requestIdOf(req: { headers: Record<string, string | string[] | undefined> }): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && isRequestId(given) ? given : randomUUID();
}

export async function buildApp(options: BuildOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: config.json_body_max_bytes,
    genReqId: requestIdOf,
    forceCloseConnections: true,
  });

  const ctx: EmulatorContext = {
    config,
    store: new Store(config),
    clock: options.clock ?? systemClock,
    rng: new Rng(config.seed),
    dataDir: options.dataDir,
    signingSecret: config.signing_secret ?? randomBytes(32).toString('hex'),
    stats: { byStatus: {}, rateLimited: { rpm: 0, concurrency: 0, abuse: 0 }, resets: 0 },
    holds: new Holds(),
    background: new Set(),
    pending: new Set(),
    closed: false,
  };
  app.decorate('emu', ctx);
  app.decorateRequest('client', null);

  readEmptyJsonAsNoBody(app);

  app.addHook('onRequest', async (request, reply) => {
    if (!isAgents(request)) return;
    reply.header('X-Request-Id', request.id);
    reply.header('X-API-Version', API_VERSION);
    const { faults } = ctx.config;
    if (ctx.rng.chance(faults.reset_before)) {
      ctx.stats.resets += 1;
      request.raw.socket.destroy();
      return reply.hijack();
    }
    const latency = drawMs(faults.latency_ms, ctx.rng);
    if (latency > 0) await sleep(latency);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (!isAgents(request)) return payload;
    if (
      loseAnswer(ctx, request) ||
      (request.method === 'POST' && ctx.rng.chance(ctx.config.faults.reset_after))
    ) {
      // The work is done; the caller never hears of it (a lost response).
      ctx.stats.resets += 1;
      reply.raw.socket?.destroy();
    }
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    const code = String(reply.statusCode);
    ctx.stats.byStatus[code] = (ctx.stats.byStatus[code] ?? 0) + 1;
    const kind = (request as unknown as Record<symbol, unknown>)[kRateKind];
    if (reply.statusCode === 429 && typeof kind === 'string') {
      ctx.stats.rateLimited[kind as keyof EmulatorContext['stats']['rateLimited']] += 1;
    }
  });

  app.setErrorHandler(answerError);

  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ detail: DETAILS.routeNotFound }));

  // The API-wide abuse ceiling counts every GET of the agents surface per client (a generation, a file,
  // the file list), after the route's auth hook has told the client.
  app.addHook('preHandler', async (request) => {
    if (request.method === 'GET' && isAgents(request) && request.client) {
      checkAbuseCeiling(ctx, request.client, ctx.clock.now());
    }
  });

  await app.register(fileRoutes);
  await app.register(generationRoutes);
  await app.register(storageRoutes);
  await app.register(legacyRoutes);
  await app.register(adminRoutes);
  await app.register(mediaRoutes);

  app.addHook('onClose', async () => {
    ctx.closed = true;
    ctx.holds.abandon();
    for (const t of ctx.background) clearTimeout(t);
    ctx.background.clear();
    await Promise.allSettled([...ctx.pending]);
  });
  return app;
}
