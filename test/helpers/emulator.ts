/**
 * Starts a real emulator on loopback for a test file and gives small helpers to call it over HTTP.
 * Tests talk to it with undici's fetch, as any outside caller would.
 */
import { createServer } from 'node:net';
import { request as undiciRequest } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import { type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';

export const KEY = 'svc-api-test-key-a';
export const KEY_B = 'svc-api-test-key-b';

/** A config with two active clients (a, b), minimal outputs and the given overrides. */
export function testConfig(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    clients: [
      { id: 'a', state: 'active', rpm: 1000, concurrency: 50, balance: 1_000_000 },
      { id: 'b', state: 'active', rpm: 1000, concurrency: 50, balance: 1_000_000 },
    ],
    keys: [
      { key: KEY, client: 'a' },
      { key: KEY_B, client: 'b' },
    ],
    queue_ms: 20,
    processing_ms: { image: 50, video: 100 },
    // Minimal outputs: rendering real ones costs the two cores; the tests about real media opt out.
    tiny_outputs: true,
    ...overrides,
  };
}

export async function startTestEmulator(overrides: Record<string, unknown> = {}): Promise<RunningEmulator> {
  return startEmulator({ config: testConfig(overrides) });
}

// biome-ignore lint/suspicious/noExplicitAny: tests read response bodies loosely
export interface CallResult<T = any> {
  status: number;
  headers: Record<string, string>;
  body: T;
}

/** One HTTP call; JSON bodies are sent and parsed; never throws on an HTTP status. */
// biome-ignore lint/suspicious/noExplicitAny: tests read response bodies loosely
export async function call<T = any>(
  emu: { url: string },
  method: string,
  path: string,
  opts: {
    key?: string | null;
    json?: unknown;
    headers?: Record<string, string>;
    body?: string | Buffer;
  } = {},
): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  const key = opts.key === undefined ? KEY : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let body: string | Buffer | undefined = opts.body;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  }
  const res = await undiciRequest(`${emu.url}${path}`, { method: method as 'GET', headers, body });
  const text = await res.body.text();
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) flat[k] = Array.isArray(v) ? v.join(', ') : String(v);
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.statusCode, headers: flat, body: parsed as T };
}

/**
 * Polls until `fn` returns a truthy value. The timeout is a safety net for a test that would otherwise
 * hang; waits end on the state they poll for, never on the clock.
 */
export async function until<T>(
  fn: () => Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
  everyMs = 25,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// ---- holds: generations kept queued or processing until the test lets them go -------------------

/** What a hold matches; every field is optional (none: every generation). */
export interface HoldRule {
  state?: 'queued' | 'processing';
  client?: string;
  type?: string;
  /** A regular expression searched for in the prompt. */
  prompt?: string;
  request_id?: string;
}

/** A generation as the admin view lists it. */
export interface AdminRow {
  id: string;
  client_id: string;
  type: string;
  state: string;
  request_id: string;
  failure_code: string | null;
  held: 'queued' | 'processing' | null;
}

/** Adds a hold (POST /_emulator/holds, default state `processing`); returns its id. */
export async function hold(emu: { url: string }, rule: HoldRule = {}): Promise<string> {
  const r = await call(emu, 'POST', '/_emulator/holds', { key: null, json: rule });
  if (r.status !== 201) throw new Error(`POST /_emulator/holds answered ${r.status}: ${r.body?.detail}`);
  return r.body.id as string;
}

/** Removes a hold (or every hold without an id): what it alone held goes on. */
export async function unhold(emu: { url: string }, id?: string): Promise<void> {
  const r = await call(emu, 'DELETE', id ? `/_emulator/holds/${id}` : '/_emulator/holds', { key: null });
  if (r.status !== 204) throw new Error(`DELETE /_emulator/holds answered ${r.status}: ${r.body?.detail}`);
}

/** Lets one held generation go on (POST /_emulator/generations/{id}/release). */
export async function release(emu: { url: string }, generationId: string): Promise<void> {
  const r = await call(emu, 'POST', `/_emulator/generations/${generationId}/release`, { key: null });
  if (r.status !== 200) throw new Error(`release of ${generationId} answered ${r.status}: ${r.body?.detail}`);
}

/** Every generation in the admin view, oldest first (of one client when given). */
export async function adminRows(emu: { url: string }, clientId?: string): Promise<AdminRow[]> {
  const rows = (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data as AdminRow[];
  return clientId === undefined ? rows : rows.filter((r) => r.client_id === clientId);
}

/**
 * Waits until at least `count` generations (of `clientId` when given) are held; returns those held.
 * @param timeoutMs - the safety net (see until)
 */
export async function heldGenerations(
  emu: { url: string },
  count: number,
  clientId?: string,
  timeoutMs?: number,
): Promise<AdminRow[]> {
  return until(async () => {
    const held = (await adminRows(emu, clientId)).filter((r) => r.held !== null);
    return held.length >= count ? held : null;
  }, timeoutMs);
}

/**
 * The `clients` and `keys` of a config: each of `ids` an active client with limits no test reaches,
 * its key `keyOf(id)`.
 */
export function activeClients<C extends string>(
  ids: readonly C[],
  keyOf: (id: C) => string,
): { clients: Array<Record<string, unknown>>; keys: Array<{ key: string; client: string }> } {
  return {
    clients: ids.map((id) => ({ id, state: 'active', rpm: 1000, concurrency: 50, balance: 1_000_000 })),
    keys: ids.map((id) => ({ key: keyOf(id), client: id })),
  };
}

/**
 * One emulator for the whole test file: started before its tests, closed after them. Read `emu()` inside
 * a test (it is not started while the file is being collected).
 */
export function useTestEmulator(overrides: Record<string, unknown> = {}): () => RunningEmulator {
  let emu: RunningEmulator | undefined;
  beforeAll(async () => {
    emu = await startTestEmulator(overrides);
  });
  afterAll(async () => {
    await emu?.close();
  });
  return () => {
    if (!emu) throw new Error('the emulator starts in beforeAll: read it inside a test');
    return emu;
  };
}

/** A loopback port nothing listens on (a server that cannot be reached). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}
