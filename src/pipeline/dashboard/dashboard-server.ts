/**
 * The dashboard's HTTP server, in the genpipe process itself (fastify): `GET /` the page, `GET
 * /api/snapshot` every row and the counts (JSON), `GET /api/events` the changes as Server-Sent Events
 * (one message at most every FLUSH_MS, the rows changed since the last), `GET /api/files/:id` a file's
 * transitions, `GET /thumbs/:id` a file's thumbnail (made as report.html's are), and `POST
 * /api/actions/:action` (retry, retry-all, pause, resume, stop) with the session's token.
 *
 * The token guards the actions always, and every path when the server listens on an address that is
 * not a loopback one. It is taken from `Authorization: Bearer <token>` or, for what a page loads by
 * itself (EventSource, images: no header), from the session's cookie, which `POST /api/session` with
 * the header sets (HttpOnly, SameSite=Strict); the cookie is never taken for an action. The token is
 * never read from a URL: a query string ends up in access logs (a reverse proxy's, a browser's
 * history). Off loopback, `GET /` without it answers 401 with a page that only asks for the token.
 * The server never keeps the process alive (unref'd); its close ends open connections, the event
 * streams too.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { join, resolve, sep } from 'node:path';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { RESULT_FILE } from '../report/item-paths.ts';
import { makeThumbnail, THUMBS_DIR, thumbKindOfName } from '../report/thumbnails.ts';
import type { DashboardModel } from './dashboard-model.ts';
import { dashboardPage, tokenPage } from './page-html.ts';

/** The actions a dashboard can take; each answers in words (what was done) or throws. */
export interface DashboardActions {
  /** Takes a failed file again (the store decides whether it is sent again). */
  retry?(input: string): Promise<string>;
  /** Every failed file again (each through the store's decision). */
  retryAll?(): Promise<string>;
  pause?(): Promise<string>;
  resume?(): Promise<string>;
  stop?(): Promise<string>;
  /** Actions this process cannot take, each with why (the page shows them disabled with it). */
  unavailable?: Partial<Record<'retry' | 'pause', string>>;
}

/** Where and what to serve. */
export interface DashboardServerOptions {
  host: string;
  /** 0: a free port. */
  port: number;
  model: DashboardModel;
  /** The folder the inputs are in (thumbnails of inputs); null: no thumbnails. */
  inputDir: string | null;
  /**
   * Where an input is now when it is no longer at its place in `inputDir` (a watch's `--on-done move`
   * filed it away; the journal's item says where); null or absent: at its place.
   */
  inputPath?: (input: string) => string | null;
  /** The out dir: where the thumbnails are kept (`.thumbs/`, as report.html's). */
  outDir: string;
  actions: DashboardActions;
  /** The page's title line (the input dir or out dir, as shown). */
  title: string;
  /** Called before each snapshot and flush (a watch's held-back files). */
  refresh?: () => void;
  /** The token (default: a new random one). */
  token?: string;
}

/** A listening dashboard. */
export interface DashboardServer {
  /** `http://<host>:<port>/`. */
  readonly url: string;
  readonly port: number;
  /** What the actions (and, off loopback, every request) need. */
  readonly token: string;
  close(): Promise<void>;
}

/** Why the server cannot listen, in words (the caller names the flag). */
export class DashboardServerError extends Error {
  override name = 'DashboardServerError';
}

/** Changes are streamed at most this often. */
export const FLUSH_MS = 200;
const KEEPALIVE_MS = 15_000;
const ACTIONS = ['retry', 'retry-all', 'pause', 'resume', 'stop'] as const;

/** True for an address only this machine reaches. */
export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * The host a page listening on `host` is opened at: for every interface (0.0.0.0, ::), the machine's
 * first address off loopback (else its name), which another machine can reach; `host` otherwise.
 */
