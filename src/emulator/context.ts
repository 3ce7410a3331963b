/** The emulator's shared context, built once per app and handed to every route plugin. */

import type { Clock } from './clock.ts';
import type { EmulatorConfig } from './config.ts';
import type { Holds } from './generations/holds.ts';
import type { RateLimitKind } from './http-error.ts';
import type { Rng } from './rng.ts';
import type { Store } from './store.ts';

export interface Stats {
  /** Responses counted by status code. */
  byStatus: Record<string, number>;
  /** 429 responses counted by kind. */
  rateLimited: Record<RateLimitKind, number>;
  /** Connections reset on purpose by fault injection. */
  resets: number;
}

export interface EmulatorContext {
  config: EmulatorConfig;
  store: Store;
  clock: Clock;
  rng: Rng;
  /** Directory holding stored bytes (uploads and outputs). */
  dataDir: string;
  /** HMAC secret of storage URLs. */
  signingSecret: string;
  stats: Stats;
  /** Rules keeping generations queued or processing until let go (/_emulator/holds). */
  holds: Holds;
  /** Timers and background work started by the emulator; cancelled on close. */
  background: Set<NodeJS.Timeout>;
  /** Promises of background work in flight (ingest, rendering); awaited on close. */
  pending: Set<Promise<unknown>>;
  closed: boolean;
}

declare module 'fastify' {
  interface FastifyInstance {
    emu: EmulatorContext;
  }
  interface FastifyRequest {
    /** The authenticated API client (set by the auth hook on /v1 and legacy routes). */
    client: import('./store.ts').ClientRec | null;
  }
}
