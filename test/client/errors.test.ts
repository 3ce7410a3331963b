/**
 * Every error class of the client, provoked over real HTTP against the emulator where the emulator can
 * give it (and through the factory where it cannot), with its stable code, its fields, and never a
 * secret: the API key and the legacy token are absent from the message, the stack, JSON.stringify,
 * String() and a deep util.inspect of each error, and from every log line.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  createClient,
  errorFromResponse,
  FileFailedError,
  GenerationFailedError,
  type GenpipeClient,
  GenpipeError,
  InsufficientBalanceError,
  LostResponseError,
  NotFoundError,
  PermissionError,
  PreflightError,
  RateLimitError,
  SizeMismatchError,
  TimeoutError,
  TooLargeError,
  UnprocessableError,
  UpstreamError,
} from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { hold } from '../helpers/emulator.ts';
import {
  adminRows,
  clientFor,
  IMAGE,
  KEY,
  setFaults,
  startTestEmulator,
  stats,
  writePng,
} from './client-helpers.ts';

const KEY_POOR = 'svc-api-test-key-poor';
const KEY_SUSPENDED = 'svc-api-test-key-suspended';
const KEY_REVOKED = 'svc-api-test-key-revoked';
const LEGACY_TOKEN = 'svc-api-test-legacy-token-secret';
const SECRETS = [KEY, KEY_POOR, KEY_SUSPENDED, KEY_REVOKED, LEGACY_TOKEN];
const logLines: string[] = [];
const seen = new Set<string>();

/** Asserts that no secret shows anywhere in an error, and records its class. */
function expectClean(err: unknown): void {
  expect(err).toBeInstanceOf(GenpipeError);
  const e = err as GenpipeError;
  seen.add(e.name);
  const texts = [e.message, e.stack ?? '', JSON.stringify(e), String(e), inspect(e, { depth: 8 })];
  for (const text of texts) for (const secret of SECRETS) expect(text).not.toContain(secret);
  expect(e.code).toMatch(/^GENPIPE_[A-Z_]+$/);
  expect(JSON.parse(JSON.stringify(e)).code).toBe(e.code);
}

async function failure<T>(p: Promise<T>): Promise<GenpipeError> {
  try {
    await p;
  } catch (err) {
    expectClean(err);
    return err as GenpipeError;
  }
  throw new Error('expected a rejection');
}

let emu: RunningEmulator;
let client: GenpipeClient;
let dir: string;

