/**
 * The start of a file in one go: open, fstat, read, close through node:fs's callback calls. A pipeline
 * reads the start of every input three times over (sniffing, a prompt file's text, a small file's
 * hash); FileHandle's promise calls and a read stream cost several times more of the event loop's time
 * per call than these, which a folder of thousands of small files pays on every file.
 *
 * A small file read whole is remembered with its identity (device, inode, size, mtime and ctime in
 * nanoseconds, as the content-hash cache keys a file): the next read of it costs one stat while the
 * identity is unchanged, and is read again otherwise. A write after the fstat changes the ctime, so
 * bytes remembered from a read that raced a write are never handed out.
 */
import { type BigIntStats, close, fstat, open, read, stat } from 'node:fs';
import { promisify } from 'node:util';

const openFd = promisify(open);
const fstatFd = (fd: number) =>
  new Promise<BigIntStats>((resolve, reject) =>
    fstat(fd, { bigint: true }, (err, st) => (err ? reject(err) : resolve(st))),
  );
const statPath = (path: string) =>
  new Promise<BigIntStats>((resolve, reject) =>
    stat(path, { bigint: true }, (err, st) => (err ? reject(err) : resolve(st))),
  );
const closeFd = promisify(close);
const readFd = (fd: number, buf: Buffer, at: number) =>
  new Promise<number>((resolve, reject) =>
    read(fd, buf, at, buf.length - at, at, (err, n) => (err ? reject(err) : resolve(n))),
  );

/** What readStart found: the first bytes of a regular file, or that the path is not one. */
export type FileStart = { isFile: true; bytes: Buffer; size: number } | { isFile: false };

/** Files up to this size, read whole, are remembered for their next read. */
export const REMEMBERED_FILE_MAX_BYTES = 64 * 1024 + 1;
/** The bytes and the files remembered at most (the oldest are forgotten first). */
const REMEMBERED_TOTAL_BYTES = 4 * 1024 * 1024;
const REMEMBERED_FILES = 1024;

interface Remembered {
  identity: string;
  bytes: Buffer;
}
const remembered = new Map<string, Remembered>();
let rememberedBytes = 0;

function identityOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

function forget(path: string): void {
  const was = remembered.get(path);
  if (!was) return;
  remembered.delete(path);
  rememberedBytes -= was.bytes.length;
}

function remember(path: string, identity: string, bytes: Buffer): void {
  forget(path);
  if (bytes.length > REMEMBERED_FILE_MAX_BYTES) return;
  // A copy of its own: a small read is a slice of Buffer's shared 8 KiB pool, which it would keep alive.
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  remembered.set(path, { identity, bytes: own });
  rememberedBytes += own.length;
  for (const oldest of remembered.keys()) {
    if (rememberedBytes <= REMEMBERED_TOTAL_BYTES && remembered.size <= REMEMBERED_FILES) break;
    forget(oldest);
  }
}

/** The remembered start of the file at `path` when its identity is still the one it was read at. */
async function rememberedStart(path: string, max: number): Promise<FileStart | null> {
  const was = remembered.get(path);
  if (!was) return null;
  const st = await statPath(path).catch(() => null);
  if (!st?.isFile() || identityOf(st) !== was.identity) {
    forget(path);
    return null;
  }
  return {
    isFile: true,
    bytes: was.bytes.subarray(0, Math.min(max, was.bytes.length)),
    size: was.bytes.length,
  };
}

/**
 * The first `max` bytes of the regular file at `path` (all of a shorter one), and its size as fstat
 * gave it; `{ isFile: false }` for a directory or any other non-regular file, which is not read.
 * Rejects with the file system's error when the path cannot be opened.
 *
 * @example const start = await readStart('prompt.txt', 64 * 1024);
 */
export async function readStart(path: string, max: number): Promise<FileStart> {
  const known = await rememberedStart(path, max);
  if (known) return known;
  const fd = await openFd(path, 'r');
  try {
    const st = await fstatFd(fd);
    if (!st.isFile()) return { isFile: false };
    const size = Number(st.size);
    // A small file is read whole whatever `max` asks, so that every next reader finds it remembered.
    const buf = Buffer.allocUnsafe(Math.min(size, Math.max(max, REMEMBERED_FILE_MAX_BYTES)));
    let n = 0;
    while (n < buf.length) {
      const got = await readFd(fd, buf, n);
      if (got === 0) break;
      n += got;
    }
    const bytes = buf.subarray(0, n);
    if (n === size) remember(path, identityOf(st), bytes);
    return { isFile: true, bytes: bytes.subarray(0, Math.min(max, n)), size };
  } finally {
    await closeFd(fd);
  }
}