export function reachableHost(host: string): string {
  if (host !== '0.0.0.0' && host !== '::') return host;
  const all = Object.values(networkInterfaces()).flat();
  const off = all.find((a) => a !== undefined && !a.internal && a.family === 'IPv4');
  return off?.address ?? hostname();
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function sameToken(given: string | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The session's cookie (see the module comment). */
const COOKIE = 'genpipe_dashboard';

function tokenOf(req: FastifyRequest): string | undefined {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice(7).trim();
  // The cookie for what a page loads by itself, never for an action (no request forged elsewhere acts).
  if (req.method !== 'GET') return undefined;
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === COOKIE) return value.join('=');
  }
  return undefined;
}

/** The page's Content-Security-Policy: nothing but its own script and style (by nonce) and its own origin. */
function pagePolicy(nonce: string): string {
  return (
    `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self'; ` +
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
  );
}

/** The actions this server offers (what `actions` implements). */
function offered(actions: DashboardActions): string[] {
  const has: Record<(typeof ACTIONS)[number], unknown> = {
    retry: actions.retry,
    'retry-all': actions.retryAll,
    pause: actions.pause,
    resume: actions.resume,
    stop: actions.stop,
  };
  return ACTIONS.filter((a) => has[a] !== undefined);
}

/** The event streams open, and the flush that feeds them. */
class EventStreams {
  private readonly clients = new Set<ServerResponse>();
  private readonly timer: NodeJS.Timeout;
  private readonly keepalive: NodeJS.Timeout;

  constructor(private readonly opts: DashboardServerOptions) {
    this.timer = setInterval(() => this.flush(), FLUSH_MS);
    this.timer.unref();
    this.keepalive = setInterval(() => this.send(': keepalive\n\n'), KEEPALIVE_MS);
    this.keepalive.unref();
  }

  /** A page's stream, from the changes after its snapshot's (`after`: the snapshot's seq). */
  open(res: ServerResponse, after: number): void {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.write('retry: 1000\n\n');
    // What changed between the page's snapshot and its stream (no flush sent it to this page).
    const { model } = this.opts;
    const missed = model.changedAfter(after);
    if (missed.length > 0) {
      res.write(`data: ${JSON.stringify({ rows: missed, counts: model.counts(), batch: model.batch })}\n\n`);
    }
    this.clients.add(res);
    res.on('close', () => this.clients.delete(res));
  }

  private flush(): void {
    const { model, refresh } = this.opts;
    refresh?.();
    const rows = model.takeChanges();
    if (rows.length === 0 && this.clients.size === 0) return;
    const body = JSON.stringify({ rows, counts: model.counts(), batch: model.batch });
    if (rows.length > 0 || this.lastBody !== body) this.send(`data: ${body}\n\n`);
    this.lastBody = body;
  }

  private lastBody = '';

  private send(text: string): void {
    for (const c of this.clients) c.write(text);
  }

  /** The last changes sent, then every stream ended. */
  close(): void {
    this.flush();
    clearInterval(this.timer);
    clearInterval(this.keepalive);
    for (const c of this.clients) c.end();
    this.clients.clear();
  }
}

/**
 * Sends a file's thumbnail (made on first ask into the out dir's .thumbs/, as report.html's), from where
 * the input is now (inputPath: moved away by --on-done move), else its place in the input dir; 204 without.
 */
async function sendThumb(opts: DashboardServerOptions, id: number, reply: FastifyReply): Promise<void> {
  const row = opts.model.row(id);
  const kind = row ? thumbKindOfName(row.input) : null;
  // 204, not 404: a file without a thumbnail is no error (the page shows a placeholder).
  if (!row || !kind || opts.inputDir === null) return reply.code(204).send();
  const file = opts.inputPath?.(row.input) ?? join(opts.inputDir, ...row.input.split('/'));
  return sendMade(opts, file, kind, reply);
}