function clientWith(apiKey: string, extra: Parameters<typeof clientFor>[1] = {}): GenpipeClient {
  return clientFor(emu, {
    apiKey,
    legacyToken: LEGACY_TOKEN,
    hooks: { log: (m) => logLines.push(m) },
    ...extra,
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-client-errors-'));
  emu = await startTestEmulator({
    clients: [
      { id: 'a', rpm: 1000, concurrency: 50, balance: 1_000_000 },
      { id: 'poor', rpm: 1000, concurrency: 50, balance: 0 },
      { id: 'sus', state: 'suspended' },
    ],
    keys: [
      { key: KEY, client: 'a' },
      { key: KEY_POOR, client: 'poor' },
      { key: KEY_SUSPENDED, client: 'sus' },
      { key: KEY_REVOKED, client: 'a', revoked: true },
      { key: LEGACY_TOKEN, client: 'a' },
    ],
    inline_upload_max_bytes: 1000,
    blocked_words: ['forbidden'],
  });
  client = clientWith(KEY);
});

afterAll(async () => {
  await client.close();
  await emu.close();
  await rm(dir, { recursive: true, force: true });
  // Every log line of every client in this file is free of secrets too.
  expect(logLines.length).toBeGreaterThan(0);
  for (const line of logLines) for (const secret of SECRETS) expect(line).not.toContain(secret);
});

describe('HTTP status errors', () => {
  it('400 BadRequestError carries the detail, status and request id', async () => {
    const e = await failure(client.files.listPage({ limit: 500 }));
    expect(e).toBeInstanceOf(BadRequestError);
    expect(e).toMatchObject({ status: 400, code: 'GENPIPE_BAD_REQUEST', retryable: false });
    expect(e.detail).toBe('limit must be an integer between 1 and 100');
    expect(e.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(e.message).toContain(e.detail as string);
    expect(e.message).toContain('HTTP 400');
    expect(e.message).toContain(e.requestId as string);
  });

  it('401 AuthenticationError for an unknown and a revoked key', async () => {
    const stranger = clientWith('svc-api-test-key-nobody-knows');
    const e = await failure(stranger.generations.get('00000000-0000-4000-8000-000000000000'));
    expect(e).toBeInstanceOf(AuthenticationError);
    expect(e).toMatchObject({ status: 401, detail: 'Invalid API key' });
    expect(e.message).not.toContain('svc-api-test-key-nobody-knows');
    await stranger.close();
    const revoked = clientWith(KEY_REVOKED);
    const r = await failure(revoked.files.listPage());
    expect(r).toMatchObject({ status: 401, detail: 'API key has been revoked' });
    await revoked.close();
  });

  it('403 PermissionError for a suspended client', async () => {
    const sus = clientWith(KEY_SUSPENDED);
    const e = await failure(sus.generations.create(IMAGE));
    expect(e).toBeInstanceOf(PermissionError);
    expect(e).toMatchObject({ status: 403, detail: 'API client is suspended', code: 'GENPIPE_PERMISSION' });
    await sus.close();
  });

  it('402 InsufficientBalanceError is thrown at once, never retried', async () => {
    const poor = clientWith(KEY_POOR);
    const before = (await stats(emu)).responses['402'] ?? 0;
    const e = await failure(poor.generations.create(IMAGE));
    expect(e).toBeInstanceOf(InsufficientBalanceError);
    expect(e).toMatchObject({
      status: 402,
      detail: 'Insufficient balance. Please add funds to continue.',
      retryable: false,
    });
    expect((await stats(emu)).responses['402']).toBe(before + 1);
    await poor.close();
  });

  it('404 NotFoundError for an unknown generation and file', async () => {
    const e = await failure(client.generations.get('00000000-0000-4000-8000-000000000000'));
    expect(e).toBeInstanceOf(NotFoundError);
    expect(e).toMatchObject({ status: 404, detail: 'Generation not found' });
    const f = await failure(client.files.get('00000000-0000-4000-8000-000000000000'));
    expect(f).toMatchObject({ status: 404, detail: 'File not found', code: 'GENPIPE_NOT_FOUND' });
  });

  it('413 TooLargeError from an inline upload over the cap (inline mode: no fallback)', async () => {
    const path = await writePng(join(dir, 'big.png'), 200, 200);
    const e = await failure(client.files.upload(path, { mode: 'inline' }));
    expect(e).toBeInstanceOf(TooLargeError);
    expect(e.status).toBe(413);
    expect(e.detail).toContain('1000 bytes');
  });

  it('422 UnprocessableError for a file_id the caller does not own', async () => {
    const id = '00000000-0000-4000-8000-0000000000aa';
    const e = await failure(
      client.generations.create({ ...IMAGE, type: 'image_edit', source: { file_id: id } }),
    );
    expect(e).toBeInstanceOf(UnprocessableError);
    expect(e).toMatchObject({ status: 422, detail: `source: file '${id}' not found` });
  });

  it('502 and 503 UpstreamError (retries off)', async () => {
    const once = clientWith(KEY, { maxRetries: 0 });
    try {
      await setFaults(emu, { http_502: 1 });
      const e502 = await failure(once.generations.create(IMAGE));
      expect(e502).toBeInstanceOf(UpstreamError);
      expect(e502).toMatchObject({ status: 502, detail: 'Upstream service unavailable', retryable: true });
      await setFaults(emu, { http_503: 1 });
      const e503 = await failure(once.generations.create(IMAGE));
      expect(e503).toMatchObject({
        status: 503,
        detail: 'Image ingestion unavailable',
        code: 'GENPIPE_UPSTREAM',
      });
    } finally {
      await setFaults(emu, {});
      await once.close();
    }
  });

  it('a key echoed back (by the service or the local check) is scrubbed from the detail', async () => {
    const legacy = clientWith(KEY);
    const e = await failure(
      legacy.legacy.modifyVideo({
        media: { url: 'http://127.0.0.1:9/source.mp4' },
        model: 'ray-2',
        mode: 'flex_1',
        callback_url: `http://${LEGACY_TOKEN}.example/hook`,
      }),
    );
    expect(e).toBeInstanceOf(BadRequestError);
    expect(e.detail).toBe("callback_url: host '[redacted].example' is not allowed");
    await legacy.close();
    // The local check quotes field names back too: scrubbed the same way.
    const local = await failure(client.generations.create({ prompt: 'x', [KEY]: 1 } as never));
    expect(local).toBeInstanceOf(PreflightError);
    expect(local.detail).toBe("Unknown field '[redacted]'");
  });
});

describe('rate-limit errors, told apart', () => {
  let rl: RunningEmulator;
  beforeAll(async () => {
    rl = await startTestEmulator({
      clients: [
        { id: 'a', rpm: 1, concurrency: 50 },
        { id: 'b', rpm: 100, concurrency: 1 },
        { id: 'c', rpm: 100, concurrency: 50 },
      ],
      keys: [
        { key: KEY, client: 'a' },
        { key: KEY_POOR, client: 'b' },
        { key: KEY_SUSPENDED, client: 'c' },
      ],
      abuse_ceiling: 1,
    });
    // Jobs stay processing: the second create meets the first still running.
    await hold(rl);
  });
  afterAll(async () => {
    await rl.close();
  });

  it('rpm: Retry-After, limit, kind rpm', async () => {
    const first = clientFor(rl, { maxRetries: 0 });
    await first.generations.create(IMAGE);
    // A second client (own, empty pacer) probing the full window gets the RPM 429.
    const second = clientFor(rl, { maxRetries: 0, hooks: { log: (m) => logLines.push(m) } });
    const e = await failure(second.generations.create(IMAGE));
    expect(e).toBeInstanceOf(RateLimitError);
    const r = e as RateLimitError;
    expect(r).toMatchObject({
      kind: 'rpm',
      limit: 1,
      status: 429,
      detail: 'Rate limit exceeded',
      retryable: true,
    });
    expect(r.retryAfterMs).toBeGreaterThanOrEqual(1000);
    await first.close();
    await second.close();
  });

  it('concurrency: Retry-After 60, kind concurrency', async () => {
    const c = clientFor(rl, { apiKey: KEY_POOR, maxRetries: 0 });
    await c.generations.create(IMAGE);
    const e = (await failure(c.generations.create(IMAGE))) as RateLimitError;
    expect(e).toMatchObject({
      kind: 'concurrency',
      detail: 'Too many concurrent jobs',
      retryAfterMs: 60_000,
      limit: null,
    });
    expect(c.governor.ceiling).toBe(1);
    await c.close();
  });

  it('abuse ceiling on GET: kind abuse', async () => {
    const c = clientFor(rl, { apiKey: KEY_SUSPENDED, maxRetries: 0 });
    await failure(c.generations.get('00000000-0000-4000-8000-000000000000')); // 404, counted
    const e = (await failure(c.generations.get('00000000-0000-4000-8000-000000000000'))) as RateLimitError;
    expect(e).toBeInstanceOf(RateLimitError);
    expect(e).toMatchObject({ kind: 'abuse', detail: 'Too many requests', status: 429 });
    expect(e.retryAfterMs).toBeGreaterThan(0);
    await c.close();
  });
});

describe('transport errors', () => {
  it('ConnectionError when nothing listens (not sent)', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const dead = createClient({ apiKey: KEY, baseUrl: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const e = await failure(dead.files.listPage());
    expect(e).toBeInstanceOf(ConnectionError);
    expect((e as ConnectionError).sent).toBe(false);
    expect(e.code).toBe('GENPIPE_CONNECTION');
    await dead.close();
  });

  it('TimeoutError when the answer is late', async () => {
    const slow = clientWith(KEY, { timeoutMs: 100, maxRetries: 0 });
    try {
      await setFaults(emu, { latency_ms: 400 });
      const e = await failure(slow.files.listPage());
      expect(e).toBeInstanceOf(TimeoutError);
      expect(e.code).toBe('GENPIPE_TIMEOUT');
    } finally {
      await setFaults(emu, {});
      await slow.close();
    }
  });

  it('LostResponseError for a create whose answer is lost, with its request id', async () => {
    try {
      await setFaults(emu, { reset_after: 1 });
      const e = await failure(client.generations.create(IMAGE, { requestId: 'lost-errors-test-1' }));
      expect(e).toBeInstanceOf(LostResponseError);
      expect(e).toMatchObject({ requestId: 'lost-errors-test-1', mayExist: true, retryable: false });
      expect(e.message).toContain('lost-errors-test-1');
    } finally {
      await setFaults(emu, {});
    }
    expect((await adminRows(emu)).filter((r) => r.request_id === 'lost-errors-test-1')).toHaveLength(1);
  });
});

describe('outcome and local errors', () => {
  it('GenerationFailedError: content_moderated is not retryable, generation_failed is', async () => {
    const gen = await client.generations.create({ ...IMAGE, prompt: 'a forbidden door' });
    const e = (await failure(client.generations.wait(gen))) as GenerationFailedError;
    expect(e).toBeInstanceOf(GenerationFailedError);
    expect(e).toMatchObject({ failureCode: 'content_moderated', retryable: false, generationId: gen.id });
    expect(e.failureReason).toBeTruthy();
    expect(e.message).toContain('content_moderated');
    try {
      await setFaults(emu, { failure_codes: { generation_failed: 1 } });
      const g2 = await client.generations.create(IMAGE);
      const e2 = (await failure(client.generations.wait(g2))) as GenerationFailedError;
      expect(e2).toMatchObject({ failureCode: 'generation_failed', retryable: true });
    } finally {
      await setFaults(emu, {});
    }
  });

  it('FileFailedError when ingest rejects the bytes', async () => {
    const path = join(dir, 'not-media.png');
    await writeFile(path, 'this is plain text, not an image');
    const e = (await failure(
      client.files.upload(path, { mimeType: 'image/png', waitUntilReady: true }),
    )) as FileFailedError;
    expect(e).toBeInstanceOf(FileFailedError);
    expect(e.failureReason).toBeTruthy();
    expect(e.code).toBe('GENPIPE_FILE_FAILED');
  });

  it('PreflightError: nothing is sent, the detail is the service’s', async () => {
    const before = await stats(emu);
    const e = await failure(client.generations.create({ model: 'uni-2' as 'uni-1', prompt: 'x' }));
    expect(e).toBeInstanceOf(PreflightError);
    expect(e).toMatchObject({ status: 400, detail: 'Unknown model: uni-2', requestId: null });
    expect(e.message).toBe(
      'Rejected before sending: Unknown model: uni-2. Valid: uni-1, uni-1-max, ray-3.2 (HTTP 400)',
    );
    const after = await stats(emu);
    // Only the stats call itself was answered in between.
    expect(after.responses).toEqual({ ...before.responses, 200: (before.responses['200'] ?? 0) + 1 });
  });

  it('SizeMismatchError when a stream is not the size announced', async () => {
    const stream = Readable.from([Buffer.alloc(300, 1), Buffer.alloc(300, 2)]);
    const e = (await failure(
      client.files.upload(stream, { mode: 'presigned', size: 500, mimeType: 'image/png' }),
    )) as SizeMismatchError;
    expect(e).toBeInstanceOf(SizeMismatchError);
    expect(e.expectedBytes).toBe(500);
  });

  it('ConflictError and plain ApiError come from the factory for statuses the client does not provoke', () => {
    const c = errorFromResponse(409, { detail: 'File has been deleted' }, { 'x-request-id': 'r1' });
    expect(c).toBeInstanceOf(ConflictError);
    expectClean(c);
    const other = errorFromResponse(418, 'short and stout', {});
    expect(other).toBeInstanceOf(ApiError);
    expect(other).toMatchObject({ code: 'GENPIPE_HTTP_ERROR', status: 418, detail: 'short and stout' });
    expectClean(other);
  });

  it("a service's 'Unknown model' names the models in the message, its detail kept verbatim", () => {
    const typo = errorFromResponse(400, { detail: 'Unknown model: uni-9' }, {});
    expect(typo).toMatchObject({ detail: 'Unknown model: uni-9' });
    expect(typo.message).toBe(
      'Bad request: Unknown model: uni-9. Valid: uni-1, uni-1-max, ray-3.2 (HTTP 400)',
    );
    // A model of the interface the service calls unknown is not on the caller's plan.
    const plan = errorFromResponse(400, { detail: 'Unknown model: uni-1-max' }, {});
    expect(plan.message).toBe(
      "Bad request: Unknown model: uni-1-max (a model the service has, but not on this API client's plan) (HTTP 400)",
    );
  });

  it('every class was provoked', () => {
    for (const name of [
      'BadRequestError',
      'AuthenticationError',
      'PermissionError',
      'InsufficientBalanceError',
      'NotFoundError',
      'ConflictError',
      'TooLargeError',
      'UnprocessableError',
      'RateLimitError',
      'UpstreamError',
      'ApiError',
      'ConnectionError',
      'TimeoutError',
      'LostResponseError',
      'GenerationFailedError',
      'FileFailedError',
      'PreflightError',
      'SizeMismatchError',
    ]) {
      expect(seen, name).toContain(name);
    }
  });
});
