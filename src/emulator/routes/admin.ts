/**
 * The emulator's admin endpoints (loopback tooling, no auth): GET /_emulator/generations,
 * GET /_emulator/stats, and PUT /_emulator/faults to switch faults on a running emulator.
 * Callers from other than a loopback address get 403, so `serve --host 0.0.0.0` does not expose them.
 */
import { isIP } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DETAILS } from '../../spec/index.ts';
import { ConfigError, resolveFaults } from '../config.ts';
import { adminGenerations, adminStats } from '../generations/admin-view.ts';
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

  app.put('/_emulator/faults', async (request) => {
    try {
      ctx.config.faults = resolveFaults(request.body ?? {});
    } catch (err) {
      if (err instanceof ConfigError) throw new HttpError(400, err.message);
      throw err;
    }
    return ctx.config.faults;
  });
}
