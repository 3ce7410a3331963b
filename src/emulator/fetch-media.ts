/**
 * Fetching url media references for the emulator: only from allowed hosts, streamed to a file,
 * never buffered, with a byte cap. Used by generation media references and the legacy modify source.
 * The emulator's own output URLs are read from its store, whatever host they name.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { CHOICES } from '../spec/index.ts';
import type { EmulatorContext } from './context.ts';
import { type OwnOutput, ownOutputOf } from './files/own-output.ts';

export type FetchFailureKind = 'not_allowed' | 'unreachable' | 'http' | 'too_large' | 'not_media';

export class FetchMediaError extends Error {
  override name = 'FetchMediaError';
  constructor(
    readonly kind: FetchFailureKind,
    message: string,
    /** HTTP status of the remote answer, for kind 'http'. */
    readonly httpStatus?: number,
    /** Content-Type the remote gave, for kind 'not_media'. */
    readonly contentType?: string,
  ) {
    super(message);
  }
}

export interface FetchedMedia {
  path: string;
  bytes: number;
  /** Content-Type the remote gave (may be absent). */
  contentType: string | null;
}

/** Host name of a URL as compared with fetch_allow_hosts: lower case, IPv6 without brackets. */
function hostOf(url: URL): string {
  return url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');
}

/** Parses a URL and checks its scheme; throws not_allowed. */
function httpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchMediaError('not_allowed', 'not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchMediaError('not_allowed', `scheme ${url.protocol} is not fetched`);
  }
  return url;
}

/** Parses and checks a URL against the scheme and host allow-list; throws not_allowed. */
function allowedUrl(ctx: EmulatorContext, raw: string | URL): URL {
  const url = typeof raw === 'string' ? httpUrl(raw) : raw;
  const allow = new Set(ctx.config.fetch_allow_hosts.map((h) => h.toLowerCase().replace(/^\[(.*)\]$/, '$1')));
  if (!allow.has(hostOf(url))) {
    throw new FetchMediaError('not_allowed', `host ${hostOf(url)} is not in fetch_allow_hosts`);
  }
  return url;
}

/** Whether a Content-Type fits what the caller accepts; absent and octet-stream are left to sniffing. */
function contentTypeFits(contentType: string | null, accept: 'image' | 'video' | 'media'): boolean {
  if (contentType === null) return true;
  const mime = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  if (mime === '' || mime === 'application/octet-stream') return true;
  if (accept === 'image') return mime.startsWith('image/');
  if (accept === 'video') return mime.startsWith('video/');
  return mime.startsWith('image/') || mime.startsWith('video/');
}

/** A pass-through that counts bytes and fails once more than `max` went by. */
function byteCap(max: number, counter: { bytes: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      counter.bytes += chunk.length;
      if (counter.bytes > max) done(new FetchMediaError('too_large', `more than ${max} bytes`));
      else done(null, chunk);
    },
  });
}

export interface FetchOptions {
  maxBytes: number;
  accept: 'image' | 'video' | 'media';
  signal?: AbortSignal;
}

/**
 * Copies one of the emulator's own outputs to `destPath` under the same rules as a fetch: an expired
 * URL or a missing output fails as the storage host's 403 / 404 would, then the MIME type and the byte
 * cap are checked.
 */
async function copyOwnOutput(own: OwnOutput, destPath: string, opts: FetchOptions): Promise<FetchedMedia> {
  const size =
    own.status === 200
      ? await stat(own.output.blobPath).then(
          (s) => s.size,
          () => null,
        )
      : null;
  if (own.status !== 200 || size === null) {
    const status = own.status === 200 ? 404 : own.status;
    throw new FetchMediaError('http', `HTTP ${status}`, status);
  }
  const { mime, blobPath } = own.output;
  if (!contentTypeFits(mime, opts.accept)) {
    throw new FetchMediaError('not_media', `content-type ${mime} is not accepted`, undefined, mime);
  }
  if (size > opts.maxBytes)
    throw new FetchMediaError('too_large', `${size} bytes is over ${opts.maxBytes} bytes`);
  try {
    await pipeline(createReadStream(blobPath), createWriteStream(destPath), { signal: opts.signal });
  } catch (err) {
    await rm(destPath, { force: true });
    throw new FetchMediaError('unreachable', `copy failed: ${(err as Error).message}`);
  }
  return { path: destPath, bytes: size, contentType: mime };
}

/**
 * Streams `url` to `destPath`. Rejects with FetchMediaError: host not in config.fetch_allow_hosts,
 * connection failure, non-2xx status, more than `maxBytes`, or a Content-Type that is neither
 * image/* nor video/* (per `accept`). Redirects are followed (up to CHOICES.fetchMaxRedirects), each
 * hop checked against the allow-list again; a partial file is removed on failure. An output URL the
 * emulator signed is read from its store instead, whatever its host (see ownOutputOf).
 */
export async function fetchToFile(
  ctx: EmulatorContext,
  url: string,
  destPath: string,
  opts: FetchOptions,
): Promise<FetchedMedia> {
  const first = httpUrl(url);
  const own = ownOutputOf(ctx, first);
  if (own) return copyOwnOutput(own, destPath, opts);
  let target = allowedUrl(ctx, first);
  for (let hop = 0; ; hop += 1) {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(target, {
        method: 'GET',
        signal: opts.signal,
        headersTimeout: CHOICES.fetchTimeoutMs,
        bodyTimeout: CHOICES.fetchTimeoutMs,
      });
    } catch (err) {
      throw new FetchMediaError('unreachable', `cannot connect: ${(err as Error).message}`);
    }
    const status = res.statusCode;
    const location = res.headers.location;
    if (status >= 300 && status < 400 && typeof location === 'string') {
      await res.body.dump().catch(() => undefined);
      if (hop >= CHOICES.fetchMaxRedirects) throw new FetchMediaError('http', 'too many redirects', status);
      target = allowedUrl(ctx, new URL(location, target).toString());
      continue;
    }
    if (status < 200 || status >= 300) {
      await res.body.dump().catch(() => undefined);
      throw new FetchMediaError('http', `HTTP ${status}`, status);
    }
    const ct = res.headers['content-type'];
    const contentType = typeof ct === 'string' ? ct : null;
    if (!contentTypeFits(contentType, opts.accept)) {
      await res.body.dump().catch(() => undefined);
      throw new FetchMediaError(
        'not_media',
        `content-type ${contentType} is not accepted`,
        undefined,
        contentType ?? undefined,
      );
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > opts.maxBytes) {
      await res.body.dump({ limit: 0 }).catch(() => undefined);
      throw new FetchMediaError('too_large', `content-length ${declared} is over ${opts.maxBytes} bytes`);
    }
    const counter = { bytes: 0 };
    const out = createWriteStream(destPath);
    try {
      await pipeline(res.body, byteCap(opts.maxBytes, counter), out);
    } catch (err) {
      // The file may still be opening: wait until the stream is closed, or it would reappear after rm.
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      await rm(destPath, { force: true });
      if (err instanceof FetchMediaError) throw err;
      throw new FetchMediaError('unreachable', `transfer failed: ${(err as Error).message}`);
    }
    return { path: destPath, bytes: counter.bytes, contentType };
  }
}
