/**
 * The content hash of an input: the sha256 of its bytes, read as a stream in fixed-size chunks (a file
 * is never held in memory whole). Rehashing a large video on every run is avoided by the journal's
 * cache, keyed by the file's identity (see FileIdentity).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { readStart } from '../../media/index.ts';
import type { FileIdentity } from './store.ts';

/** Chunk size of the streaming content hash. */
const HASH_CHUNK_BYTES = 1024 * 1024;

/** Files up to this size are hashed from one read instead of a stream. */
const SMALL_FILE_BYTES = 64 * 1024;

/**
 * The sha256 (hex) of the file at `path`, streamed.
 *
 * @param signal - stops the read (the promise rejects with the signal's reason)
 * @example await sha256File('in/clip.mp4') // 'e3b0c442…'
 */
export async function sha256File(path: string | Buffer, signal?: AbortSignal): Promise<string> {
  signal?.throwIfAborted();
  const hash = createHash('sha256');
  const stream = createReadStream(path, { highWaterMark: HASH_CHUNK_BYTES, signal });
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export type { FileIdentity };

/** The identity of the file at `path` now. */
export async function fileIdentity(path: string): Promise<FileIdentity> {
  const st = await stat(path, { bigint: true });
  return {
    dev: String(st.dev),
    ino: String(st.ino),
    size: Number(st.size),
    mtimeNs: String(st.mtimeNs),
    ctimeNs: String(st.ctimeNs),
  };
}

/** True when two identities name the same version of a file. */
export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return (
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.size === b.size &&
    a.mtimeNs === b.mtimeNs &&
    a.ctimeNs === b.ctimeNs
  );
}

/** Where hashes are cached by file identity (a Store fits). */
export interface HashCache {
  cachedHash(path: string, identity: FileIdentity): Promise<string | null>;
  saveHash(path: string, identity: FileIdentity, hash: string): Promise<void>;
}

/**
 * The sha256 of the file at `path`, `size` bytes long by its identity: a small file in one read
 * (readStart, without a stream's cost per file), any other streamed.
 */
async function hashOf(path: string, size: number, signal?: AbortSignal): Promise<string> {
  if (size > SMALL_FILE_BYTES) return sha256File(path, signal);
  signal?.throwIfAborted();
  const start = await readStart(path, SMALL_FILE_BYTES + 1);
  // Grown past the small size since (or not a file): streamed after all.
  if (!start.isFile || start.bytes.length > SMALL_FILE_BYTES) return sha256File(path, signal);
  return createHash('sha256').update(start.bytes).digest('hex');
}

/**
 * The sha256 of a file's bytes, streamed; taken from `cache` when the file's identity (device, inode,
 * size, mtime, ctime) is the one it was hashed at. A file that changes while it is read is hashed but
 * not cached. The hash is answered without waiting for the cache's write to be recorded.
 *
 * @example await hashWithCache(store, '/in/clip.mp4')
 */
export async function hashWithCache(cache: HashCache, path: string, signal?: AbortSignal): Promise<string> {
  const before = await fileIdentity(path);
  const cached = await cache.cachedHash(path, before);
  if (cached !== null) return cached;
  const hash = await hashOf(path, before.size, signal);
  const after = await fileIdentity(path);
  // Not waited for: a cache entry lost (a failed write, a power cut) is only hashed again next time, and
  // the file's admission goes on meanwhile instead of waiting for the journal's next commit.
  if (sameIdentity(before, after)) cache.saveHash(path, after, hash).catch(() => undefined);
  return hash;
}
