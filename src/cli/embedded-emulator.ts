/**
 * The emulator embedded in a CLI process (`genpipe run --emulator`, `genpipe demo`): started in-process
 * on a free loopback port with fast timings, so a batch shows the whole pipeline in seconds. Only the
 * CLI may import the emulator; the pipeline talks to it over HTTP like to the real service.
 */
import { DEFAULT_KEY, type RunningEmulator, resolveConfig, startEmulator } from '../emulator/index.ts';

/**
 * Timings of the embedded emulator: generations queue 100 ms and process at least 400 ms (images) or
 * 800 ms (videos); one active client with the default key, 120 creates per 60 s and 8 concurrent jobs.
 */
export const EMBEDDED_EMULATOR_CONFIG = {
  clients: [{ id: 'default', state: 'active', rpm: 120, concurrency: 32, balance: 1_000_000 }],
  keys: [{ key: DEFAULT_KEY, client: 'default' }],
  queue_ms: 100,
  processing_ms: { image: 400, video: 800 },
  rate_window_s: 60,
} as const;

/** Client settings that suit the embedded emulator (on loopback, so fast polling is harmless). */
export const EMBEDDED_CLIENT_SETTINGS = {
  /** File-readiness polling: every 100 ms (the 1 s floor is for the real service). */
  polling: { intervalMs: 100, maxIntervalMs: 500, floorMs: 50 },
  /** Time between two reads of a job by the shared poll loop, ms. */
  pollIntervalMs: 250,
} as const;

/** A running embedded emulator and the key to call it with. */
export interface EmbeddedEmulator {
  url: string;
  apiKey: string;
  emulator: RunningEmulator;
  close(): Promise<void>;
}

/**
 * Starts the embedded emulator on 127.0.0.1 (a free port; bytes in a temporary directory removed on
 * close).
 *
 * @example const emu = await startEmbeddedEmulator(); … await emu.close();
 */
export async function startEmbeddedEmulator(): Promise<EmbeddedEmulator> {
  const emulator = await startEmulator({
    host: '127.0.0.1',
    port: 0,
    config: resolveConfig(structuredClone(EMBEDDED_EMULATOR_CONFIG)),
  });
  return { url: emulator.url, apiKey: DEFAULT_KEY, emulator, close: () => emulator.close() };
}

/** What each generation type costs on the embedded emulator (its configuration's `costs`). */
export function embeddedEmulatorCosts(): Record<string, number> {
  return { ...resolveConfig(structuredClone(EMBEDDED_EMULATOR_CONFIG)).costs };
}

/** The loud notice printed on stderr when a batch runs against the embedded emulator. */
export function emulatorBanner(url: string): string {
  const line = '='.repeat(78);
  return [
    line,
    `  EMULATOR MODE: genpipe is using its embedded emulator at ${url},`,
    '  NOT the real service. Outputs are synthetic stand-ins; nothing is billed.',
    line,
  ].join('\n');
}