/** What a file's result.json (`<out>/<place>/result.json`) tells the detail pane; null without one. */
async function resultOf(
  opts: DashboardServerOptions,
  id: number,
): Promise<{ request: unknown; outputs: string[]; timings: unknown } | null> {
  const row = opts.model.row(id);
  if (!row?.place || !opts.outDir) return null;
  const file = resolve(opts.outDir, ...row.place.split('/'), RESULT_FILE);
  // The place is the store's or an event's; still, nothing outside the out dir is read.
  if (!file.startsWith(resolve(opts.outDir) + sep)) return null;
  try {
    const r = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    const outputs = Array.isArray(r.outputs)
      ? r.outputs.filter((o): o is string => typeof o === 'string')
      : [];
    return { request: r.request ?? null, outputs, timings: r.timings ?? null };
  } catch {
    return null;
  }
}

/** Sends the preview of a file's `n`th output (made as report.html's thumbnails are), or 204. */
async function sendOutput(
  opts: DashboardServerOptions,
  id: number,
  n: number,
  reply: FastifyReply,
): Promise<void> {
  const result = await resultOf(opts, id);
  const rel = result?.outputs[n];
  const kind = rel ? thumbKindOfName(rel) : null;
  if (!rel || !kind) return reply.code(204).send();
  const source = resolve(opts.outDir, ...rel.split('/'));
  if (!source.startsWith(resolve(opts.outDir) + sep)) return reply.code(204).send();
  return sendMade(opts, source, kind, reply);
}

/** Makes (or reuses) the thumbnail of `source` and sends it; 204 when it cannot be made. */
async function sendMade(
  opts: DashboardServerOptions,
  source: string,
  kind: 'image' | 'video',
  reply: FastifyReply,
): Promise<void> {
  const thumbsDir = join(opts.outDir, THUMBS_DIR);
  const name = await makeThumbnail(source, kind, thumbsDir);
  if (!name) return reply.code(204).send();
  const bytes = await readFile(join(thumbsDir, name));
  const type = name.endsWith('.png') ? 'image/png' : name.endsWith('.webp') ? 'image/webp' : 'image/jpeg';
  return reply.header('content-type', type).header('cache-control', 'private, max-age=60').send(bytes);
}

/** Runs one action by its name; the answer's words, or a 4xx with why. */
async function runAction(
  actions: DashboardActions,
  name: string,
  body: unknown,
  model: DashboardModel,
): Promise<{ code: number; message: string }> {
  const input = (() => {
    const id = Number((body as { id?: unknown } | null)?.id);
    return Number.isInteger(id) ? model.row(id)?.input : undefined;
  })();
  switch (name) {
    case 'retry':
      if (!actions.retry) break;
      if (input === undefined) return { code: 400, message: 'retry needs the id of a file of this batch' };
      if (model.row(Number((body as { id: number }).id))?.status !== 'failed') {
        return { code: 409, message: `${input} has not failed: nothing to retry` };
      }
      return { code: 200, message: await actions.retry(input) };
    case 'retry-all':
      if (actions.retryAll) return { code: 200, message: await actions.retryAll() };
      break;
    case 'pause':
      if (actions.pause) return { code: 200, message: await actions.pause() };
      break;
    case 'resume':
      if (actions.resume) return { code: 200, message: await actions.resume() };
      break;
    case 'stop':
      if (actions.stop) return { code: 200, message: await actions.stop() };
      break;
  }
  return { code: 404, message: `no action '${name}' here` };
}

/**
 * Starts serving the dashboard of `opts.model` on `host:port`.
 *
 * @throws DashboardServerError when it cannot listen (port in use, permission, unknown address)
 * @example const d = await startDashboardServer({ host: '127.0.0.1', port: 0, model, ... }); console.log(d.url);
 */
