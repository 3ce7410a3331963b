import type { FastifyInstance } from 'fastify';

/** Placeholder: filled in by the route's own change. */
export default async function routes(_app: FastifyInstance): Promise<void> {}
