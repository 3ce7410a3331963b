/**
 * The legacy creates beyond modify, on the paths the public SDKs call (spec LEGACY_PATHS): video, image
 * (async or sync), reframe image and video, upscale and add audio of a completed video. Registered
 * inside the legacy plugin (its auth, X-Request-Id and `{ detail }` errors apply).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  LEGACY_OPERATION_CHOICES as C,
  DETAILS,
  LEGACY_OPERATION_DETAILS,
  LEGACY_OPERATIONS,
  type LegacyRequestResult,
  LEGACY_CREATES as V,
} from '../../spec/index.ts';
import { checkBalance } from '../generations/balance.ts';
import { HttpError } from '../http-error.ts';
import { callbackUrlProblem } from '../legacy/callbacks.ts';
import { audioRender, upscaleRender } from '../legacy/follow-up.ts';
import { type ImageRequest, imageRender } from '../legacy/image.ts';
import { legacyView } from '../legacy/legacy-view.ts';
import { createLegacyGeneration, type LegacyRender } from '../legacy/lifecycle.ts';
import { type ReframeRequest, reframeImageRender, reframeVideoRender } from '../legacy/reframe.ts';
import { legacyRuntime } from '../legacy/runtime.ts';
import { callerGeneration, completedOutput } from '../legacy/sources.ts';
import { type VideoRequest, videoRender } from '../legacy/video.ts';
import { publicBase } from '../signing.ts';

type IdRequest = FastifyRequest<{ Params: { id: string } }>;

function bearerKey(request: FastifyRequest): string {
  const header = request.headers.authorization;
  return (typeof header === 'string' ? /^Bearer +(\S+)\s*$/.exec(header)?.[1] : undefined) ?? '';
}

/** The validated request or the 400. */
function valid(result: LegacyRequestResult) {
  if (!result.ok) throw new HttpError(result.status, result.detail);
  return result.request;
}

/** Waits for the generation to end, at most `seconds`, or until the app closes. */
async function waitEnded(ended: Promise<void>, seconds: number, closing: AbortSignal): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onClose = () => {};
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.min(seconds, C.syncTimeoutMaxSeconds) * 1000);
    onClose = () => resolve();
    closing.addEventListener('abort', onClose, { once: true });
  });
  try {
    await Promise.race([ended, timeout]);
  } finally {
    clearTimeout(timer);
    closing.removeEventListener('abort', onClose);
  }
}

export function registerLegacyOperations(app: FastifyInstance): void {
  const ctx = app.emu;
  const log = (msg: string) => app.log.warn(msg);

  /** Shared create path: callback_url, balance, store, schedule; answers 201 (after a sync wait). */
  async function create(
    request: FastifyRequest,
    reply: FastifyReply,
    body: ReturnType<typeof valid>,
    model: string,
    render: LegacyRender,
  ) {
    const client = request.client!;
    const callbackUrl = body.callback_url as string | undefined;
    if (callbackUrl !== undefined) {
      const problem = callbackUrlProblem(ctx, callbackUrl);
      if (problem) throw new HttpError(400, problem);
    }
    checkBalance(client, ctx.config.costs[LEGACY_OPERATIONS[body.generation_type].costType]);
    const { rec, job } = createLegacyGeneration(ctx, {
      client,
      request: body as typeof body & { callback_url?: string },
      model,
      requestId: request.id,
      base: publicBase(request),
      apiKey: bearerKey(request),
      render,
      log,
    });
    if (body.sync === true) {
      const seconds = (body.sync_timeout as number | undefined) ?? C.syncTimeoutDefaultSeconds;
      await waitEnded(job.ended, seconds, legacyRuntime(ctx).closing.signal);
    }
    return reply.status(C.createStatus).send(legacyView(ctx, publicBase(request), rec));
  }

  /** The caller's completed video generation an upscale or add-audio starts from. */
  function videoSource(request: IdRequest) {
    const rec = callerGeneration(ctx, request.client!.id, request.params.id);
    if (LEGACY_OPERATIONS[rec.legacyType as keyof typeof LEGACY_OPERATIONS]?.generationType !== 'video') {
      throw new HttpError(400, LEGACY_OPERATION_DETAILS.sourceNotVideo(rec.id));
    }
    return completedOutput(
      ctx,
      rec.clientId,
      rec.id,
      null,
      () => new HttpError(404, DETAILS.generationNotFound),
    );
  }

  app.post(V.video.path, async (request, reply) => {
    const body = valid(V.video.validate(request.body));
    const render = videoRender(ctx, request.client!.id, body as unknown as VideoRequest);
    return create(request, reply, body, body.model as string, render);
  });

  app.post(V.image.path, async (request, reply) => {
    const body = valid(V.image.validate(request.body));
    return create(
      request,
      reply,
      body,
      body.model as string,
      imageRender(ctx, body as unknown as ImageRequest),
    );
  });

  app.post(V.reframeImage.path, async (request, reply) => {
    const body = valid(V.reframeImage.validate(request.body));
    const render = reframeImageRender(ctx, body as unknown as ReframeRequest);
    return create(request, reply, body, body.model as string, render);
  });

  app.post(V.reframeVideo.path, async (request, reply) => {
    const body = valid(V.reframeVideo.validate(request.body));
    const render = reframeVideoRender(ctx, body as unknown as ReframeRequest);
    return create(request, reply, body, body.model as string, render);
  });

  app.post<{ Params: { id: string } }>(V.upscale.path, async (request, reply) => {
    const body = valid(V.upscale.validate(request.body));
    const { rec, output } = videoSource(request);
    return create(request, reply, body, rec.model, upscaleRender(output, body.resolution as string));
  });

  app.post<{ Params: { id: string } }>(V.audio.path, async (request, reply) => {
    const body = valid(V.audio.validate(request.body));
    const { rec, output } = videoSource(request);
    return create(
      request,
      reply,
      body,
      rec.model,
      audioRender(output, (body.prompt as string | undefined) ?? ''),
    );
  });
}
