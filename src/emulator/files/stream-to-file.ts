/**
 * Streaming request bytes to disk without holding them in memory, counting and hashing on the way,
 * and the helpers that decide what to do with a body the handler chose not to read.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { FILE_CHOICES } from '../../spec/index.ts';
import { removeQuietly } from './blobs.ts';

/** The body went over the allowed number of bytes. */
export class TooLargeError extends Error {
  override name = 'TooLargeError';
}

/** The client went away mid-body: there is nobody to answer. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
}

export interface WrittenFile {
  bytes: number;
  /** Hex MD5 of the bytes (an S3-style ETag). */
  md5: string;
}

class Meter extends Transform {
  bytes = 0;
  private readonly hash = createHash('md5');
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      cb(new TooLargeError(`more than ${this.maxBytes} bytes`));
      return;
    }
    this.hash.update(chunk);
    cb(null, chunk);
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}

/**
 * Pipes `source` into a new file at `path`, failing with TooLargeError past `maxBytes`. On any failure
 * (including the source being destroyed because its client went away) the partial file is removed
 * and the error is rethrown.
 * @param opts.maxBytes largest number of bytes accepted
 * @param opts.limitEvent an event of `source` that means "over the limit" (busboy's `limit`)
 */
export async function streamToFile(
  source: NodeJS.ReadableStream,
  path: string,
  opts: { maxBytes: number; limitEvent?: string },
): Promise<WrittenFile> {
  const meter = new Meter(opts.maxBytes);
  const onLimit = () => meter.destroy(new TooLargeError(`more than ${opts.maxBytes} bytes`));
  if (opts.limitEvent) source.once(opts.limitEvent, onLimit);
  try {
    await pipeline(source, meter, createWriteStream(path, { flags: 'wx' }));
    return { bytes: meter.bytes, md5: meter.digest() };
  } catch (err) {
    await removeQuietly(path);
    throw err;
  } finally {
    if (opts.limitEvent) source.removeListener(opts.limitEvent, onLimit);
  }
}

/** True when the client went away before its request was fully received. */
export function clientGone(request: FastifyRequest): boolean {
  return !request.raw.complete && (request.raw.destroyed || request.raw.socket?.destroyed === true);
}

/**
 * Headers for an error answered before the request body was read: `Connection: close` when the unread
 * rest may be large (or its length is unknown), so it is not drained; a small rest is drained by Node
 * and the connection stays usable.
 */
export function unreadBodyHeaders(request: FastifyRequest): Record<string, string> {
  if (request.raw.complete) return {};
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared <= FILE_CHOICES.inlineFramingSlackBytes) return {};
  return { connection: 'close' };
}

/** Stops feeding the request into any parser and lets the rest of it flow away unread. */
export function discardRest(request: FastifyRequest): void {
  if (request.raw.complete) return;
  request.raw.unpipe();
  request.raw.resume();
}
