/**
 * The files resource: upload (inline multipart or presigned PUT, streamed from disk, sha256 computed on
 * the way, inline → presigned fallback on 413, optional wait until ready), get, list (every page, as an
 * async iterator), delete and waitUntilReady.
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import {
  type ApiFile,
  type ApiFileList,
  type CreateFileResponse,
  FILE_DETAILS,
  type FilePurpose,
  type FileState,
  validateInlineFileFields,
  validatePresignedFileRequest,
} from '../spec/index.ts';
import { type ApiTransport, lostUploadIfSent } from './api-transport.ts';
import { FileFailedError, LostUploadError, PreflightError, TimeoutError, TooLargeError } from './errors.ts';
import { type AttemptResponse, describeCall, readSmallBody } from './http-attempt.ts';
import { LostUploads, type UploadRun } from './lost-uploads.ts';
import { type PollSettings, pollDelay } from './poll-schedule.ts';
import { type RetryClass, shouldRetry } from './retry-policy.ts';
import { retryingCall } from './retrying-call.ts';
import { sleep } from './sleep.ts';
import { multipartBody, pathSource, streamSource, UploadMeter, type UploadSource } from './upload-body.ts';

/** How an upload sends its bytes. */
export type UploadMode = 'auto' | 'inline' | 'presigned';

/**
 * The way upload() sends `size` bytes in `mode` first: `presigned` when asked, or in auto mode above
 * the inline threshold or for a source that cannot be read twice (a stream of known size: it could not
 * fall back after a 413); `inline` otherwise. An inline upload in auto mode that the service answers
 * 413 still falls back to presigned.
 *
 * @param size - the byte count, null when unknown (a stream without `size`: inline)
 * @param reopenable - the source can be read again (a file on disk)
 * @example uploadModeFor('auto', 30 * 1024 * 1024, CHOICES.inlineUploadMaxBytes) // 'presigned'
 */
export function uploadModeFor(
  mode: UploadMode,
  size: number | null,
  inlineMaxBytes: number,
  reopenable = true,
): 'inline' | 'presigned' {
  if (mode === 'presigned') return 'presigned';
  if (mode === 'auto' && size !== null && (size > inlineMaxBytes || !reopenable)) return 'presigned';
  return 'inline';
}

/** Options of upload(). */
export interface UploadOptions {
  /**
   * auto (default): a file goes inline up to the client's inline threshold and presigned above it, and
   * falls back to presigned when inline gets 413; a stream goes presigned when its size is given, inline
   * otherwise.
   */
  mode?: UploadMode;
  purpose?: FilePurpose;
  /** Original filename (defaults to the path's base name). */
  filename?: string;
  /** MIME type of the bytes; sniffed from the first bytes when omitted. */
  mimeType?: string;
  /** TTL after which the service may delete the file. */
  expiresAt?: string | Date;
  userId?: string;
  /** For a stream source: its exact size in bytes (required for the presigned mode). */
  size?: number;
  signal?: AbortSignal;
  /** Called as bytes are handed to the connection. */
  onProgress?: (progress: {
    bytesSent: number;
    totalBytes: number | null;
    mode: 'inline' | 'presigned';
  }) => void;
  /** Poll the file until ready (or failed: FileFailedError) before returning. */
  waitUntilReady?: boolean;
  /** Limit of that wait (TimeoutError). */
  timeoutMs?: number;
  /** First poll interval of that wait. */
  pollIntervalMs?: number;
}

/** What upload() returns. */
export interface UploadResult {
  /** The file record (ready or failed when waitUntilReady, else as the last call returned it). */
  file: ApiFile;
  /** Hex sha256 of the bytes sent. */
  sha256: string;
  bytes: number;
  mode: 'inline' | 'presigned';
  /** X-Request-Id of the POST /v1/files that created the record. */
  requestId: string;
}

/** Filters and paging of list(). */
export interface ListFilesOptions {
  purpose?: FilePurpose;
  state?: FileState;
  /** Page size, 1..100 (default 25). */
  limit?: number;
  /** Start after this cursor (a next_cursor of an earlier page). */
  cursor?: string;
  signal?: AbortSignal;
}

/** Options of waitUntilReady(). */
export interface FileWaitOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  pollIntervalMs?: number;
}

/** What the files resource needs from its client. */
export interface FilesDeps {
  transport: ApiTransport;
  polling: PollSettings;
  /** Largest file sent inline in auto mode. */
  inlineMaxBytes: number;
}

