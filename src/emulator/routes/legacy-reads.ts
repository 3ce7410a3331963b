/**
 * The legacy reads and housekeeping on the paths the public SDKs call (spec LEGACY_PATHS): ping,
 * credits, the concepts list, the list of generations (newest first) and delete. Registered inside the
 * legacy plugin (its auth, X-Request-Id and `{ detail }` errors apply).
 */
import { rm } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import {
  LEGACY_OPERATION_CHOICES as C,
  LEGACY_CONCEPTS,
  LEGACY_OPERATION_DETAILS,
  LEGACY_PATHS as P,
} from '../../spec/index.ts';
import { HttpError } from '../http-error.ts';
import { legacyView } from '../legacy/legacy-view.ts';
import { legacyDir } from '../legacy/lifecycle.ts';
import { callerGeneration } from '../legacy/sources.ts';
import { publicBase } from '../signing.ts';

export function registerLegacyReads(app: FastifyInstance): void {
  const ctx = app.emu;

  app.get(P.ping, async () => C.pingBody);

  app.get(P.credits, async (request) => ({ credit_balance: request.client!.balance }));

  app.get(P.concepts, async () => [...LEGACY_CONCEPTS]);

  app.get<{ Querystring: Record<string, string | undefined> }>(P.list, async (request) => {
    const { limit: rawLimit, offset: rawOffset } = request.query;
    const limit = rawLimit === undefined ? C.listDefaultLimit : Number(rawLimit);
    if (!Number.isInteger(limit) || limit < 1 || limit > C.listMaxLimit) {
      throw new HttpError(400, LEGACY_OPERATION_DETAILS.listLimit(String(rawLimit)));
    }
    const offset = rawOffset === undefined ? 0 : Number(rawOffset);
    if (!Number.isInteger(offset) || offset < 0) {
      throw new HttpError(400, LEGACY_OPERATION_DETAILS.listOffset(String(rawOffset)));
    }
    const own = [...ctx.store.generations.values()]
      .filter((g) => g.surface === 'legacy' && g.clientId === request.client!.id)
      .sort((a, b) => b.seq - a.seq);
    const page = own.slice(offset, offset + limit);
    const base = publicBase(request);
    return {
      generations: page.map((g) => legacyView(ctx, base, g)),
      count: page.length,
      has_more: offset + page.length < own.length,
      limit,
      offset,
    };
  });

  app.delete<{ Params: { id: string } }>(P.delete, async (request, reply) => {
    const rec = callerGeneration(ctx, request.client!.id, request.params.id);
    ctx.store.generations.delete(rec.id);
    await rm(legacyDir(ctx, rec.id), { recursive: true, force: true });
    return reply.status(C.deleteStatus).send();
  });
}
