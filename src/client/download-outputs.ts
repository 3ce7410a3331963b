/**
 * Downloading a completed generation's outputs to a directory, safely:
 * - each output streams to `<name>.part` and is renamed to `<name>` only when every byte arrived, so a
 *   file under its final name is always complete (a failed download removes its .part);
 * - names are `output-<i>.<ext>` (the extension from the answer's Content-Type) and
 *   `layer-<index>.png` for the layers of a layer stack;
 * - a 403 from the storage host means the presigned URL expired: the generation is read again for a
 *   fresh URL (a bounded number of times);
 * - a transfer cut short resumes with `Range: bytes=<have>-` when the server answers 206, and starts
 *   over when it answers 200;
 * - storage URLs get no Authorization header (the signature is the credential).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ApiTransport } from './api-transport.ts';
import { ConnectionError, GenpipeError } from './errors.ts';
import type { AttemptResponse } from './http-attempt.ts';
import { backoffDelay } from './retry-policy.ts';
import { sleep, throwIfAborted } from './sleep.ts';
import type { Generation, GenerationOutput, Layer } from './types.ts';

/** Options of a download. */
export interface DownloadOptions {
  signal?: AbortSignal;
  /** Called as bytes arrive. */
  onProgress?: (progress: { index: number; name: string; bytes: number; totalBytes: number | null }) => void;
  /** Fresh URLs fetched per output after a 403 (default 3). */
  maxUrlRefreshes?: number;
  /** Resumes (or restarts) per output after a cut transfer (default: the client's maxRetries). */
  maxResumes?: number;
}

/** One downloaded output. */
export interface DownloadedOutput {
  /** Position in the generation's output list. */
  index: number;
  /** Absolute or dir-relative path of the complete file. */
  path: string;
  name: string;
  bytes: number;
  mimeType: string | null;
  type: string;
  layer: Layer | null;
}

/** What a download needs from its client. */
export interface DownloadDeps {
  transport: ApiTransport;
  /** Reads the generation again (fresh output URLs). */
  refresh: () => Promise<Generation>;
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/avif': 'avif',
  'video/mp4': 'mp4',
  'video/quicktime': 'mov',
  'video/webm': 'webm',
  'image/x-exr': 'exr',
};

/**
 * The file name of an output.
 * @example outputFileName({ type: 'image', url }, 0, 'image/jpeg') // 'output-0.jpg'
 * @example outputFileName({ type: 'layering', url, layer: { index: 2, ... } }, 3, 'image/png') // 'layer-2.png'
 */
export function outputFileName(output: GenerationOutput, index: number, mimeType: string | null): string {
  if (output.layer) return `layer-${output.layer.index}.png`;
  const mime = mimeType?.split(';')[0]?.trim().toLowerCase() ?? '';
  const ext = EXTENSIONS[mime] ?? (output.type === 'video' ? 'mp4' : output.type === 'image' ? 'png' : 'bin');
  return `output-${index}.${ext}`;
}

