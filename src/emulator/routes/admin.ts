/**
 * The emulator's admin endpoints (loopback tooling, no auth): GET /_emulator/generations,
 * GET /_emulator/stats, GET /_emulator/costs (the configured cost of each generation type),
 * GET /_emulator/balance (each client's balance, and the credits it was charged by generation type),
 * PUT /_emulator/faults to switch faults on a running emulator, and
 * /_emulator/holds (plus POST /_emulator/generations/{id}/release) to keep generations queued or
 * processing until let go (see generations/holds.ts).
 * Callers from other than a loopback address get 403, so `serve --host 0.0.0.0` does not expose them.
 */
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DETAILS, generationNotHeldDetail } from '../../spec/index.ts';
import { ConfigError, resolveFaults } from '../config.ts';
import { adminBalance, adminGeneration, adminGenerations, adminStats } from '../generations/admin-view.ts';
import { parseHold } from '../generations/holds.ts';
import { HttpError } from '../http-error.ts';

/** Whether the peer address is a loopback address (127.0.0.0/8, ::1, or IPv4-mapped 127.x). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase().replace(/^::ffff:/, '');
  if (isIP(a) === 4) return a.startsWith('127.');
  return a === '::1';
}

function loopbackOnly(request: FastifyRequest): void {
  if (!isLoopback(request.socket.remoteAddress)) throw new HttpError(403, DETAILS.adminLoopbackOnly);
}

/** Registers the admin routes. */
export default async function routes(app: FastifyInstance): Promise<void> {
  const ctx = app.emu;
  app.addHook('onRequest', async (request) => loopbackOnly(request));

  app.get('/_emulator/generations', async () => ({ data: adminGenerations(ctx) }));

  app.get('/_emulator/stats', async () => adminStats(ctx));

  app.get('/_emulator/faults', async () => ctx.config.faults);

  // What each generation type costs, as configured (`costs`): what a dry run prices its generations with.
  app.get('/_emulator/costs', async () => ctx.config.costs);

  // Each client's balance, and what it was charged by generation type: to compare with a dry run's estimate.
  app.get('/_emulator/balance', async () => ({ data: adminBalance(ctx) }));

  app.put('/_emulator/faults', async (request) => {
    try {
      ctx.config.faults = resolveFaults(request.body ?? {});
    } catch (err) {
      if (err instanceof ConfigError) throw new HttpError(400, err.message);
      throw err;
    }
    return ctx.config.faults;
  });

  app.get('/_emulator/holds', async () => ({ data: ctx.holds.list() }));

  app.post('/_emulator/holds', async (request, reply) => {
    try {
      const rule = parseHold(request.body ?? {}, [...ctx.store.clients.keys()]);
      return reply.status(201).send(ctx.holds.add(rule));
    } catch (err) {
      if (err instanceof ConfigError) throw new HttpError(400, err.message);
      throw err;
    }
  });

  app.delete('/_emulator/holds', async (_request, reply) => {
    ctx.holds.clear();
    return reply.status(204).send();
  });

  app.delete<{ Params: { id: string } }>('/_emulator/holds/:id', async (request, reply) => {
    if (!ctx.holds.remove(request.params.id)) throw new HttpError(404, DETAILS.holdNotFound);
    return reply.status(204).send();
  });

  app.post<{ Params: { id: string } }>('/_emulator/generations/:id/release', async (request) => {
    const rec = ctx.store.generations.get(request.params.id);
    if (!rec) throw new HttpError(404, DETAILS.generationNotFound);
    if (!ctx.holds.release(rec.id)) throw new HttpError(409, generationNotHeldDetail(rec.id));
    return adminGeneration(ctx, rec);
  });
}
