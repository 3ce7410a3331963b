/**
 * sha256 of bytes as they stream. Hashed in line by default: measured on the 1 GiB presigned upload
 * bench (bench/client-upload.bench.ts), the main thread is idle more than half of the time waiting
 * on the socket while hashing in line (~1 GB/s, so the main thread alone could feed ~700 MB/s), and
 * the worker-thread hasher cost ~30 MB more peak RSS (a second isolate plus the copied chunks it
 * receives) for no throughput gain on a 2-core machine. The worker hasher stays available for
 * links faster than that: pass `workerMinBytes` to createSha256; the chunks handed over are bounded
 * (at most MAX_OUTSTANDING_BYTES in flight), so a slow hash never makes memory grow with the file.
 */
import { createHash } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/** Inputs at least this large are hashed on a worker thread by default: none (see the module comment). */
export const WORKER_HASH_MIN_BYTES = Number.POSITIVE_INFINITY;
/** Bytes handed to the worker and not yet hashed, at most. */
const MAX_OUTSTANDING_BYTES = 8 * 1024 * 1024;

const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const hash = createHash('sha256');
parentPort.on('message', (m) => {
  if (m === null) { parentPort.postMessage({ hex: hash.digest('hex') }); return; }
  hash.update(m);
  parentPort.postMessage({ done: m.byteLength });
});
`;

/** A running sha256. */
export interface Sha256Hasher {
  /** Adds a chunk; a returned promise asks the caller to wait before the next chunk (back-pressure). */
  update(chunk: Uint8Array): void | Promise<void>;
  /** The hex digest of everything added; call once, after the last update. */
  digest(): Promise<string>;
  /** Releases the worker, if any (safe to call more than once). */
  dispose(): void;
}

function inlineHasher(): Sha256Hasher {
  const hash = createHash('sha256');
  return {
    update: (chunk) => {
      hash.update(chunk);
    },
    digest: async () => hash.digest('hex'),
    dispose: () => {},
  };
}

function workerHasher(): Sha256Hasher {
  const worker = new Worker(WORKER_SOURCE, { eval: true });
  worker.unref();
  let outstanding = 0;
  let wake: (() => void) | null = null;
  let finish: ((hex: string) => void) | null = null;
  let failure: Error | null = null;
  let fail: ((err: Error) => void) | null = null;
  worker.on('message', (m: { done?: number; hex?: string }) => {
    if (m.done !== undefined) {
      outstanding -= m.done;
      if (wake && outstanding <= MAX_OUTSTANDING_BYTES / 2) {
        const w = wake;
        wake = null;
        w();
      }
    } else if (m.hex !== undefined) finish?.(m.hex);
  });
  worker.on('error', (err) => {
    failure = err;
    fail?.(err);
    wake?.();
  });
  return {
    update(chunk) {
      if (failure) throw failure;
      outstanding += chunk.byteLength;
      worker.postMessage(chunk); // copied: the caller keeps its chunk for the socket
      if (outstanding > MAX_OUTSTANDING_BYTES) {
        return new Promise<void>((resolve) => {
          wake = resolve;
        }).then(() => {
          if (failure) throw failure;
        });
      }
    },
    digest() {
      if (failure) return Promise.reject(failure);
      return new Promise<string>((resolve, reject) => {
        finish = resolve;
        fail = reject;
        worker.postMessage(null);
      }).finally(() => void worker.terminate());
    },
    dispose() {
      void worker.terminate();
    },
  };
}

/**
 * A sha256 hasher suited to an input of `sizeHint` bytes (null when unknown: hashed in line).
 * @param sizeHint - the input's size when known
 * @param options.workerMinBytes - hash inputs at least this large on a worker thread (default: never)
 * @example const h = createSha256(size); for await (const c of s) await h.update(c); await h.digest();
 */
export function createSha256(
  sizeHint: number | null,
  options: { workerMinBytes?: number } = {},
): Sha256Hasher {
  const workerMin = options.workerMinBytes ?? WORKER_HASH_MIN_BYTES;
  return sizeHint !== null && sizeHint >= workerMin ? workerHasher() : inlineHasher();
}
