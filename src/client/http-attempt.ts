/**
 * One HTTP attempt on undici, nothing more: it sends, and returns the answer whatever its status, or
 * throws a ConnectionError / TimeoutError that says whether the request had been written in full
 * (`sent`) — the fact the create retry rules hinge on. Retries live in retrying-call.ts.
 */

import { Dispatcher, request } from 'undici';
import { ConnectionError, errorFromResponse, type GenpipeError, TimeoutError } from './errors.ts';
import { linkedSignal } from './linked-signal.ts';
import { redact } from './redact.ts';
import { abortReason } from './sleep.ts';

/** What one attempt sends. */
export interface AttemptRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Absolute URL. */
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array | AsyncIterable<Uint8Array>;
  signal?: AbortSignal | undefined;
  /** Longest wait for the answer's headers, and between two chunks of its body. */
  timeoutMs: number;
}

/** The answer of one attempt; the body is a stream to be read (or dumped) by the caller. */
export interface AttemptResponse {
  status: number;
  /** Lower-cased names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Dispatcher.ResponseData['body'];
}

type AnyHandler = Record<string, ((...args: unknown[]) => unknown) | undefined>;

/**
 * A dispatcher that forwards to `inner` and reports progress of the request's writing: each body chunk
 * handed to the socket, and the moment undici has written the whole request (headers and body) — it
 * calls a legacy handler's `onRequestSent` then.
 */
class SentTrackingDispatcher extends Dispatcher {
  constructor(
    private readonly inner: Dispatcher,
    private readonly onSent: () => void,
    private readonly onChunk: () => void,
  ) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const h = handler as unknown as AnyHandler;
    const { onSent, onChunk } = this;
    const forward =
      (name: string) =>
      (...args: unknown[]) =>
        h[name]?.apply(handler, args);
    const wrapped: AnyHandler = {
      onConnect: forward('onConnect'),
      onError: forward('onError'),
      onHeaders: forward('onHeaders'),
      onData: forward('onData'),
      onComplete: forward('onComplete'),
      onBodySent: (...args: unknown[]) => {
        onChunk();
        return h.onBodySent?.apply(handler, args);
      },
      onRequestSent: (...args: unknown[]) => {
        onSent();
        return h.onRequestSent?.apply(handler, args);
      },
    };
    if (h.onUpgrade) wrapped.onUpgrade = forward('onUpgrade');
    if (h.onResponseStarted) wrapped.onResponseStarted = forward('onResponseStarted');
    return this.inner.dispatch(options, wrapped as unknown as Dispatcher.DispatchHandler);
  }
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const CONNECTION_CODES = new Set([
  'UND_ERR_SOCKET',
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_CLOSED',
  'UND_ERR_DESTROYED',
  'ETIMEDOUT',
]);

function codeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const cause = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  return typeof cause === 'string' ? cause : undefined;
}

/** "POST /v1/generations": method and path, never the query (a signed URL's query is a credential). */
export function describeCall(method: string, url: string): string {
  try {
    return `${method} ${new URL(url).pathname}`;
  } catch {
    return method;
  }
}

/**
 * Turns what undici threw into a client error, or returns null when it is not a transport failure
 * (an error thrown by our own body source, for one; the caller rethrows it as it is).
 *
 * @param err - the error undici threw
 * @param sent - whether the request had been written in full
 * @param what - `METHOD /path`, for the message
 * @param requestId - the X-Request-Id sent, if any
 */
export function transportError(
  err: unknown,
  sent: boolean,
  what: string,
  requestId: string | null,
): GenpipeError | null {
  const code = codeOf(err);
  if (code === undefined) return null;
  if (CONNECT_CODES.has(code)) {
    return new ConnectionError(`Could not connect for ${what} (${code})`, {
      sent: false,
      requestId,
      cause: err,
    });
  }
  if (TIMEOUT_CODES.has(code)) {
    const phase = code === 'UND_ERR_HEADERS_TIMEOUT' ? 'an answer' : 'the next chunk of the answer';
    return new TimeoutError(`Timed out waiting for ${phase} to ${what}`, { sent, requestId, cause: err });
  }
  if (CONNECTION_CODES.has(code)) {
    const when = sent ? 'after the request was sent' : 'before the request was sent in full';
    return new ConnectionError(`Connection lost ${when} for ${what} (${code})`, {
      sent,
      requestId,
      cause: err,
    });
  }
  return null;
}