function iso(value: string | Date | undefined): string | undefined {
  return value instanceof Date ? value.toISOString() : value;
}

/** The files resource of a client. */
export class Files {
  /** The uploads whose answers were lost, and what they left at the service (lost-uploads.ts). */
  private readonly lost = new LostUploads();

  constructor(private readonly deps: FilesDeps) {}

  /**
   * Uploads a file from a path (streamed from disk; never buffered) or a stream.
   *
   * @param input - a file path, or a readable stream (give `size` for the presigned mode)
   * @param options - mode, purpose, filename, mimeType, expiresAt, userId, signal, onProgress, waitUntilReady
   * @returns the file, the sha256 of the bytes sent, the byte count and the mode used
   * @throws PreflightError (the service would answer 400), TooLargeError (inline only, over the cap),
   *   SizeMismatchError (a stream not of its announced size), FileFailedError (waitUntilReady)
   * @example const { file, sha256 } = await client.files.upload('photo.png', { purpose: 'input', waitUntilReady: true });
   */
  async upload(
    input: string | Readable | AsyncIterable<Uint8Array>,
    options: UploadOptions = {},
  ): Promise<UploadResult> {
    const source =
      typeof input === 'string' ? await pathSource(input) : await streamSource(input, options.size ?? null);
    const mode = options.mode ?? 'auto';
    const size = source.size;
    const presigned = uploadModeFor(mode, size, this.deps.inlineMaxBytes, source.reopenable) === 'presigned';
    const run = this.lost.begin({
      filename: options.filename ?? source.filename ?? null,
      size,
      purpose: options.purpose,
    });
    let result: UploadResult;
    try {
      if (presigned) {
        result = await this.uploadPresigned(source, options, run);
      } else {
        try {
          result = await this.uploadInline(source, options, run);
        } catch (err) {
          if (!(err instanceof TooLargeError) || mode !== 'auto' || !source.reopenable) throw err;
          this.deps.transport.settings.hooks.log?.('inline upload answered 413; using the presigned flow');
          result = await this.uploadPresigned(source, options, run);
        }
      }
    } catch (err) {
      if (!options.signal?.aborted) await this.sweepLost(run, options.signal);
      throw err;
    } finally {
      this.lost.end(run);
    }
    await this.sweepLost(run, options.signal);
    this.deps.transport.settings.hooks.onTransfer?.({ direction: 'upload', bytes: result.bytes });
    if (options.waitUntilReady) {
      result.file = await this.waitUntilReady(result.file.id, {
        ...(options.signal ? { signal: options.signal } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
        ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
      });
    }
    return result;
  }

  /** Deletes what `run`'s lost answers stored at the service, when it can be told apart (lost-uploads.ts). */
  private async sweepLost(run: UploadRun, signal: AbortSignal | undefined): Promise<void> {
    const log = this.deps.transport.settings.hooks.log ?? (() => undefined);
    await this.lost.sweep(run, this, log, signal);
  }

  private mimeOf(source: UploadSource, options: UploadOptions): string | null {
    return options.mimeType ?? source.sniffedMime;
  }

  /** A call that sends a body: retried per `retryClass`, but never when the source cannot be re-read. */
  private bodyCall<T>(
    what: string,
    retryClass: RetryClass,
    source: UploadSource,
    requestId: string | null,
    signal: AbortSignal | undefined,
    run: () => Promise<T>,
  ): Promise<T> {
    const { settings } = this.deps.transport;
    return retryingCall({
      what,
      retryClass,
      policy: settings.policy,
      signal,
      requestId,
      hooks: settings.hooks,
      random: settings.random,
      canRetry: (err, attempt) => source.reopenable && shouldRetry(err, attempt, retryClass, settings.policy),
      run,
    });
  }

  private async uploadInline(
    source: UploadSource,
    options: UploadOptions,
    run: UploadRun,
  ): Promise<UploadResult> {
    const { transport } = this.deps;
    const fields: Array<[string, string | undefined]> = [
      ['purpose', options.purpose],
      ['filename', options.filename ?? source.filename ?? undefined],
      ['expires_at', iso(options.expiresAt)],
      ['user_id', options.userId],
      ['mime_type', options.mimeType],
    ];
    const checked = validateInlineFileFields(
      Object.fromEntries(fields.filter((f): f is [string, string] => f[1] !== undefined)),
      Date.now(),
    );
    if (!checked.ok) throw new PreflightError(400, checked.detail);
    const requestId = randomUUID();
    const url = transport.url('agents', '/v1/files');
    const what = describeCall('POST', url);
    let meter: UploadMeter | null = null;
    let created: CreateFileResponse;
    try {
      created = await this.bodyCall(what, 'upload', source, requestId, options.signal, async () => {
        meter?.dispose(); // an earlier attempt's
        const m = new UploadMeter(source.size, (sent, total) =>
          options.onProgress?.({ bytesSent: sent, totalBytes: total, mode: 'inline' }),
        );
        meter = m;
        const body = multipartBody(fields, {
          bytes: m.pass(source.open()),
          size: source.size,
          filename: options.filename ?? source.filename ?? 'upload',
          contentType: this.mimeOf(source, options) ?? 'application/octet-stream',
        });
        const headers = transport.headers('agents', requestId);
        headers['content-type'] = body.contentType;
        if (body.length !== null) headers['content-length'] = String(body.length);
        return this.sendCreateFile({ url, what, requestId, headers, body: body.stream }, run, options.signal);
      });
    } catch (err) {
      (meter as UploadMeter | null)?.dispose();
      throw err;
    }
    const done = meter as unknown as UploadMeter;
    return { file: created.file, sha256: await done.digest(), bytes: done.bytes, mode: 'inline', requestId };
  }

  /**
   * POST /v1/files (either mode), one attempt: a lost answer becomes LostUploadError (noted on `run`),
   * an error answer its class; the file it is answered with is noted as this client's.
   */
  private async sendCreateFile(
    call: {
      url: string;
      what: string;
      requestId: string;
      headers: Record<string, string>;
      body: string | AsyncIterable<Uint8Array>;
    },
    run: UploadRun,
    signal: AbortSignal | undefined,
  ): Promise<CreateFileResponse> {
    const { transport } = this.deps;
    const { url, what, requestId, headers, body } = call;
    const lost = (err: unknown): unknown => {
      const mapped = err instanceof LostUploadError ? err : lostUploadIfSent(err, what, requestId);
      if (mapped instanceof LostUploadError) run.answerLost(requestId);
      return mapped;
    };
    let res: AttemptResponse;
    try {
      res = await transport.attempt({ method: 'POST', url, headers, body, signal });
    } catch (err) {
      throw lost(err);
    }
    if (res.status >= 400) throw await transport.error(res, requestId);
    let created: CreateFileResponse;
    try {
      created = (await readSmallBody(res)) as CreateFileResponse;
    } catch (err) {
      // The answer started but its body was cut: the file may well have been stored.
      throw lost(new LostUploadError(what, requestId, err));
    }
    this.lost.answeredWith(created.id);
    return created;
  }

  /** The JSON POST /v1/files of a presigned upload, retried as an upload (a lost answer included). */
  private async createPresigned(
    request: Record<string, unknown>,
    run: UploadRun,
    signal: AbortSignal | undefined,
  ): Promise<{ created: CreateFileResponse; requestId: string }> {
    const { transport } = this.deps;
    const requestId = randomUUID();
    const url = transport.url('agents', '/v1/files');
    const what = describeCall('POST', url);
    const headers = { ...transport.headers('agents', requestId), 'content-type': 'application/json' };
    const body = JSON.stringify(request);
    const { settings } = transport;
    const created = await retryingCall({
      what,
      retryClass: 'upload',
      policy: settings.policy,
      signal,
      requestId,
      hooks: settings.hooks,
      random: settings.random,
      run: () => this.sendCreateFile({ url, what, requestId, headers, body }, run, signal),
    });
    return { created, requestId };
  }

  private async uploadPresigned(
    source: UploadSource,
    options: UploadOptions,
    run: UploadRun,
  ): Promise<UploadResult> {
    const { transport } = this.deps;
    if (source.size === null) {
      throw new TypeError('A presigned upload needs the exact size: pass `size` with a stream source');
    }
    const mime = this.mimeOf(source, options);
    if (mime === null) throw new PreflightError(400, FILE_DETAILS.mimeTypeRequired);
    const request: Record<string, unknown> = { mime_type: mime, size_bytes: source.size };
    if (options.expiresAt !== undefined) request.expires_at = iso(options.expiresAt);
    const filename = options.filename ?? source.filename;
    if (filename) request.filename = filename;
    if (options.purpose !== undefined) request.purpose = options.purpose;
    if (options.userId !== undefined) request.user_id = options.userId;
    const checked = validatePresignedFileRequest(request, Date.now());
    if (!checked.ok) throw new PreflightError(400, checked.detail);

    const { created, requestId } = await this.createPresigned(request, run, options.signal);
    const upload = created.upload;
    if (!upload) throw new TypeError('The presigned upload answer carries no upload envelope');

    const size = source.size;
    const what = describeCall('PUT', upload.url);
    let meter: UploadMeter | null = null;
    try {
      await this.bodyCall(what, 'idempotent', source, null, options.signal, async () => {
        meter?.dispose(); // an earlier attempt's
        const m = new UploadMeter(size, (sent, total) =>
          options.onProgress?.({ bytesSent: sent, totalBytes: total, mode: 'presigned' }),
        );
        meter = m;
        const headers: Record<string, string> = { ...transport.headers('storage') };
        for (const [k, v] of Object.entries(upload.headers ?? {})) headers[k.toLowerCase()] = v;
        headers['content-length'] = String(size);
        const res = await transport.attempt({
          method: upload.method ?? 'PUT',
          url: upload.url,
          headers,
          body: m.pass(source.open()),
          signal: options.signal,
        });
        if (res.status >= 400) throw await transport.error(res, null);
        await res.body.dump().catch(() => undefined);
      });
    } catch (err) {
      (meter as UploadMeter | null)?.dispose();
      throw err;
    }
    const done = meter as unknown as UploadMeter;
    const sha256 = await done.digest();

    const { body: file } = await transport.json<ApiFile>({
      surface: 'agents',
      method: 'POST',
      path: `/v1/files/${encodeURIComponent(created.id)}/complete`,
      retryClass: 'idempotent',
      signal: options.signal,
    });
    return { file, sha256, bytes: done.bytes, mode: 'presigned', requestId };
  }

  /** Reads a file. @throws NotFoundError */
  async get(id: string, options: { signal?: AbortSignal } = {}): Promise<ApiFile> {
    const { body } = await this.deps.transport.json<ApiFile>({
      surface: 'agents',
      method: 'GET',
      path: `/v1/files/${encodeURIComponent(id)}`,
      signal: options.signal,
    });
    return body;
  }

  /** One page of GET /v1/files. */
  async listPage(options: ListFilesOptions = {}): Promise<ApiFileList> {
    const { body } = await this.deps.transport.json<ApiFileList>({
      surface: 'agents',
      method: 'GET',
      path: '/v1/files',
      query: { limit: options.limit, cursor: options.cursor, purpose: options.purpose, state: options.state },
      signal: options.signal,
    });
    return body;
  }

  /**
   * Every file matching the filters, newest first, fetching page after page as the iteration goes.
   * @example for await (const f of client.files.list({ state: 'ready' })) console.log(f.id);
   */
  async *list(options: ListFilesOptions = {}): AsyncGenerator<ApiFile> {
    let cursor = options.cursor;
    for (;;) {
      const page = await this.listPage({ ...options, ...(cursor !== undefined ? { cursor } : {}) });
      yield* page.data;
      if (!page.has_more || !page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /** Soft-deletes a file (204; deleting again is harmless). @throws NotFoundError */
  async delete(id: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.deps.transport.json({
      surface: 'agents',
      method: 'DELETE',
      path: `/v1/files/${encodeURIComponent(id)}`,
      signal: options.signal,
    });
  }

  /**
   * Polls a file until it is ready.
   * @throws FileFailedError (with failure_reason) when it failed or was deleted; TimeoutError after timeoutMs
   */
  async waitUntilReady(id: string, options: FileWaitOptions = {}): Promise<ApiFile> {
    const settings = { ...this.deps.polling };
    if (options.pollIntervalMs !== undefined) settings.intervalMs = options.pollIntervalMs;
    const deadline =
      options.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + options.timeoutMs;
    for (let n = 0; ; n++) {
      const file = await this.get(id, options.signal ? { signal: options.signal } : {});
      if (file.state === 'ready') return file;
      if (file.state === 'failed' || file.state === 'deleted') {
        throw new FileFailedError(file.id, file.failure_reason ?? `file is ${file.state}`);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new TimeoutError(`File ${id} was not ready within ${options.timeoutMs} ms`);
      await sleep(
        Math.min(left, pollDelay(n, settings, this.deps.transport.settings.random)),
        options.signal,
      );
    }
  }
}
