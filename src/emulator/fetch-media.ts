/**
 * Fetching url media references for the emulator: only from allowed hosts, streamed to a file,
 * never buffered, with a byte cap. Used by generation media references and the legacy modify source.
 */
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';
import { CHOICES } from '../spec/index.ts';
import type { EmulatorContext } from './context.ts';

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

/** Parses and checks a URL against the scheme and host allow-list; throws not_allowed. */
function allowedUrl(ctx: EmulatorContext, raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchMediaError('not_allowed', 'not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new FetchMediaError('not_allowed', `scheme ${url.protocol} is not fetched`);
  }
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

/**
 * Streams `url` to `destPath`. Rejects with FetchMediaError: host not in config.fetch_allow_hosts,
 * connection failure, non-2xx status, more than `maxBytes`, or a Content-Type that is neither
 * image/* nor video/* (per `accept`). Redirects are followed (up to CHOICES.fetchMaxRedirects), each
 * hop checked against the allow-list again; a partial file is removed on failure.
 */
export async function fetchToFile(
  ctx: EmulatorContext,
  url: string,
  destPath: string,
  opts: { maxBytes: number; accept: 'image' | 'video' | 'media'; signal?: AbortSignal },
): Promise<FetchedMedia> {
  let target = allowedUrl(ctx, url);
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
