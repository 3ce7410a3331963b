/**
 * A small receiver for the legacy surface's callbacks: a node:http server on a given host and port
 * that accepts the Generation bodies POSTed to callback_url and hands them out — as an async iterator
 * and/or to a callback. It answers 204 at once (the sender retries non-2xx answers), emits each
 * (generation, state) once even when a delivery is repeated, and, given the signing key, checks the
 * `X-Callback-Signature` (`t=<unix>,v1=<hex HMAC-SHA256(key, "<t>.<body>")>`, see LEGACY_CHOICES) and
 * refuses (401) what does not match.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LEGACY_CHOICES, LEGACY_STATES } from '../spec/index.ts';
import type { LegacyGeneration } from './types.ts';

/** One callback received. */
export interface LegacyCallback {
  generation: LegacyGeneration;
  /** The request path it was POSTed to (e.g. the path part of the callback_url). */
  path: string;
  /** X-Callback-Attempt, when sent. */
  attempt: number | null;
  /** X-Request-Id of the request that created the generation, when sent. */
  requestId: string | null;
  /** True when a signing key was given and the signature matched. */
  verified: boolean;
  receivedAt: Date;
}

/** Options of a receiver. */
export interface CallbackReceiverOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** The key the service signs callbacks with (the API key that created the generation). */
  signingKey?: string;
  /** Oldest signature timestamp accepted, in seconds from now (default 300). */
  toleranceSeconds?: number;
  /** Largest body accepted (default 1 MiB). */
  maxBodyBytes?: number;
  /** Called for every callback emitted. */
  onCallback?: (callback: LegacyCallback) => void;
}

/** A running receiver; iterate it for callbacks, close it when done. */
export interface CallbackReceiver extends AsyncIterable<LegacyCallback> {
  /** Base URL, e.g. http://127.0.0.1:41234 — append any path for callback_url. */
  url: string;
  /** Every callback emitted so far. */
  received: LegacyCallback[];
  /** Stops listening; iterators end. */
  close(): Promise<void>;
}

const CB = LEGACY_CHOICES.callback;

/**
 * Checks a callback signature header against the body.
 * @param header - `t=<unix seconds>,v1=<hex>`
 * @param body - the exact bytes received
 * @param key - the signing key
 * @param nowSeconds - the current Unix time
 * @param toleranceSeconds - how old a timestamp may be
 */
export function verifyCallbackSignature(
  header: string | undefined,
  body: Buffer,
  key: string,
  nowSeconds: number,
  toleranceSeconds: number,
): boolean {
  if (!header) return false;
  const parts = Object.fromEntries(
    header.split(',').map((p) => {
      const i = p.indexOf('=');
      return [p.slice(0, i).trim(), p.slice(i + 1).trim()];
    }),
  );
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = createHmac('sha256', key).update(`${t}.`).update(body).digest();
  const given = Buffer.from(String(parts.v1 ?? ''), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function isGeneration(value: unknown): value is LegacyGeneration {
  const g = value as Partial<LegacyGeneration> | null;
  return (
    typeof g === 'object' &&
    g !== null &&
    typeof g.id === 'string' &&
    typeof g.state === 'string' &&
    (LEGACY_STATES as readonly string[]).includes(g.state)
  );
}

function header(req: IncomingMessage, name: string): string | null {
  const v = req.headers[name.toLowerCase()];
  return typeof v === 'string' ? v : null;
}

/**
 * Starts a callback receiver.
 *
 * @example
 * const receiver = await startCallbackReceiver({ signingKey: apiKey });
 * await client.legacy.modifyVideo({ ..., callback_url: `${receiver.url}/hook` });
 * for await (const cb of receiver) if (cb.generation.state === 'completed') break;
 * await receiver.close();
 */
export async function startCallbackReceiver(
  options: CallbackReceiverOptions = {},
): Promise<CallbackReceiver> {
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  const tolerance = options.toleranceSeconds ?? 300;
  const received: LegacyCallback[] = [];
  const seen = new Set<string>();
  const pending: Array<(r: IteratorResult<LegacyCallback>) => void> = [];
  const buffered: LegacyCallback[] = [];
  let closed = false;

  function emit(cb: LegacyCallback): void {
    received.push(cb);
    options.onCallback?.(cb);
    const next = pending.shift();
    if (next) next({ value: cb, done: false });
    else buffered.push(cb);
  }

  function answer(res: ServerResponse, status: number): void {
    res.writeHead(status, { 'content-length': '0' }).end();
  }

  const server: Server = createServer((req, res) => {
    if (req.method !== 'POST') return answer(res, 405);
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) tooLarge = true;
      else chunks.push(chunk);
    });
    req.on('error', () => undefined);
    req.on('end', () => {
      if (tooLarge) return answer(res, 413);
      const raw = Buffer.concat(chunks);
      let verified = false;
      if (options.signingKey !== undefined) {
        verified = verifyCallbackSignature(
          header(req, CB.signatureHeader) ?? undefined,
          raw,
          options.signingKey,
          Math.floor(Date.now() / 1000),
          tolerance,
        );
        if (!verified) return answer(res, 401);
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return answer(res, 400);
      }
      if (!isGeneration(body)) return answer(res, 400);
      answer(res, 204);
      const key = `${body.id}\u0000${body.state}`;
      if (seen.has(key)) return;
      seen.add(key);
      const attempt = Number(header(req, CB.attemptHeader));
      emit({
        generation: body,
        path: (req.url ?? '/').split('?')[0] ?? '/',
        attempt: Number.isInteger(attempt) && attempt > 0 ? attempt : null,
        requestId: header(req, CB.requestIdHeader),
        verified,
        receivedAt: new Date(),
      });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;

  return {
    url: `http://${host}:${addr.port}`,
    received,
    async close() {
      if (closed) return;
      closed = true;
      for (const resolve of pending.splice(0)) resolve({ value: undefined, done: true });
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    [Symbol.asyncIterator](): AsyncIterator<LegacyCallback> {
      return {
        next: () => {
          const cb = buffered.shift();
          if (cb) return Promise.resolve({ value: cb, done: false });
          if (closed) return Promise.resolve({ value: undefined, done: true });
          return new Promise((resolve) => pending.push(resolve));
        },
        return: () => Promise.resolve({ value: undefined, done: true }),
      };
    },
  };
}
