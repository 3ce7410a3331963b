/**
 * The closed set of errors the client throws. Every class has a stable `code` and `name` and the same
 * fields (status, detail, requestId, retryable, retryAfterMs, headers), so callers branch on the class
 * or the code, never on message text. Messages carry the detail, the status and the request id — never
 * an API key or token, and never the query string of a signed storage URL.
 *
 * HTTP answers become errors through one factory, {@link errorFromResponse}.
 */
import {
  FAILURE_CODES,
  type FailureCode,
  HTTP_STATUS_RETRYABLE,
  RATE_HEADERS,
  RATE_LIMIT_DETAILS,
  withValidModels,
} from '../spec/index.ts';

/** Fields shared by every client error. */
export interface ErrorFields {
  /** HTTP status of the answer, or the status the service would give (PreflightError); null otherwise. */
  status?: number | null;
  /** The service's `detail` (or the local equivalent), verbatim. */
  detail?: string | null;
  /** X-Request-Id of the request (sent by us or given by the service). */
  requestId?: string | null;
  /** Whether repeating the same call may succeed. */
  retryable?: boolean;
  /** How long the service asked us to wait (Retry-After), in ms. */
  retryAfterMs?: number | null;
  /** Response headers, lower-cased (never request headers, so never Authorization). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/** Base class of every error the client throws. */
export class GenpipeError extends Error {
  override name = 'GenpipeError';
  readonly code: string = 'GENPIPE_ERROR';
  readonly status: number | null;
  readonly detail: string | null;
  readonly requestId: string | null;
  readonly retryable: boolean;
  readonly retryAfterMs: number | null;
  readonly headers: Record<string, string>;

  constructor(summary: string, fields: ErrorFields = {}) {
    super(composeMessage(summary, fields), fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status ?? null;
    this.detail = fields.detail ?? null;
    this.requestId = fields.requestId ?? null;
    this.retryable = fields.retryable ?? false;
    this.retryAfterMs = fields.retryAfterMs ?? null;
    this.headers = fields.headers ?? {};
  }

  /** A plain object for logs and `--json` output (no stack, no cause). */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      status: this.status,
      detail: this.detail,
      requestId: this.requestId,
      retryable: this.retryable,
      retryAfterMs: this.retryAfterMs,
    };
  }
}

function composeMessage(summary: string, f: ErrorFields): string {
  const facts: string[] = [];
  if (f.status !== undefined && f.status !== null) facts.push(`HTTP ${f.status}`);
  if (f.requestId) facts.push(`request id ${f.requestId}`);
  // The message shows the detail as people read it (the models after 'Unknown model'); `detail` stays verbatim.
  // A detail that begins with the summary's words ("Insufficient balance. Please add funds…") says it alone.
  const head = !f.detail
    ? summary
    : f.detail.toLowerCase().startsWith(summary.toLowerCase())
      ? withValidModels(f.detail)
      : `${summary}: ${withValidModels(f.detail)}`;
  return facts.length > 0 ? `${head} (${facts.join(', ')})` : head;
}

// ---- HTTP status errors ---------------------------------------------------------------------

/** An error answer of the service (or of its storage host) that has no more specific class. */
export class ApiError extends GenpipeError {
  override name = 'ApiError';
  override readonly code: string = 'GENPIPE_HTTP_ERROR';
  declare readonly status: number;
}

/** 400: invalid request parameters. */
export class BadRequestError extends ApiError {
  override name = 'BadRequestError';
  override readonly code = 'GENPIPE_BAD_REQUEST';
}

/** 401: missing, invalid, revoked or expired API key. */
export class AuthenticationError extends ApiError {
  override name = 'AuthenticationError';
  override readonly code = 'GENPIPE_AUTHENTICATION';
}

/** 402: insufficient balance; nothing was queued. */
export class InsufficientBalanceError extends ApiError {
  override name = 'InsufficientBalanceError';
  override readonly code = 'GENPIPE_INSUFFICIENT_BALANCE';
}

/** 403: client suspended or deactivated, or (storage host) an expired or tampered signed URL. */
export class PermissionError extends ApiError {
  override name = 'PermissionError';
  override readonly code = 'GENPIPE_PERMISSION';
}

/** 404: unknown id. */
export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
  override readonly code = 'GENPIPE_NOT_FOUND';
}

/** 409: the files state machine refuses the call (completed upload, deleted file). */
export class ConflictError extends ApiError {
  override name = 'ConflictError';
  override readonly code = 'GENPIPE_CONFLICT';
}

/** 413: input media over a size limit. */
export class TooLargeError extends ApiError {
  override name = 'TooLargeError';
  override readonly code = 'GENPIPE_TOO_LARGE';
}

/** 422: parameter combination rejected, or media could not be processed. */
export class UnprocessableError extends ApiError {
  override name = 'UnprocessableError';
  override readonly code = 'GENPIPE_UNPROCESSABLE';
}

