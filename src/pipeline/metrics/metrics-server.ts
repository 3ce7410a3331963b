/**
 * The HTTP server of a long-running genpipe process: `GET /metrics` (the registry in Prometheus text
 * format), `GET /healthz` (a small JSON: 200 healthy, 503 stopping or unavailable), 404 for any other
 * path, 405 for another method. It never keeps the process alive (unref'd), and its close ends open
 * connections at once.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { BatchHealth } from './batch-health.ts';

/** Where and what to serve. */
export interface MetricsServerOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** 0: a free port. */
  port: number;
  registry: Registry;
  health: Pick<BatchHealth, 'answer'>;
}

/** A listening metrics server. */
export interface MetricsServer {
  /** `http://<host>:<port>` (the metrics are at `${url}/metrics`). */
  readonly url: string;
  readonly port: number;
  /** Stops listening and ends open connections (more calls: nothing). */
  close(): Promise<void>;
}

/** Why the server cannot listen, in words (the caller names the flag). */
export class MetricsServerError extends Error {
  override name = 'MetricsServerError';
  constructor(
    readonly address: string,
    readonly code: string | undefined,
    why: string,
  ) {
    super(`cannot listen on ${address}: ${why}`);
  }
}

function listenWhy(err: NodeJS.ErrnoException): string {
  switch (err.code) {
    case 'EADDRINUSE':
      return 'the port is in use';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied (ports below 1024 need privileges)';
    case 'EADDRNOTAVAIL':
      return 'no network interface of this machine has that address';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host name does not resolve';
    default:
      return err.message;
  }
}

/** `host:port`, an IPv6 address in brackets. */
function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

async function answer(req: IncomingMessage, res: ServerResponse, opts: MetricsServerOptions): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics' && path !== '/healthz') {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end();
    return;
  }
  if (path === '/healthz') {
    const { code, body } = opts.health.answer();
    res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : `${JSON.stringify(body)}\n`);
    return;
  }
  const text = await opts.registry.metrics();
  res.writeHead(200, { 'content-type': opts.registry.contentType, 'cache-control': 'no-store' });
  res.end(req.method === 'HEAD' ? undefined : text);
}

/**
 * Starts serving `registry` and `health` on `host:port`.
 *
 * @throws MetricsServerError when it cannot listen (port in use, permission, unknown address)
 * @example const server = await startMetricsServer({ port: 0, registry, health }); console.log(`${server.url}/metrics`);
 */
export async function startMetricsServer(opts: MetricsServerOptions): Promise<MetricsServer> {
  const host = opts.host ?? '127.0.0.1';
  const server = createServer((req, res) => {
    answer(req, res, opts).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(`${err.message}\n`);
    });
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(new MetricsServerError(hostPort(host, opts.port), err.code, listenWhy(err)));
    server.once('error', onError);
    server.listen(opts.port, host, () => {
      server.removeListener('error', onError);
      resolve();
    });
  });
  server.unref();
  const port = (server.address() as AddressInfo).port;
  let closed: Promise<void> | null = null;
  return {
    url: `http://${hostPort(host, port)}`,
    port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
