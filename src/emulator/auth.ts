/**
 * Bearer-key authentication for both surfaces: the four 401 details, the 403 client states and the
 * `svc-api-` prefix rule.
 */
import type { FastifyRequest } from 'fastify';
import { API_KEY_PREFIX } from '../spec/index.ts';
import type { EmulatorContext } from './context.ts';
import { HttpError } from './http-error.ts';
import type { ClientRec } from './store.ts';

export const AUTH_DETAILS = {
  missing: 'Missing or invalid API key',
  invalid: 'Invalid API key',
  revoked: 'API key has been revoked',
  expired: 'API key has expired',
  suspended: 'API client is suspended',
  deactivated: 'API client is deactivated',
} as const;

/** Resolves the calling client from the Authorization header or throws the interface's 401/403. */
export function authenticate(ctx: EmulatorContext, request: FastifyRequest): ClientRec {
  const header = request.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer +(\S+)\s*$/.exec(header) : null;
  const token = match?.[1] ?? '';
  if (!token.startsWith(API_KEY_PREFIX)) throw new HttpError(401, AUTH_DETAILS.missing);
  const key = ctx.store.keys.get(token);
  if (!key) throw new HttpError(401, AUTH_DETAILS.invalid);
  if (key.revoked) throw new HttpError(401, AUTH_DETAILS.revoked);
  if (key.expires_at && Date.parse(key.expires_at) <= ctx.clock.now())
    throw new HttpError(401, AUTH_DETAILS.expired);
  const client = ctx.store.clients.get(key.client);
  if (!client) throw new HttpError(401, AUTH_DETAILS.invalid);
  if (client.state === 'suspended') throw new HttpError(403, AUTH_DETAILS.suspended);
  if (client.state === 'deactivated') throw new HttpError(403, AUTH_DETAILS.deactivated);
  return client;
}

/** A fastify onRequest hook that sets `request.client`. */
export function authHook(ctx: EmulatorContext) {
  return async (request: FastifyRequest): Promise<void> => {
    request.client = authenticate(ctx, request);
  };
}