/** Which of the three 429s: request rate, concurrent jobs, or the API-wide abuse ceiling. */
export type RateLimitKind = 'rpm' | 'concurrency' | 'abuse';

/** 429, told apart by its detail and headers (interface table "429"). */
export class RateLimitError extends ApiError {
  override name = 'RateLimitError';
  override readonly code = 'GENPIPE_RATE_LIMITED';
  readonly kind: RateLimitKind;
  /** X-RateLimit-Limit, on an RPM 429. */
  readonly limit: number | null;

  constructor(summary: string, fields: ErrorFields) {
    super(summary, fields);
    const h = this.headers;
    const limit = h[RATE_HEADERS.limit.toLowerCase()];
    this.limit = limit !== undefined && /^\d+$/.test(limit) ? Number(limit) : null;
    if (this.detail === RATE_LIMIT_DETAILS.concurrency) this.kind = 'concurrency';
    else if (this.detail === RATE_LIMIT_DETAILS.rpm || this.limit !== null) this.kind = 'rpm';
    else this.kind = 'abuse';
  }
}

/** 502 (upstream unavailable) or 503 (image ingestion unavailable); nothing was queued. */
export class UpstreamError extends ApiError {
  override name = 'UpstreamError';
  override readonly code = 'GENPIPE_UPSTREAM';
}

// ---- transport errors -----------------------------------------------------------------------

/** The connection failed. `sent` says whether the request had been written in full before it did. */
export class ConnectionError extends GenpipeError {
  override name = 'ConnectionError';
  override readonly code: string = 'GENPIPE_CONNECTION';
  readonly sent: boolean;

  constructor(summary: string, fields: ErrorFields & { sent: boolean }) {
    super(summary, { retryable: true, ...fields });
    this.sent = fields.sent;
  }
}

/** No answer (or no next body chunk) within the time allowed; also a wait() past its timeoutMs. */
export class TimeoutError extends GenpipeError {
  override name = 'TimeoutError';
  override readonly code = 'GENPIPE_TIMEOUT';
  readonly sent: boolean;

  constructor(summary: string, fields: ErrorFields & { sent?: boolean } = {}) {
    super(summary, { retryable: true, ...fields });
    this.sent = fields.sent ?? true;
  }
}

/**
 * A create (a paid job) whose request was sent in full but whose answer never arrived. The job may
 * exist: find it by `requestId` (the X-Request-Id it was sent with) before creating it again. The
 * client never resends such a request by itself.
 */
export class LostResponseError extends GenpipeError {
  override name = 'LostResponseError';
  override readonly code = 'GENPIPE_LOST_RESPONSE';
  /** Always true: the service may have queued the job. */
  readonly mayExist = true;
  declare readonly requestId: string;

  constructor(what: string, requestId: string, cause?: unknown) {
    super(
      `The response to ${what} was lost after the request was sent; the job may exist — look it up by its request id before creating it again`,
      { requestId, retryable: false, cause },
    );
  }
}

/**
 * An upload (POST /v1/files) whose request was sent in full but whose answer never arrived. The file
 * may have been stored at the service; an upload costs nothing, so unlike a lost create it is retryable
 * — the client sends it again and deletes what the lost answer left when it can tell it apart (see
 * files.ts).
 */
export class LostUploadError extends GenpipeError {
  override name = 'LostUploadError';
  override readonly code = 'GENPIPE_LOST_UPLOAD';
  /** Always true: the request reached the service. */
  readonly sent = true;
  declare readonly requestId: string;

  constructor(what: string, requestId: string, cause?: unknown) {
    super(
      `The answer to the upload (${what}) was lost after it was sent; the file may have been stored at the service — an upload costs nothing, so it may be sent again`,
      { requestId, retryable: true, cause },
    );
  }
}

/**
 * A create that was cancelled before its request could reach the service: it was still held by the
 * pacer or the concurrency governor, or waiting between retries (whose earlier attempts were answered
 * 429/502/503 or failed to connect, and queued nothing). No job exists for `requestId`. It is a
 * cancellation: its `name` is `AbortError`, and `cause` is the reason of the signal that cut it.
 */
export class CreateNotSentError extends GenpipeError {
  override name = 'AbortError';
  override readonly code = 'GENPIPE_CREATE_NOT_SENT';
  /** Always false: the request never reached the service. */
  readonly sent = false;
  declare readonly requestId: string;

  constructor(what: string, requestId: string, cause: unknown) {
    super(`${what} was cancelled before it was sent; no job was created`, {
      requestId,
      retryable: false,
      cause,
    });
  }
}

// ---- outcome errors ---------------------------------------------------------------------------