// long-function: the routes of one small server, read best together
export async function startDashboardServer(opts: DashboardServerOptions): Promise<DashboardServer> {
  const token = opts.token ?? randomBytes(18).toString('base64url');
  const guardAll = !isLoopback(opts.host);
  const app = Fastify({ logger: false, forceCloseConnections: true });
  const streams = new EventStreams(opts);
  const actions = offered(opts.actions);

  app.addHook('onRequest', async (req, reply) => {
    const isAction = req.method === 'POST';
    const guarded = isAction || (guardAll && req.url !== '/favicon.ico');
    if (guarded && !sameToken(tokenOf(req), token)) {
      reply.code(401).header('cache-control', 'no-store');
      if (req.method === 'GET' && req.url.split('?')[0] === '/') {
        // The page that asks for the token, and nothing of the batch.
        const nonce = randomBytes(16).toString('base64');
        reply.header('content-security-policy', pagePolicy(nonce)).type('text/html; charset=utf-8');
        return reply.send(tokenPage(nonce));
      }
      return reply.send({ error: 'the dashboard token is needed' });
    }
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    return undefined;
  });
  app.get('/', async (_req, reply) => {
    const nonce = randomBytes(16).toString('base64');
    reply.header('content-security-policy', pagePolicy(nonce));
    reply.header('cache-control', 'no-store').type('text/html; charset=utf-8');
    return dashboardPage({ nonce, title: opts.title, needsToken: guardAll });
  });
  app.get('/favicon.ico', async (_req, reply) => reply.code(204).send());
  // The token given once (the header, checked above) becomes the session's cookie.
  app.post('/api/session', async (req, reply) => {
    const secure = req.headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
    return reply
      .header('set-cookie', `${COOKIE}=${token}; HttpOnly; SameSite=Strict; Path=/${secure}`)
      .header('cache-control', 'no-store')
      .code(204)
      .send();
  });
  app.get('/api/snapshot', async (_req, reply) => {
    opts.refresh?.();
    // The changes pending stay for the streams: a page opening must not take them from the others.
    reply.header('cache-control', 'no-store');
    return opts.model.snapshot(actions, opts.actions.unavailable ?? {});
  });
  app.get<{ Querystring: { after?: string } }>('/api/events', (req, reply) => {
    const after = Number(req.query.after ?? 0);
    reply.hijack();
    streams.open(reply.raw, Number.isFinite(after) ? after : 0);
  });
  app.get<{ Params: { id: string } }>('/api/files/:id', async (req, reply) => {
    const id = Number(req.params.id);
    const row = opts.model.row(id);
    if (!row) return reply.code(404).send({ error: 'no such file' });
    return { row, history: opts.model.historyOf(id), result: await resultOf(opts, id) };
  });
  app.get<{ Params: { id: string; n: string } }>('/outputs/:id/:n', (req, reply) =>
    sendOutput(opts, Number(req.params.id), Number(req.params.n), reply),
  );
  app.get<{ Params: { id: string } }>('/thumbs/:id', (req, reply) =>
    sendThumb(opts, Number(req.params.id), reply),
  );
  app.post<{ Params: { action: string } }>('/api/actions/:action', async (req, reply) => {
    try {
      const { code, message } = await runAction(
        opts.actions,
        req.params.action,
        req.body ?? null,
        opts.model,
      );
      if (code !== 200) return reply.code(code).send({ error: message });
      // What applies now, after the action (a stop's batch may end before its stream says so).
      opts.model.counts();
      return reply.code(code).send({ message, notNow: opts.model.batch.notNow });
    } catch (err) {
      return reply.code(409).send({ error: (err as Error).message });
    }
  });

  try {
    await app.listen({ host: opts.host, port: opts.port });
  } catch (err) {
    streams.close();
    const e = err as NodeJS.ErrnoException;
    const why =
      e.code === 'EADDRINUSE'
        ? 'the port is in use'
        : e.code === 'EACCES'
          ? 'permission denied (ports below 1024 need privileges)'
          : e.code === 'EADDRNOTAVAIL'
            ? 'no network interface of this machine has that address'
            : e.message;
    throw new DashboardServerError(`cannot listen on ${hostPort(opts.host, opts.port)}: ${why}`);
  }
  app.server.unref();
  const port = (app.server.address() as { port: number }).port;
  let closed: Promise<void> | null = null;
  return {
    url: `http://${hostPort(reachableHost(opts.host), port)}/`,
    port,
    token,
    close() {
      closed ??= (async () => {
        streams.close();
        await app.close();
      })();
      return closed;
    },
  };
}
