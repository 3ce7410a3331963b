/**
 * Helpers of the client tests: an emulator on loopback, a client with short retry delays and a low
 * polling floor (the test-only knob), and the emulator's admin view.
 */
import { writeFile } from 'node:fs/promises';
import sharp from 'sharp';
import { type ClientOptions, createClient, type GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, KEY } from '../helpers/emulator.ts';

export { KEY, KEY_B, startTestEmulator, testConfig, until } from '../helpers/emulator.ts';

/** Retry delays shrunk to milliseconds so retry tests run fast. */
export const FAST_RETRY = {
  upstream: { minMs: 20, maxMs: 40 },
  ingestion: { minMs: 20, maxMs: 40 },
  connection: { minMs: 20, maxMs: 40 },
  resubmit: { minMs: 10, maxMs: 20 },
  rateLimitFallbackMs: 50,
};

/** Polling every ~25 ms (test-only floor; the real floor is 1 s). */
export const FAST_POLLING = { intervalMs: 25, maxIntervalMs: 50, floorMs: 10 };

/** A client of the emulator with fast retries and polling; overrides win. */
export function clientFor(emu: { url: string }, overrides: Partial<ClientOptions> = {}): GenpipeClient {
  return createClient({
    apiKey: KEY,
    baseUrl: emu.url,
    legacyBaseUrl: `${emu.url}/dream-machine/v1`,
    retry: FAST_RETRY,
    polling: FAST_POLLING,
    ...overrides,
  });
}

export interface AdminRow {
  id: string;
  client_id: string;
  surface: string;
  type: string;
  state: string;
  request_id: string;
  failure_code: string | null;
}

/** Every generation the emulator holds. */
export async function adminRows(emu: RunningEmulator): Promise<AdminRow[]> {
  return (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data;
}

export interface Stats {
  responses: Record<string, number>;
  rate_limited: { rpm: number; concurrency: number; abuse: number };
  resets: number;
}

/** The emulator's counters. */
export async function stats(emu: RunningEmulator): Promise<Stats> {
  return (await call(emu, 'GET', '/_emulator/stats', { key: null })).body;
}

/** Replaces the emulator's faults ({} switches them all off). */
export async function setFaults(emu: { url: string }, faults: Record<string, unknown>): Promise<void> {
  const r = await call(emu, 'PUT', '/_emulator/faults', { key: null, json: faults });
  if (r.status !== 200) throw new Error(`PUT /_emulator/faults answered ${r.status}`);
}

/** A small PNG written to `path`. */
export async function writePng(path: string, width = 32, height = 24): Promise<string> {
  const png = await sharp({
    create: { width, height, channels: 3, background: { r: 200, g: 60, b: 30 } },
  })
    .png()
    .toBuffer();
  await writeFile(path, png);
  return path;
}

/** A small PNG as base64. */
export async function pngBase64(width = 32, height = 24): Promise<string> {
  const png = await sharp({
    create: { width, height, channels: 3, background: { r: 20, g: 160, b: 90 } },
  })
    .png()
    .toBuffer();
  return png.toString('base64');
}

/** A short image request. */
export const IMAGE = { type: 'image', prompt: 'a green triangle', aspect_ratio: '1:1' } as const;