/** Minimal view of a failed generation carried by {@link GenerationFailedError}. */
export interface FailedGenerationLike {
  id: string;
  state: string;
  failure_code?: string | null;
  failure_reason?: string | null;
}

/** A generation ended in state failed. `retryable` follows the interface's failure_code table. */
export class GenerationFailedError extends GenpipeError {
  override name = 'GenerationFailedError';
  override readonly code = 'GENPIPE_GENERATION_FAILED';
  readonly generationId: string;
  readonly failureCode: string | null;
  readonly failureReason: string | null;
  readonly generation: FailedGenerationLike;

  constructor(generation: FailedGenerationLike) {
    const failureCode = generation.failure_code ?? null;
    const known = failureCode !== null && failureCode in FAILURE_CODES;
    super(`Generation ${generation.id} failed${failureCode ? ` (${failureCode})` : ''}`, {
      detail: generation.failure_reason ?? null,
      retryable: known ? FAILURE_CODES[failureCode as FailureCode].retryable : false,
    });
    this.generationId = generation.id;
    this.failureCode = failureCode;
    this.failureReason = generation.failure_reason ?? null;
    this.generation = generation;
  }
}

/** A file ended in state failed (ingest or moderation rejected it). */
export class FileFailedError extends GenpipeError {
  override name = 'FileFailedError';
  override readonly code = 'GENPIPE_FILE_FAILED';
  readonly fileId: string;
  readonly failureReason: string | null;

  constructor(fileId: string, failureReason: string | null) {
    super(`File ${fileId} failed`, { detail: failureReason, retryable: false });
    this.fileId = fileId;
    this.failureReason = failureReason;
  }
}

/**
 * The request was checked locally with the src/spec rules and rejected: nothing was sent. `status` and
 * `detail` are exactly what the service would have answered.
 */
export class PreflightError extends GenpipeError {
  override name = 'PreflightError';
  override readonly code = 'GENPIPE_PREFLIGHT';
  declare readonly status: number;
  declare readonly detail: string;

  constructor(status: number, detail: string) {
    super('Rejected before sending', { status, detail, retryable: false });
  }
}

/**
 * A create's quota shared with other processes (ClientOptions.sharedQuota: a store) could not be
 * consulted — its database unreachable, a write refused — before the request was sent: nothing was
 * sent, and nothing may be until the quota answers again (a create it does not count could overfill the
 * key's window). `cause` is the quota's own error. Not the file's failure: the caller stops its work,
 * as when its journal cannot be written.
 */
export class SharedQuotaError extends GenpipeError {
  override name = 'SharedQuotaError';
  override readonly code = 'GENPIPE_SHARED_QUOTA';
  /** Always false: the request never reached the service. */
  readonly sent = false;
  declare readonly requestId: string;

  constructor(requestId: string, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super(`the shared quota could not be consulted (${why}); nothing was sent`, { requestId, cause });
  }
}

/** The bytes of an upload did not match the size it was announced with; the upload was abandoned. */
export class SizeMismatchError extends GenpipeError {
  override name = 'SizeMismatchError';
  override readonly code = 'GENPIPE_SIZE_MISMATCH';
  readonly expectedBytes: number;
  readonly actualBytes: number;

  constructor(expectedBytes: number, actualBytes: number, moreToCome = false) {
    const got = moreToCome ? `more than ${expectedBytes}` : String(actualBytes);
    super(`The upload source has ${got} bytes but ${expectedBytes} were announced`, { retryable: false });
    this.expectedBytes = expectedBytes;
    this.actualBytes = actualBytes;
  }
}

// ---- local files ----------------------------------------------------------------------------

/** The errno codes of a local write that no retry mends: a full disk, a quota, a read-only or forbidden place. */
export const LOCAL_WRITE_CODES: readonly string[] = ['ENOSPC', 'EDQUOT', 'EROFS', 'EACCES', 'EPERM'];

/** What a local write failure says of `path`, by its errno code. */
function localWriteWords(code: string, path: string): string {
  switch (code) {
    case 'ENOSPC':
      return `no space left on ${path}`;
    case 'EDQUOT':
      return `disk quota exceeded on ${path}`;
    case 'EROFS':
      return `${path} is on a read-only file system`;
    default:
      return `no permission to write ${path}`;
  }
}

/**
 * A file could not be written on this machine (a downloaded output): the disk is full, over quota,
 * read-only or forbidden (LOCAL_WRITE_CODES). Not the service's failure, and not retried: the bytes
 * arrived, the disk refused them. `errno` is the system's code, `path` the file or folder written.
 */
export class LocalWriteError extends GenpipeError {
  override name = 'LocalWriteError';
  override readonly code = 'GENPIPE_LOCAL_WRITE';
  readonly errno: string;
  readonly path: string;

  constructor(errno: string, path: string, cause?: unknown) {
    super(localWriteWords(errno, path), { retryable: false, cause });
    this.errno = errno;
    this.path = path;
  }

