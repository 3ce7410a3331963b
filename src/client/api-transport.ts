/**
 * The client's HTTP core: base URLs, bearer auth per surface, X-Request-Id on every call, JSON in and
 * out, and the retry loop. Resources (files, generations, legacy) are thin classes over it.
 * Storage URLs (presigned uploads, outputs) are called without any Authorization header: the signed
 * URL is their credential, and a key must never travel to a storage host.
 */
import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import {
  ConnectionError,
  type GenpipeError,
  LostResponseError,
  LostUploadError,
  TimeoutError,
} from './errors.ts';
import {
  type AttemptRequest,
  type AttemptResponse,
  describeCall,
  errorFromAttempt,
  readSmallBody,
  sendAttempt,
} from './http-attempt.ts';
import { requestUrl } from './request-url.ts';
import type { RetryClass, RetryPolicy } from './retry-policy.ts';
import { type ClientHooks, retryingCall } from './retrying-call.ts';

/** Which surface a call goes to; `storage` is a signed URL (no auth header). */
export type Surface = 'agents' | 'legacy' | 'storage';

/** Settings the transport needs, resolved by createClient. */
export interface TransportSettings {
  dispatcher: Dispatcher;
  /** Agents base URL without a trailing slash; paths start with /v1. */
  baseUrl: string;
  /** Legacy base URL without a trailing slash (e.g. http://host/dream-machine/v1), or null. */
  legacyBaseUrl: string | null;
  apiKey: string;
  /** Bearer token of the legacy surface (defaults to the API key). */
  legacyToken: string;
  timeoutMs: number;
  policy: RetryPolicy;
  hooks: ClientHooks;
  userAgent: string;
  random: () => number;
}

/** One JSON call. */
export interface JsonCall {
  surface: Surface;
  method: AttemptRequest['method'];
  /** Path under the surface's base URL (agents: starting with /v1), or an absolute URL for storage. */
  path: string;
  query?: Record<string, string | number | undefined | null>;
  /** Sent as JSON when defined. */
  json?: unknown;
  retryClass?: RetryClass;
  signal?: AbortSignal | undefined;
  /** X-Request-Id to send; a fresh UUID when omitted. */
  requestId?: string;
  /** Time limit of each attempt, for a call the service answers late on purpose (default: the client's). */
  timeoutMs?: number;
}

/** A successful JSON answer. */
export interface JsonAnswer<T> {
  status: number;
  headers: Record<string, string>;
  body: T;
  requestId: string;
}

/** The HTTP core shared by all resources of one client. */
export class ApiTransport {
  constructor(readonly settings: TransportSettings) {}

  /** Secrets to scrub from anything the service echoes back. */
  get secrets(): string[] {
    return [this.settings.apiKey, this.settings.legacyToken];
  }

  /** The absolute URL of a call (without a user and password: request-url.ts). */
  url(surface: Surface, path: string, query?: JsonCall['query']): string {
    let base: string;
    if (surface === 'storage') base = '';
    else if (surface === 'agents') base = this.settings.baseUrl;
    else {
      if (!this.settings.legacyBaseUrl) throw new TypeError('legacyBaseUrl is not configured');
      base = this.settings.legacyBaseUrl;
    }
    return requestUrl(`${base}${path}`, query);
  }

  /** Authorization, User-Agent and X-Request-Id headers of a surface. */
  headers(surface: Surface, requestId?: string): Record<string, string> {
    const h: Record<string, string> = { 'user-agent': this.settings.userAgent };
    if (surface === 'agents') h.authorization = `Bearer ${this.settings.apiKey}`;
    if (surface === 'legacy') h.authorization = `Bearer ${this.settings.legacyToken}`;
    if (requestId !== undefined) h['x-request-id'] = requestId;
    return h;
  }

  /** One attempt (no retry) through the client's dispatcher. */
  attempt(req: Omit<AttemptRequest, 'timeoutMs'> & { timeoutMs?: number }): Promise<AttemptResponse> {
    return sendAttempt(this.settings.dispatcher, { timeoutMs: this.settings.timeoutMs, ...req });
  }

  /** Reads an error answer into its error class, with secrets scrubbed. */
  error(res: AttemptResponse, requestId: string | null): Promise<GenpipeError> {
    return errorFromAttempt(res, this.secrets, requestId);
  }

  /**
   * One JSON call with retries. `create` calls get LostResponseError instead of a retry when the answer
   * is lost after the request was sent.
   *
   * @throws the error class of the answer's status, ConnectionError, TimeoutError, LostResponseError
   */
  async json<T>(call: JsonCall): Promise<JsonAnswer<T>> {
    const requestId = call.requestId ?? randomUUID();
    const url = this.url(call.surface, call.path, call.query);
    const what = describeCall(call.method, url);
    const headers = this.headers(call.surface, requestId);
    let body: string | undefined;
    if (call.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(call.json);
    }
    const retryClass = call.retryClass ?? (call.method === 'POST' ? 'create' : 'idempotent');
    return retryingCall({
      what,
      retryClass,
      policy: this.settings.policy,
      signal: call.signal,
      requestId,
      hooks: this.settings.hooks,
      random: this.settings.random,
      run: async () => {
        let res: AttemptResponse;
        try {
          res = await this.attempt({
            method: call.method,
            url,
            headers,
            body,
            signal: call.signal,
            ...(call.timeoutMs !== undefined ? { timeoutMs: call.timeoutMs } : {}),
          });
        } catch (err) {
          throw retryClass === 'create'
            ? lostIfSent(err, what, requestId)
            : retryClass === 'upload'
              ? lostUploadIfSent(err, what, requestId)
              : err;
        }
        if (res.status >= 400) throw await this.error(res, requestId);
        let parsed: unknown;
        try {
          parsed = await readSmallBody(res);
        } catch (err) {
          // The answer started but its body was cut: for a create, it may well have been carried out.
          throw retryClass === 'create'
            ? new LostResponseError(what, requestId, err)
            : retryClass === 'upload'
              ? new LostUploadError(what, requestId, err)
              : new ConnectionError(`Connection lost while reading the answer to ${what}`, {
                  sent: true,
                  requestId,
                  cause: err,
                });
        }
        return { status: res.status, headers: res.headers, body: parsed as T, requestId };
      },
    });
  }
}

/** A connection error or timeout after an upload was sent in full becomes a LostUploadError. */
export function lostUploadIfSent(err: unknown, what: string, requestId: string): unknown {
  if ((err instanceof ConnectionError || err instanceof TimeoutError) && err.sent) {
    return new LostUploadError(what, requestId, err);
  }
  return err;
}

/** A connection error or timeout after the request was sent in full becomes a LostResponseError. */
export function lostIfSent(err: unknown, what: string, requestId: string): unknown {
  if ((err instanceof ConnectionError || err instanceof TimeoutError) && err.sent) {
    return new LostResponseError(what, requestId, err);
  }
  return err;
}
