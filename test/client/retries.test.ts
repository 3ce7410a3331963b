/**
 * The retry classes against the emulator with faults on: GETs retry connection errors and honour an
 * abuse 429's Retry-After; a create is retried after 502, 503 and a refused connection (nothing was
 * queued), never after a lost response or a late answer (LostResponseError, exactly one job); the 503
 * fallback resends url media as base64. Plus the policy's pure functions.
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createNetServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionError,
  DEFAULT_RETRY_POLICY,
  LostResponseError,
  NotFoundError,
  parseRetryAfter,
  RateLimitError,
  type RetryInfo,
  resubmitDelay,
  retryDelay,
  shouldRetry,
  UpstreamError,
} from '../../src/client/index.ts';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import {
  adminRows,
  clientFor,
  IMAGE,
  pngBase64,
  setFaults,
  startTestEmulator,
  stats,
  testConfig,
} from './client-helpers.ts';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu.close();
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

describe('idempotent calls', () => {
  it('a GET is retried after connection resets and succeeds', async () => {
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, {
      hooks: {
        onRetry: async (info) => {
          retries.push(info);
          if (retries.length === 2) await setFaults(emu, {});
        },
      },
    });
    const resetsBefore = (await stats(emu)).resets;
    await setFaults(emu, { reset_before: 1 });
    try {
      const page = await client.files.listPage();
      expect(page.data).toEqual([]);
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(retries).toHaveLength(2);
    for (const r of retries) {
      expect(r.error).toBeInstanceOf(ConnectionError);
      expect(r.what).toBe('GET /v1/files');
    }
    // The same request id on every attempt.
    expect(retries[0]?.requestId).toBe(retries[1]?.requestId);
    expect((await stats(emu)).resets).toBe(resetsBefore + 2);
  });

  it('a GET answered by the abuse ceiling waits its Retry-After, then succeeds', async () => {
    // A manual clock: the two GETs fall in one window however long they take; the window moves on
    // while the client waits out the Retry-After.
    const clock = new ManualClock();
    const abuse = await startEmulator({ config: testConfig({ abuse_ceiling: 1, rate_window_s: 1 }), clock });
    const retries: RetryInfo[] = [];
    const client = clientFor(abuse, {
      hooks: {
        onRetry: (i) => {
          retries.push(i);
          clock.advance(1000);
        },
      },
    });
    try {
      const gen = await client.generations.create(IMAGE);
      await client.generations.get(gen.id);
      const started = Date.now();
      const again = await client.generations.get(gen.id);
      expect(again.id).toBe(gen.id);
      expect(retries).toHaveLength(1);
      const err = retries[0]?.error as RateLimitError;
      expect(err).toBeInstanceOf(RateLimitError);
      expect(err.kind).toBe('abuse');
      expect(retries[0]?.delayMs).toBe(err.retryAfterMs);
      expect(Date.now() - started).toBeGreaterThanOrEqual((err.retryAfterMs as number) - 5);
      expect((await stats(abuse)).rate_limited.abuse).toBe(1);
    } finally {
      await client.close();
      await abuse.close();
    }
  });
});

describe('creates', () => {
  it('are retried after 502 with backoff, the same request id, and queue exactly one job', async () => {
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, {
      hooks: {
        onRetry: async (info) => {
          retries.push(info);
          if (retries.length === 2) await setFaults(emu, {});
        },
      },
    });
    await setFaults(emu, { http_502: 1 });
    let gen: Awaited<ReturnType<typeof client.generations.create>>;
    try {
      gen = await client.generations.create(IMAGE, { requestId: 'retry-502-test' });
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(retries.map((r) => r.error.status)).toEqual([502, 502]);
    // FAST_RETRY upstream range is 20–40 ms, doubled for the second wait.
    expect(retries[0]?.delayMs).toBeGreaterThanOrEqual(20);
    expect(retries[0]?.delayMs).toBeLessThanOrEqual(40);
    expect(retries[1]?.delayMs).toBeGreaterThanOrEqual(40);
    expect(retries[1]?.delayMs).toBeLessThanOrEqual(80);
    const rows = (await adminRows(emu)).filter((r) => r.request_id === 'retry-502-test');
    expect(rows.map((r) => r.id)).toEqual([gen.id]);
  });

  it("follow a create's own retry budget instead of the client's", async () => {
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, { hooks: { onRetry: (info) => void retries.push(info) } });
    await setFaults(emu, { http_502: 1 });
    try {
      await expect(
        client.generations.create(IMAGE, { requestId: 'retry-budget-test', retry: { maxRetries: 1 } }),
      ).rejects.toBeInstanceOf(UpstreamError);
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(retries.map((r) => r.attempt)).toEqual([1]);
  });

  it('are retried after 503 (nothing queued)', async () => {
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, {
      hooks: {
        onRetry: async (info) => {
          retries.push(info);
          await setFaults(emu, {});
        },
      },
    });
    await setFaults(emu, { http_503: 1 });
    try {
      await client.generations.create(IMAGE, { requestId: 'retry-503-test' });
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(retries).toHaveLength(1);
    expect(retries[0]?.error).toBeInstanceOf(UpstreamError);
    expect(retries[0]?.error.status).toBe(503);
    expect((await adminRows(emu)).filter((r) => r.request_id === 'retry-503-test')).toHaveLength(1);
  });

  it('are retried when the connection is refused before anything is sent', async () => {
    const port = await freePort();
    let late: RunningEmulator | null = null;
    const retries: RetryInfo[] = [];
    const client = clientFor(
      { url: `http://127.0.0.1:${port}` },
      {
        hooks: {
          onRetry: async (info) => {
            retries.push(info);
            if (!late) late = await startEmulator({ port, config: testConfig() });
          },
        },
      },
    );
    try {
      const gen = await client.generations.create(IMAGE, { requestId: 'refused-then-ok' });
      expect(retries).toHaveLength(1);
      expect(retries[0]?.error).toBeInstanceOf(ConnectionError);
      expect(retries[0]?.error).toMatchObject({ sent: false });
      const rows = (await adminRows(late as unknown as RunningEmulator)).filter(
        (r) => r.request_id === 'refused-then-ok',
      );
      expect(rows.map((r) => r.id)).toEqual([gen.id]);
    } finally {
      await client.close();
      await (late as RunningEmulator | null)?.close();
    }
  });

  it('are never resent after a lost response: LostResponseError, exactly one job with that request id', async () => {
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, { hooks: { onRetry: (i) => void retries.push(i) } });
    await setFaults(emu, { reset_after: 1 });
    let error: unknown;
    try {
      await client.generations.create(IMAGE, { requestId: 'lost-response-test' });
    } catch (err) {
      error = err;
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(error).toBeInstanceOf(LostResponseError);
    expect((error as LostResponseError).requestId).toBe('lost-response-test');
    expect(retries).toEqual([]);
    const rows = (await adminRows(emu)).filter((r) => r.request_id === 'lost-response-test');
    expect(rows).toHaveLength(1);
  });

  it('are never resent after an answer that came too late', async () => {
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, { timeoutMs: 100, hooks: { onRetry: (i) => void retries.push(i) } });
    await setFaults(emu, { latency_ms: 300 });
    let error: unknown;
    try {
      await client.generations.create(IMAGE, { requestId: 'late-answer-test' });
    } catch (err) {
      error = err;
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(error).toBeInstanceOf(LostResponseError);
    expect(retries).toEqual([]);
    // Whatever the service did with it, it was sent once: at most one job carries the request id.
    await new Promise((r) => setTimeout(r, 350));
    expect(
      (await adminRows(emu)).filter((x) => x.request_id === 'late-answer-test').length,
    ).toBeLessThanOrEqual(1);
  });

  it('a 404 is not retried', async () => {
    const retries: RetryInfo[] = [];
    const client = clientFor(emu, { hooks: { onRetry: (i) => void retries.push(i) } });
    await expect(client.generations.get('00000000-0000-4000-8000-000000000001')).rejects.toBeInstanceOf(
      NotFoundError,
    );
    expect(retries).toEqual([]);
    await client.close();
  });
});

describe('503 for url media: resend as base64', () => {
  let media: Server;
  let mediaUrl: string;
  let png: Buffer;
  const hits: string[] = [];
  /** Set by a test: what the media server does when hit. */
  let onHit: () => Promise<void> = async () => {};

  beforeAll(async () => {
    png = Buffer.from(await pngBase64(40, 30), 'base64');
    media = createHttpServer((req, res) => {
      hits.push(req.headers['user-agent'] ?? '');
      void onHit().then(() => {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length }).end(png);
      });
    });
    await new Promise<void>((r) => media.listen(0, '127.0.0.1', () => r()));
    mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/source.png`;
  });

  afterAll(async () => {
    await new Promise((r) => media.close(r));
  });

  it('fetches the media itself and resends it inline after a 503', async () => {
    hits.length = 0;
    // The 503 clears as soon as the client fetches the media (so the resend is the one that lands).
    onHit = () => setFaults(emu, {});
    const logs: string[] = [];
    const client = clientFor(emu, { resendUrlMediaAsBase64: true, hooks: { log: (m) => logs.push(m) } });
    await setFaults(emu, { http_503: 1 });
    try {
      const gen = await client.generations.create(
        { type: 'image_edit', prompt: 'make it blue', source: { url: mediaUrl } },
        { requestId: 'base64-resend-test' },
      );
      const done = await client.generations.wait(gen);
      expect(done.state).toBe('completed');
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    // Fetched once, by the client (the emulator got base64 and fetched nothing).
    expect(hits).toHaveLength(1);
    expect(hits[0]).toContain('genpipe-client');
    expect(logs.some((l) => l.includes('resending url media as base64'))).toBe(true);
    expect((await adminRows(emu)).filter((r) => r.request_id === 'base64-resend-test')).toHaveLength(1);
  });

  it('without the option, the same request is retried with its url', async () => {
    hits.length = 0;
    onHit = async () => {};
    const client = clientFor(emu, { hooks: { onRetry: () => setFaults(emu, {}) } });
    await setFaults(emu, { http_503: 1 });
    try {
      await client.generations.create({
        type: 'image_edit',
        prompt: 'make it red',
        source: { url: mediaUrl },
      });
    } finally {
      await setFaults(emu, {});
      await client.close();
    }
    expect(hits).toHaveLength(1);
    expect(hits[0]).not.toContain('genpipe-client'); // the emulator fetched it
  });
});

describe('the policy, as pure functions', () => {
  const e502 = new UpstreamError('x', { status: 502 });
  const lost = new LostResponseError('POST /v1/generations', 'r');
  const refused = new ConnectionError('x', { sent: false });
  const cut = new ConnectionError('x', { sent: true });

  it('shouldRetry follows the two classes and maxRetries', () => {
    const p = DEFAULT_RETRY_POLICY;
    expect(shouldRetry(e502, 1, 'create', p)).toBe(true);
    expect(shouldRetry(e502, p.maxRetries + 1, 'create', p)).toBe(false);
    expect(shouldRetry(refused, 1, 'create', p)).toBe(true);
    expect(shouldRetry(cut, 1, 'create', p)).toBe(false);
    expect(shouldRetry(cut, 1, 'idempotent', p)).toBe(true);
    expect(shouldRetry(lost, 1, 'create', p)).toBe(false);
    expect(shouldRetry(new UpstreamError('x', { status: 503 }), 1, 'create', p)).toBe(true);
  });

  it('a 429 may have a budget of its own, counted on the same attempts', () => {
    const r429 = new RateLimitError('x', { status: 429, detail: 'Too many requests', retryAfterMs: null });
    const p = { ...DEFAULT_RETRY_POLICY, maxRateLimitRetries: 19 };
    expect(shouldRetry(r429, DEFAULT_RETRY_POLICY.maxRetries + 1, 'create', DEFAULT_RETRY_POLICY)).toBe(
      false,
    );
    expect(shouldRetry(r429, 19, 'create', p)).toBe(true);
    expect(shouldRetry(r429, 20, 'create', p)).toBe(false);
    expect(shouldRetry(e502, p.maxRetries + 1, 'create', p)).toBe(false);
  });

  it('resubmitDelay: the resubmit range (2–4 s), doubling with each attempt', () => {
    const p = DEFAULT_RETRY_POLICY;
    expect(resubmitDelay(1, p, () => 0)).toBe(2_000);
    expect(resubmitDelay(1, p, () => 0.999_999)).toBe(4_000);
    expect(resubmitDelay(2, p, () => 0)).toBe(4_000);
  });

  it('retryDelay: 502 waits 5–10 s then doubles; 429 waits Retry-After as seconds or an HTTP date', () => {
    const p = DEFAULT_RETRY_POLICY;
    expect(retryDelay(e502, 1, p, () => 0)).toBe(5_000);
    expect(retryDelay(e502, 1, p, () => 0.999_999)).toBe(10_000);
    expect(retryDelay(e502, 2, p, () => 0)).toBe(10_000);
    const r429 = new RateLimitError('x', {
      status: 429,
      detail: 'Too many concurrent jobs',
      retryAfterMs: 60_000,
    });
    expect(retryDelay(r429, 1, p)).toBe(60_000);
    expect(parseRetryAfter('7')).toBe(7_000);
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:09 GMT', now)).toBe(9_000);
    expect(parseRetryAfter('soon')).toBeNull();
  });
});