  /**
   * `err` as a LocalWriteError of `path` (the error's own path when it has one) when its errno code is
   * one of LOCAL_WRITE_CODES; null otherwise.
   *
   * @example LocalWriteError.from(enospc, 'out/a.png/output-0.png.part')?.message // 'no space left on out/a.png/output-0.png.part'
   */
  static from(err: unknown, path?: string): LocalWriteError | null {
    if (err instanceof LocalWriteError) return err;
    const e = err as NodeJS.ErrnoException | null;
    const where = typeof e?.path === 'string' ? e.path : path;
    if (!e || typeof e.code !== 'string' || !LOCAL_WRITE_CODES.includes(e.code) || where === undefined) {
      return null;
    }
    return new LocalWriteError(e.code, where, err);
  }
}

// ---- the factory ----------------------------------------------------------------------------

/**
 * Milliseconds to wait from a Retry-After value: delay-seconds or an HTTP date; null when absent or
 * unreadable.
 *
 * @param value - the header value
 * @param nowMs - the current time, for the HTTP-date form
 * @example parseRetryAfter('3') // 3000; parseRetryAfter('Wed, 21 Oct 2037 07:28:00 GMT', now)
 */
export function parseRetryAfter(value: string | undefined, nowMs = Date.now()): number | null {
  if (value === undefined) return null;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}

/** The `detail` of an error body: `{ detail }` JSON, or a short piece of a non-JSON body. */
export function detailOf(body: unknown): string | null {
  if (
    typeof body === 'object' &&
    body !== null &&
    typeof (body as { detail?: unknown }).detail === 'string'
  ) {
    return (body as { detail: string }).detail;
  }
  if (typeof body === 'string') return textDetail(body);
  return null;
}

/** The longest first line of a non-JSON answer kept as its detail. */
const MAX_TEXT_DETAIL_CHARS = 200;

/**
 * The detail of an answer that is text, not JSON (a proxy's HTML error page, say): its first line of
 * text, markup dropped, at most 200 characters; null when it holds none.
 * @example textDetail('<html><head><title>501 Not Implemented</title></head>…') // '501 Not Implemented'
 */
function textDetail(body: string): string | null {
  const text = body.replace(/<[^>]*>/g, '\n');
  const line = text
    .split(/\r?\n/)
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .find((l) => l !== '');
  if (line === undefined) return null;
  return line.length > MAX_TEXT_DETAIL_CHARS ? `${line.slice(0, MAX_TEXT_DETAIL_CHARS - 1)}…` : line;
}

const SUMMARIES: Readonly<Record<number, string>> = {
  400: 'Bad request',
  401: 'Authentication failed',
  402: 'Insufficient balance',
  403: 'Permission denied',
  404: 'Not found',
  409: 'Conflict',
  413: 'Too large',
  422: 'Unprocessable request',
  429: 'Rate limited',
  502: 'Upstream unavailable',
  503: 'Service unavailable',
};

/**
 * Builds the error for an HTTP error answer, openai-style: the class follows the status, the fields
 * come from the body (`detail`) and the headers (X-Request-Id, Retry-After, X-RateLimit-*).
 *
 * @param status - the HTTP status (>= 400)
 * @param body - the parsed JSON body, the raw text, or null
 * @param headers - response headers, lower-cased names
 * @param context.requestId - the request id we sent, used when the answer carries none
 * @example errorFromResponse(429, { detail: 'Too many concurrent jobs' }, { 'retry-after': '60' })
 * // RateLimitError { kind: 'concurrency', retryAfterMs: 60000 }
 */
export function errorFromResponse(
  status: number,
  body: unknown,
  headers: Record<string, string>,
  context: { requestId?: string | null } = {},
): ApiError {
  const fields: ErrorFields = {
    status,
    detail: detailOf(body),
    requestId: headers['x-request-id'] ?? context.requestId ?? null,
    retryable: HTTP_STATUS_RETRYABLE[status] ?? false,
    retryAfterMs: parseRetryAfter(headers['retry-after']),
    headers,
  };
  const summary = SUMMARIES[status] ?? `HTTP ${status}`;
  switch (status) {
    case 400:
      return new BadRequestError(summary, fields);
    case 401:
      return new AuthenticationError(summary, fields);
    case 402:
      return new InsufficientBalanceError(summary, fields);
    case 403:
      return new PermissionError(summary, fields);
    case 404:
      return new NotFoundError(summary, fields);
    case 409:
      return new ConflictError(summary, fields);
    case 413:
      return new TooLargeError(summary, fields);
    case 422:
      return new UnprocessableError(summary, fields);
    case 429:
      return new RateLimitError(summary, fields);
    case 502:
    case 503:
      return new UpstreamError(summary, fields);
    default:
      return new ApiError(summary, fields);
  }
}