/** `bytes <start>-<end>/<total>` → start and total (total null when `*`). */
function parseContentRange(value: string | undefined): { start: number; total: number | null } | null {
  const m = value ? /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(value.trim()) : null;
  if (!m) return null;
  return { start: Number(m[1]), total: m[3] === '*' ? null : Number(m[3]) };
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/** The current URL of each output, shared by the outputs of one download so one refresh serves all. */
class OutputUrls {
  constructor(
    private generation: Generation,
    private readonly refreshFn: () => Promise<Generation>,
  ) {}

  url(index: number): string {
    const output = this.generation.output[index];
    if (!output) throw new GenpipeError(`Output ${index} is not listed on generation ${this.generation.id}`);
    return output.url;
  }

  /** Reads the generation again; every output gets its fresh URL. */
  async refresh(index: number): Promise<void> {
    const fresh = await this.refreshFn();
    if (fresh.state !== 'completed' || !fresh.output[index]) {
      throw new GenpipeError(`Output ${index} is not listed on generation ${fresh.id} any more`);
    }
    this.generation = fresh;
  }
}

/** Downloads one output; returns when `<name>` is complete. */
async function downloadOne(
  deps: DownloadDeps,
  urls: OutputUrls,
  output: GenerationOutput,
  index: number,
  dir: string,
  options: DownloadOptions,
): Promise<DownloadedOutput> {
  const { transport } = deps;
  const { policy, random, hooks } = transport.settings;
  const maxRefreshes = options.maxUrlRefreshes ?? 3;
  const maxResumes = options.maxResumes ?? policy.maxRetries;
  let refreshes = 0;
  let resumes = 0;
  let name: string | null = null;
  let partPath: string | null = null;
  let mimeType: string | null = null;
  let have = 0;
  try {
    for (;;) {
      throwIfAborted(options.signal);
      const headers = transport.headers('storage');
      if (have > 0) headers.range = `bytes=${have}-`;
      let res: AttemptResponse;
      try {
        res = await transport.attempt({
          method: 'GET',
          url: urls.url(index),
          headers,
          signal: options.signal,
        });
      } catch (err) {
        if (!(err instanceof GenpipeError) || resumes >= maxResumes) throw err;
        resumes++;
        await sleep(backoffDelay(policy.connection, resumes, policy, random), options.signal);
        continue;
      }
      if (res.status === 403 && refreshes < maxRefreshes) {
        await res.body.dump().catch(() => undefined);
        refreshes++;
        hooks.log?.(`output ${index}: URL expired, reading the generation again for a fresh one`);
        await urls.refresh(index);
        continue;
      }
      if (res.status !== 200 && res.status !== 206) throw await transport.error(res, null);

      let total: number | null;
      let append = false;
      if (res.status === 206) {
        const range = parseContentRange(res.headers['content-range']);
        if (!range || range.start !== have) {
          await res.body.dump().catch(() => undefined);
          have = 0; // an answer we cannot splice: start over
          continue;
        }
        total = range.total;
        append = true;
      } else {
        const length = Number(res.headers['content-length']);
        total = Number.isFinite(length) && res.headers['content-length'] !== undefined ? length : null;
        have = 0;
      }
      if (name === null) {
        mimeType = res.headers['content-type']?.split(';')[0]?.trim() ?? null;
        name = outputFileName(output, index, mimeType);
        partPath = join(dir, `${name}.part`);
      }
      const currentName = name;
      const part = partPath as string;
      let received = have;
      const counter = new Transform({
        transform(chunk: Buffer, _enc, done) {
          received += chunk.length;
          options.onProgress?.({ index, name: currentName, bytes: received, totalBytes: total });
          done(null, chunk);
        },
      });
      try {
        await pipeline(res.body, counter, createWriteStream(part, { flags: append ? 'a' : 'w' }), {
          signal: options.signal,
        });
      } catch (err) {
        throwIfAborted(options.signal);
        have = await sizeOf(part);
        if (resumes >= maxResumes) {
          throw new ConnectionError(`Download of output ${index} was cut off after ${have} bytes`, {
            sent: true,
            cause: err,
          });
        }
        resumes++;
        hooks.log?.(`output ${index}: transfer cut at ${have} bytes; resuming`);
        continue;
      }
      have = await sizeOf(part);
      if (total !== null && have < total) {
        if (resumes >= maxResumes) {
          throw new ConnectionError(`Download of output ${index} ended at ${have} of ${total} bytes`, {
            sent: true,
          });
        }
        resumes++;
        continue;
      }
      const finalPath = join(dir, currentName);
      await rename(part, finalPath);
      partPath = null;
      return {
        index,
        path: finalPath,
        name: currentName,
        bytes: have,
        mimeType,
        type: output.type,
        layer: output.layer ?? null,
      };
    }
  } finally {
    if (partPath !== null) await rm(partPath, { force: true });
  }
}

/**
 * Downloads every output of a completed generation into `dir`, one after the other.
 *
 * @param deps - the transport and a way to read the generation again
 * @param generation - a completed generation
 * @param dir - created when missing
 * @returns one entry per output, in output order
 * @throws GenpipeError when the generation is not completed; the storage answer's error class; a
 *   ConnectionError when a transfer keeps being cut
 */
export async function downloadOutputs(
  deps: DownloadDeps,
  generation: Generation,
  dir: string,
  options: DownloadOptions = {},
): Promise<DownloadedOutput[]> {
  if (generation.state !== 'completed') {
    throw new GenpipeError(
      `Generation ${generation.id} has no outputs to download (state ${generation.state})`,
    );
  }
  await mkdir(dir, { recursive: true });
  const urls = new OutputUrls(generation, deps.refresh);
  const done: DownloadedOutput[] = [];
  for (const [index, output] of generation.output.entries()) {
    done.push(await downloadOne(deps, urls, output, index, dir, options));
  }
  return done;
}