/**
 * Sends one request and returns the answer, whatever its status.
 *
 * @param dispatcher - the client's undici dispatcher (Agent)
 * @param req - method, absolute URL, headers, body, signal, timeout
 * @throws ConnectionError / TimeoutError (with `sent`), the signal's reason when aborted, or whatever
 *   the request body's source threw
 */
export async function sendAttempt(dispatcher: Dispatcher, req: AttemptRequest): Promise<AttemptResponse> {
  let sent = false;
  // Our own answer timer (undici's are coarse, about a second): it runs from dispatch, restarts with
  // every body chunk written, so a long upload is not cut, and stops when the answer's headers arrive.
  const timer = new AbortController();
  let timedOut = false;
  const clock = setTimeout(() => {
    timedOut = true;
    timer.abort();
  }, req.timeoutMs);
  // The caller's signal and the timer each abort the request (and its answer's body), linked by
  // listeners released once the body is done (linked-signal.ts: AbortSignal.any would leave a record of
  // every request on a signal that lives as long as the batch, a few hundred bytes per item).
  const linked = linkedSignal(req.signal, timer.signal);
  const tracking = new SentTrackingDispatcher(
    dispatcher,
    () => {
      sent = true;
      clock.refresh();
    },
    () => clock.refresh(),
  );
  const what = describeCall(req.method, req.url);
  const requestId = req.headers['x-request-id'] ?? null;
  try {
    const res = await request(req.url, {
      method: req.method,
      headers: req.headers,
      body: req.body as string | Uint8Array | undefined,
      signal: linked.signal,
      dispatcher: tracking,
      headersTimeout: req.timeoutMs,
      bodyTimeout: req.timeoutMs,
    });
    res.body.once('close', linked.release);
    return { status: res.statusCode, headers: flattenHeaders(res.headers), body: res.body };
  } catch (err) {
    linked.release();
    if (req.signal?.aborted) throw abortReason(req.signal);
    if (timedOut) {
      throw new TimeoutError(`Timed out after ${req.timeoutMs} ms waiting for an answer to ${what}`, {
        sent,
        requestId,
        cause: err,
      });
    }
    throw transportError(err, sent, what, requestId) ?? err;
  } finally {
    clearTimeout(clock);
  }
}

/** undici's header object with lower-cased names and repeated values joined. */
export function flattenHeaders(
  headers: Record<string, string | string[] | undefined>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/** Largest answer body read into memory (JSON resources and error bodies are far smaller). */
export const MAX_JSON_BODY_BYTES = 8 * 1024 * 1024;

/**
 * Reads a small answer body: parsed JSON when it is JSON, else the text; null when empty. Bodies over
 * `maxBytes` are cut off (the rest is discarded).
 */
export async function readSmallBody(res: AttemptResponse, maxBytes = MAX_JSON_BODY_BYTES): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    const buf = chunk as Buffer;
    if (size + buf.length > maxBytes) {
      chunks.push(buf.subarray(0, maxBytes - size));
      size = maxBytes;
      res.body.destroy();
      break;
    }
    chunks.push(buf);
    size += buf.length;
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Reads an error answer and builds its error (see errorFromResponse), with secrets scrubbed from the
 * detail.
 *
 * @param res - an answer with status >= 400
 * @param secrets - the API key and legacy token
 * @param requestId - the X-Request-Id sent, used when the answer has none
 */
export async function errorFromAttempt(
  res: AttemptResponse,
  secrets: readonly string[],
  requestId: string | null,
): Promise<GenpipeError> {
  const body = await readSmallBody(res, 64 * 1024).catch(() => null);
  const clean =
    typeof body === 'string'
      ? redact(body, secrets)
      : typeof body === 'object' && body !== null && typeof (body as { detail?: unknown }).detail === 'string'
        ? { detail: redact((body as { detail: string }).detail, secrets) }
        : body;
  return errorFromResponse(res.status, clean, res.headers, { requestId });
}
