/**
 * The 503 fallback for URL-referenced media ("retry or send base64 instead of URL"): fetch each `url`
 * reference ourselves, stream it to a temporary file (capped at the 50 MB input limit), and build a
 * request body in which those references carry `data` + `media_type` instead. The body is produced as
 * a stream — JSON text around base64 encoded on the fly from the files — with an exact length, so no
 * media file is ever held in memory whole, and it can be sent again on a retry.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Dispatcher, request } from 'undici';
import {
  fetchFailedDetail,
  type ImageRef,
  imageTooLargeDetail,
  LIMITS,
  listMediaRefs,
  validateGenerationRequest,
} from '../spec/index.ts';
import { errorFromResponse, PreflightError } from './errors.ts';
import { flattenHeaders, transportError } from './http-attempt.ts';
import { mediaKind, sniffPath } from './sniff-mime.ts';
import type { GenerationRequest } from './types.ts';

/** A request body that can be produced again for each attempt. */
export interface ReplayableBody {
  /** Exact byte length (sent as Content-Length). */
  length: number;
  /** A fresh stream of the body. */
  open(): AsyncIterable<Uint8Array>;
  /** Removes temporary files. */
  dispose(): Promise<void>;
}

interface Fetched {
  token: string;
  file: string;
  bytes: number;
}

/** Paths of the `url` references of a request (empty when there are none or it does not validate). */
export function urlMediaPaths(request: GenerationRequest): string[] {
  const checked = validateGenerationRequest(request);
  if (!checked.ok) return [];
  return listMediaRefs(checked.request)
    .filter((s) => s.ref.url !== undefined)
    .map((s) => s.path);
}

/** The object at a site path (`source`, `image_ref[2]`, `video.edit.keyframes[0]`) of a request copy. */
function refAt(root: Record<string, unknown>, path: string): ImageRef {
  let node: unknown = root;
  for (const part of path.split('.')) {
    const m = /^([a-z_]+)(?:\[(\d+)\])?$/.exec(part);
    if (!m) throw new TypeError(`bad media path ${path}`);
    node = (node as Record<string, unknown>)[m[1] as string];
    if (m[2] !== undefined) node = (node as unknown[])[Number(m[2])];
  }
  return node as ImageRef;
}

async function fetchToFile(
  dispatcher: Dispatcher,
  url: string,
  dest: string,
  path: string,
  signal: AbortSignal | undefined,
  timeoutMs: number,
  userAgent: string,
): Promise<{ bytes: number; contentType: string | null }> {
  let res: Dispatcher.ResponseData;
  try {
    res = await request(url, {
      method: 'GET',
      headers: { 'user-agent': userAgent },
      dispatcher,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  } catch (err) {
    throw transportError(err, true, `GET ${path} url`, null) ?? err;
  }
  const headers = flattenHeaders(res.headers as Record<string, string | string[] | undefined>);
  if (res.statusCode >= 400) {
    await res.body.dump().catch(() => undefined);
    // What the service says when it cannot fetch a URL itself.
    throw errorFromResponse(422, { detail: fetchFailedDetail(path, res.statusCode) }, {});
  }
  const cap = LIMITS.imageMaxBytes;
  const declared = Number(headers['content-length']);
  if (Number.isFinite(declared) && declared > cap) {
    res.body.destroy();
    throw new PreflightError(413, imageTooLargeDetail(path));
  }
  let bytes = 0;
  const limiter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > cap) return done(new PreflightError(413, imageTooLargeDetail(path)));
      done(null, chunk);
    },
  });
  await pipeline(res.body, limiter, createWriteStream(dest));
  return { bytes, contentType: headers['content-type'] ?? null };
}

/** Base64 of a file, streamed: reads in multiples of 3 bytes so the pieces join without padding. */
async function* base64Of(file: string): AsyncGenerator<Uint8Array> {
  let carry: Buffer = Buffer.alloc(0);
  for await (const chunk of createReadStream(file, { highWaterMark: 3 * 21_846 })) {
    const buf = carry.length > 0 ? Buffer.concat([carry, chunk as Buffer]) : (chunk as Buffer);
    const whole = buf.length - (buf.length % 3);
    if (whole > 0) yield Buffer.from(buf.subarray(0, whole).toString('base64'), 'latin1');
    carry = buf.subarray(whole);
  }
  if (carry.length > 0) yield Buffer.from(carry.toString('base64'), 'latin1');
}

/**
 * Fetches every `url` reference of a request and returns a replayable body with them inlined as
 * base64 `data` (with `media_type` from the answer's Content-Type when it is an image/video type,
 * else the reference's own media_type, else sniffed from the bytes).
 *
 * @param request - the create body (not modified)
 * @param dispatcher - the client's undici dispatcher (no Authorization header is sent to media hosts)
 * @throws PreflightError 413 for media over 50 MB; the error class of a failed fetch
 */
export async function inlineUrlMedia(
  request: GenerationRequest,
  dispatcher: Dispatcher,
  options: { signal?: AbortSignal | undefined; timeoutMs: number; userAgent: string },
): Promise<ReplayableBody> {
  const copy = structuredClone(request) as unknown as Record<string, unknown>;
  const dir = await mkdtemp(join(tmpdir(), 'genpipe-inline-'));
  const fetched: Fetched[] = [];
  try {
    for (const path of urlMediaPaths(request)) {
      const ref = refAt(copy, path);
      const file = join(dir, `${fetched.length}.bin`);
      const got = await fetchToFile(
        dispatcher,
        ref.url as string,
        file,
        path,
        options.signal,
        options.timeoutMs,
        options.userAgent,
      );
      const answered = got.contentType?.split(';')[0]?.trim().toLowerCase() ?? null;
      const mediaType = mediaKind(answered) ? answered : (ref.media_type ?? (await sniffPath(file)));
      const token = `__genpipe_inline_${randomUUID()}__`;
      delete ref.url;
      ref.data = token;
      if (mediaType) ref.media_type = mediaType;
      fetched.push({ token, file, bytes: got.bytes });
    }
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  // Split the JSON text at the placeholders; each placeholder becomes the base64 of its file.
  const text = JSON.stringify(copy);
  const pieces: Array<string | Fetched> = [];
  let rest = text;
  for (const f of fetched) {
    const at = rest.indexOf(f.token);
    pieces.push(rest.slice(0, at), f);
    rest = rest.slice(at + f.token.length);
  }
  pieces.push(rest);
  const length = pieces.reduce(
    (n, p) => n + (typeof p === 'string' ? Buffer.byteLength(p) : 4 * Math.ceil(p.bytes / 3)),
    0,
  );
  return {
    length,
    async *open() {
      for (const p of pieces) {
        if (typeof p === 'string') yield Buffer.from(p);
        else yield* base64Of(p.file);
      }
    },
    dispose: () => rm(dir, { recursive: true, force: true }),
  };
}
