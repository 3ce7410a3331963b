/** Starts the emulator on a host and port; the counterpart of buildApp, which only builds. */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import type { Clock } from './clock.ts';
import { type EmulatorConfig, resolveConfig } from './config.ts';

export interface StartOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** A resolved config, or a partial raw object checked by resolveConfig. */
  config?: EmulatorConfig | Record<string, unknown>;
  /** Where bytes are stored; a fresh temporary directory (removed on close) when omitted. */
  dataDir?: string;
  clock?: Clock;
  logger?: boolean;
}

export interface RunningEmulator {
  app: FastifyInstance;
  /** Base URL, e.g. http://127.0.0.1:4010 (agents paths start with /v1, legacy with /dream-machine/v1). */
  url: string;
  config: EmulatorConfig;
  /** Where it keeps uploads and outputs (a temporary folder of its own unless `dataDir` was given). */
  dataDir: string;
  /**
   * Stops it; a data folder of its own is then removed (`removing` is told first: with many outputs
   * that takes a while).
   */
  close(opts?: { removing?: (dataDir: string) => void }): Promise<void>;
}

function isResolved(c: unknown): c is EmulatorConfig {
  return (
    typeof c === 'object' &&
    c !== null &&
    Array.isArray((c as EmulatorConfig).clients) &&
    'faults' in c &&
    'costs' in c
  );
}

export async function startEmulator(options: StartOptions = {}): Promise<RunningEmulator> {
  const config = isResolved(options.config) ? options.config : resolveConfig(options.config);
  const ownDir = !options.dataDir;
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'genpipe-emulator-'));
  mkdirSync(dataDir, { recursive: true });
  const app = await buildApp({ config, dataDir, clock: options.clock, logger: options.logger });
  const host = options.host ?? '127.0.0.1';
  await app.listen({ host, port: options.port ?? 0 });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : options.port;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    app,
    url: `http://${urlHost}:${port}`,
    config,
    dataDir,
    async close(opts = {}) {
      await app.close();
      if (!ownDir) return;
      opts.removing?.(dataDir);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
