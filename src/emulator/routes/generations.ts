/**
 * The agents surface's generations resource: POST /v1/generations and GET /v1/generations/{id}.
 * Every route authenticates first (401/403 come before anything else and carry no rate-limit headers).
 */
import type { FastifyInstance } from 'fastify';
import { DETAILS } from '../../spec/index.ts';
import { authHook } from '../auth.ts';
import { signalClosing } from '../generations/closing-signal.ts';
import { createGeneration } from '../generations/create.ts';
import { generationView } from '../generations/generation-view.ts';
import { HttpError } from '../http-error.ts';
import { publicBase } from '../signing.ts';
import type { ClientRec } from '../store.ts';

function clientOf(request: { client: ClientRec | null }): ClientRec {
  if (!request.client) throw new Error('auth hook did not run');
  return request.client;
}

/** Registers the generations routes (an encapsulated plugin: its auth hook covers only them). */
export default async function routes(app: FastifyInstance): Promise<void> {
  const ctx = app.emu;
  app.addHook('onRequest', authHook(ctx));
  app.addHook('onClose', async () => signalClosing(ctx));

  app.post('/v1/generations', async (request, reply) => {
    const created = await createGeneration(ctx, clientOf(request), request, publicBase(request));
    return reply.status(201).headers(created.headers).send(created.body);
  });

  app.get<{ Params: { id: string } }>('/v1/generations/:id', async (request) => {
    const client = clientOf(request); // counted against the abuse ceiling already (app.ts)
    const rec = ctx.store.generations.get(request.params.id);
    // Unknown, another client's and legacy generations all read the same.
    if (rec?.surface !== 'agents' || rec.clientId !== client.id) {
      throw new HttpError(404, DETAILS.generationNotFound);
    }
    rec.reads = (rec.reads ?? 0) + 1;
    return generationView(ctx, rec, publicBase(request));
  });
}
