/**
 * The start of a file in one go: open, fstat, read, close through node:fs's callback calls. A pipeline
 * reads the start of every input three times over (sniffing, a prompt file's text, a small file's
 * hash); FileHandle's promise calls and a read stream cost several times more of the event loop's time
 * per call than these, which a folder of thousands of small files pays on every file.
 */
import { close, fstat, open, read } from 'node:fs';
import { promisify } from 'node:util';

const openFd = promisify(open);
const fstatFd = promisify(fstat);
const closeFd = promisify(close);
const readFd = (fd: number, buf: Buffer, at: number) =>
  new Promise<number>((resolve, reject) =>
    read(fd, buf, at, buf.length - at, at, (err, n) => (err ? reject(err) : resolve(n))),
  );

/** What readStart found: the first bytes of a regular file, or that the path is not one. */
export type FileStart = { isFile: true; bytes: Buffer; size: number } | { isFile: false };

/**
 * The first `max` bytes of the regular file at `path` (all of a shorter one), and its size as fstat
 * gave it; `{ isFile: false }` for a directory or any other non-regular file, which is not read.
 * Rejects with the file system's error when the path cannot be opened.
 *
 * @example const start = await readStart('prompt.txt', 64 * 1024);
 */
export async function readStart(path: string, max: number): Promise<FileStart> {
  const fd = await openFd(path, 'r');
  try {
    const st = await fstatFd(fd);
    if (!st.isFile()) return { isFile: false };
    const buf = Buffer.allocUnsafe(Math.min(st.size, max));
    let n = 0;
    while (n < buf.length) {
      const got = await readFd(fd, buf, n);
      if (got === 0) break;
      n += got;
    }
    return { isFile: true, bytes: buf.subarray(0, n), size: st.size };
  } finally {
    await closeFd(fd);
  }
}
