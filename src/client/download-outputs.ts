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
 * - storage URLs get no Authorization header (the signature is the credential);
 * - a local write the disk refuses (full, over quota, read-only, forbidden) is a LocalWriteError at
 *   once, never a cut transfer to resume.
 */
import { once } from 'node:events';
import { constants, createWriteStream } from 'node:fs';
import { access, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ApiTransport } from './api-transport.ts';
import { ConnectionError, GenpipeError, LocalWriteError } from './errors.ts';
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

/**
 * Makes `dir` and its parents. A recursive mkdir on a read-only disk says ENOENT; the deepest folder
 * that exists is then asked whether it may be written, for the real refusal (EROFS, EACCES).
 */
async function makeFolder(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    let at = dirname(dir);
    while ((await stat(at).catch(() => null)) === null && dirname(at) !== at) at = dirname(at);
    await access(at, constants.W_OK);
    throw err;
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

/** How a 200 or 206 answer goes on with the part file: its total size, and whether it is appended to. */
interface BodyPlan {
  total: number | null;
  append: boolean;
}

/**
 * What a 200 or 206 answer does to a part file holding `have` bytes: a 206 from `have` appends to it,
 * a 200 rewrites it; null for a 206 that does not start at `have` (an answer we cannot splice).
 */
function planBody(res: AttemptResponse, have: number): BodyPlan | null {
  if (res.status === 206) {
    const range = parseContentRange(res.headers['content-range']);
    if (!range || range.start !== have) return null;
    return { total: range.total, append: true };
  }
  const length = Number(res.headers['content-length']);
  const total = Number.isFinite(length) && res.headers['content-length'] !== undefined ? length : null;
  return { total, append: false };
}

/** One output's download: its budgets of URL refreshes and resumes, and the part file it fills. */
class OutputDownload {
  private refreshes = 0;
  private resumes = 0;
  private name: string | null = null;
  private partPath: string | null = null;
  private mimeType: string | null = null;
  /** Bytes in the part file. */
  private have = 0;
  private readonly maxRefreshes: number;
  private readonly maxResumes: number;

  constructor(
    private readonly deps: DownloadDeps,
    private readonly urls: OutputUrls,
    private readonly output: GenerationOutput,
    private readonly index: number,
    private readonly dir: string,
    private readonly options: DownloadOptions,
  ) {
    this.maxRefreshes = options.maxUrlRefreshes ?? 3;
    this.maxResumes = options.maxResumes ?? deps.transport.settings.policy.maxRetries;
  }

  /** Returns when `<name>` is complete; a failed download removes its part file. */
  async run(): Promise<DownloadedOutput> {
    try {
      for (;;) {
        throwIfAborted(this.options.signal);
        const res = await this.request();
        if (res === null) continue;
        const plan = planBody(res, this.have);
        if (plan === null) {
          await res.body.dump().catch(() => undefined);
          this.have = 0; // start over
          continue;
        }
        if (!plan.append) this.have = 0;
        const { name, part } = this.nameFrom(res);
        if (await this.receive(res, name, part, plan)) return await this.complete(name, part);
      }
    } finally {
      if (this.partPath !== null) await rm(this.partPath, { force: true });
    }
  }

  /**
   * One GET from byte `have` on: a 200 or 206 answer, or null when it is to be asked again (after a
   * pause for a failed attempt, or with a fresh URL after a 403). Throws any other answer's error.
   */
  private async request(): Promise<AttemptResponse | null> {
    const { transport } = this.deps;
    const { policy, random, hooks } = transport.settings;
    const headers = transport.headers('storage');
    if (this.have > 0) headers.range = `bytes=${this.have}-`;
    let res: AttemptResponse;
    try {
      res = await transport.attempt({
        method: 'GET',
        url: this.urls.url(this.index),
        headers,
        signal: this.options.signal,
      });
    } catch (err) {
      if (!(err instanceof GenpipeError)) throw err;
      this.spendResume(() => err);
      await sleep(backoffDelay(policy.connection, this.resumes, policy, random), this.options.signal);
      return null;
    }
    if (res.status === 403 && this.refreshes < this.maxRefreshes) {
      await res.body.dump().catch(() => undefined);
      this.refreshes++;
      hooks.log?.(`output ${this.index}: URL expired, reading the generation again for a fresh one`);
      await this.urls.refresh(this.index);
      return null;
    }
    if (res.status !== 200 && res.status !== 206) throw await transport.error(res, null);
    return res;
  }

  /** The output's file name and part file, named from the first answer's Content-Type. */
  private nameFrom(res: AttemptResponse): { name: string; part: string } {
    if (this.name === null) {
      this.mimeType = res.headers['content-type']?.split(';')[0]?.trim() ?? null;
      this.name = outputFileName(this.output, this.index, this.mimeType);
      this.partPath = join(this.dir, `${this.name}.part`);
    }
    return { name: this.name, part: this.partPath as string };
  }

  /** Streams the answer into the part file: true when the output is complete, false to resume. */
  private async receive(res: AttemptResponse, name: string, part: string, plan: BodyPlan): Promise<boolean> {
    const { index, options } = this;
    let received = this.have;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        received += chunk.length;
        options.onProgress?.({ index, name, bytes: received, totalBytes: plan.total });
        done(null, chunk);
      },
    });
    const file = createWriteStream(part, { flags: plan.append ? 'a' : 'w' });
    // The part file's own failure (a full disk, a read-only one): the bytes arrived, the disk refused them.
    let fileError: unknown = null;
    file.once('error', (err) => {
      fileError = err;
    });
    try {
      await pipeline(res.body, counter, file, { signal: options.signal });
    } catch (err) {
      const local = fileError === null ? null : LocalWriteError.from(fileError, part);
      if (local) {
        await res.body.dump().catch(() => undefined);
        throw local;
      }
      // pipeline() rejects on the body's error while the part file may still be landing its last
      // writes: measured before they land, the resumed answer would be appended after bytes counted
      // twice. Its size is read once the file is closed.
      if (!file.closed) await once(file, 'close').catch(() => undefined);
      throwIfAborted(options.signal);
      this.have = await sizeOf(part);
      this.spendResume(
        () =>
          new ConnectionError(`Download of output ${index} was cut off after ${this.have} bytes`, {
            sent: true,
            cause: err,
          }),
      );
      this.deps.transport.settings.hooks.log?.(
        `output ${index}: transfer cut at ${this.have} bytes; resuming`,
      );
      return false;
    }
    // Every byte counted went into the part file, which the pipeline closed: no stat needed.
    this.have = received;
    const { total } = plan;
    if (total !== null && this.have < total) {
      this.spendResume(
        () =>
          new ConnectionError(`Download of output ${index} ended at ${this.have} of ${total} bytes`, {
            sent: true,
          }),
      );
      return false;
    }
    return true;
  }

  /** Counts one resume, or throws `error()` when none is left. */
  private spendResume(error: () => Error): void {
    if (this.resumes >= this.maxResumes) throw error();
    this.resumes++;
  }

  /** Renames the complete part file to `<name>`. */
  private async complete(name: string, part: string): Promise<DownloadedOutput> {
    const finalPath = join(this.dir, name);
    await rename(part, finalPath);
    this.partPath = null;
    this.deps.transport.settings.hooks.onTransfer?.({ direction: 'download', bytes: this.have });
    return {
      index: this.index,
      path: finalPath,
      name,
      bytes: this.have,
      mimeType: this.mimeType,
      type: this.output.type,
      layer: this.output.layer ?? null,
    };
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
 *   ConnectionError when a transfer keeps being cut; a LocalWriteError when the disk refuses a write
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
  try {
    await makeFolder(dir);
    const urls = new OutputUrls(generation, deps.refresh);
    const done: DownloadedOutput[] = [];
    for (const [index, output] of generation.output.entries()) {
      done.push(await new OutputDownload(deps, urls, output, index, dir, options).run());
    }
    return done;
  } catch (err) {
    // The folder or a file of it could not be made (mkdir, the part file, its rename): said as the
    // local failure it is, never as the service's.
    throw LocalWriteError.from(err, dir) ?? err;
  }
}
