/**
 * The metrics module as a worker would mount it, over real HTTP on loopback: a registry of its own per
 * createMetrics (never prom-client's global one), fed the events of a batch; /healthz following the
 * batch's state; 404 and 405; a close that does not wait for an open keep-alive connection.
 */
import { register as globalRegistry } from 'prom-client';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { errorFromResponse, RateLimitError } from '../../src/client/index.ts';
import { createMetrics, type MetricsServer, startMetricsServer } from '../../src/pipeline/index.ts';
import { rateLimitedKind } from '../../src/pipeline/metrics/index.ts';

const servers: MetricsServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function serve(
  metrics = createMetrics(),
): Promise<{ metrics: ReturnType<typeof createMetrics>; base: string }> {
  const server = await startMetricsServer({ port: 0, registry: metrics.registry, health: metrics.health });
  servers.push(server);
  return { metrics, base: server.url };
}

async function get(url: string, method: 'GET' | 'HEAD' | 'POST' = 'GET') {
  const res = await request(url, { method });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, text };
}

describe('createMetrics and startMetricsServer', () => {
  it('keeps each registry apart from the global one', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.sink({ type: 'item_discovered', at: 1, input: 'x.png', size: 10 });
    expect(await a.registry.getSingleMetricAsString('genpipe_items')).toContain(
      'genpipe_items{state="discovered"} 1',
    );
    expect(await b.registry.getSingleMetricAsString('genpipe_items')).toContain(
      'genpipe_items{state="discovered"} 0',
    );
    expect(await globalRegistry.metrics()).not.toContain('genpipe_');
  });

  it('serves the metrics as Prometheus text, and 404 or 405 for anything else', async () => {
    const { metrics, base } = await serve();
    metrics.sink({ type: 'item_discovered', at: 1, input: 'a.png', size: 10 });
    metrics.sink({
      type: 'item_state',
      at: 2,
      input: 'a.png',
      state: 'submitted',
      stage: 'submit',
      reason: null,
    });
    metrics.sink({
      type: 'item_state',
      at: 3,
      input: 'a.png',
      state: 'reported',
      stage: 'report',
      reason: null,
    });
    metrics.sink({
      type: 'item_state',
      at: 4,
      input: 'b.png',
      state: 'submitted',
      stage: 'plan',
      reason: 'resumed',
    });
    metrics.clientHooks.onTransfer({ direction: 'upload', bytes: 1234 });
    metrics.clientHooks.onTransfer({ direction: 'download', bytes: 99 });
    const m = await get(`${base}/metrics`);
    expect(m.status).toBe(200);
    expect(m.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(m.text).toContain('genpipe_items{state="reported"} 1');
    expect(m.text).toContain('genpipe_items{state="submitted"} 1');
    // The resumed generation (its event from plan) was created by an earlier run.
    expect(m.text).toContain('genpipe_creates_total 1');
    expect(m.text).toContain('genpipe_items_finished_total{outcome="succeeded"} 1');
    expect(m.text).toContain('genpipe_upload_bytes_total 1234');
    expect(m.text).toContain('genpipe_download_bytes_total 99');
    expect(m.text).toContain('# TYPE genpipe_poll_lag_seconds histogram');
    expect(m.text).toContain('process_cpu_user_seconds_total');
    expect((await get(`${base}/metrics`, 'HEAD')).text).toBe('');
    expect((await get(`${base}/`)).status).toBe(404);
    const post = await get(`${base}/metrics`, 'POST');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('answers /healthz by the batch state: 503 while stopping or with a known problem', async () => {
    const { metrics, base } = await serve();
    const health = async () => {
      const r = await get(`${base}/healthz`);
      return { status: r.status, body: JSON.parse(r.text) };
    };
    expect(await health()).toMatchObject({
      status: 200,
      body: { status: 'ok', batch: 'starting', pid: process.pid },
    });
    metrics.sink({ type: 'batch_started', at: 1, input_dir: '/in', out_dir: '/out', emulator: false });
    expect(await health()).toMatchObject({ status: 200, body: { status: 'ok', batch: 'running' } });
    metrics.health.problem('the store cannot be reached');
    expect(await health()).toMatchObject({
      status: 503,
      body: { status: 'unavailable', reason: 'the store cannot be reached' },
    });
    metrics.health.problem(null);
    metrics.sink({ type: 'batch_stopping', at: 2, reason: 'insufficient balance' });
    expect(await health()).toMatchObject({
      status: 503,
      body: { status: 'stopping', batch: 'stopping', reason: 'insufficient balance' },
    });
  });

  it('labels 429s by kind: rate, concurrency, other', () => {
    const kind = (detail: string, headers: Record<string, string> = {}) => {
      const err = errorFromResponse(429, { detail }, headers);
      if (!(err instanceof RateLimitError)) throw new Error('not a RateLimitError');
      return rateLimitedKind(err);
    };
    expect(kind('Rate limit exceeded', { 'x-ratelimit-limit': '60' })).toBe('rate');
    expect(kind('Too many concurrent jobs')).toBe('concurrency');
    expect(kind('Too many requests')).toBe('other');
  });

  it('counts a retry after a 429 by its kind', async () => {
    const { metrics, base } = await serve();
    const error = errorFromResponse(429, { detail: 'Too many concurrent jobs' }, {});
    await metrics.clientHooks.onRetry({
      what: 'POST /v1/generations',
      attempt: 1,
      delayMs: 0,
      error,
      requestId: null,
    });
    const text = (await get(`${base}/metrics`)).text;
    expect(text).toContain('genpipe_rate_limited_total{kind="concurrency"} 1');
    expect(text).toContain('genpipe_rate_limited_total{kind="rate"} 0');
  });

  it('closes at once with a keep-alive connection open, and listens no more', async () => {
    const { base } = await serve();
    const agent = new Agent({ keepAliveTimeout: 60_000 });
    try {
      const res = await request(`${base}/healthz`, { dispatcher: agent });
      await res.body.text();
      await servers.pop()!.close();
      await expect(request(`${base}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
    } finally {
      await agent.close();
    }
  });
});
