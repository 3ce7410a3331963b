/**
 * Random access to a file's bytes through one cached window, for the readers of image structure
 * (image-end.ts, image-size.ts): a few small reads where the structure points, never the whole file.
 */
import { type FileHandle, open } from 'node:fs/promises';

const WINDOW = 64 * 1024;

/** Reads bytes at any offset through one cached window of the file. */
export class FileBytes {
  private start = 0;
  private buf = Buffer.alloc(0);

  constructor(
    private readonly fh: FileHandle,
    readonly size: number,
  ) {}

  /** `n` bytes at `at`, or fewer when the file ends first. */
  async at(at: number, n: number): Promise<Buffer> {
    if (at < this.start || at + n > this.start + this.buf.length) {
      const len = Math.max(n, WINDOW);
      const buf = Buffer.alloc(Math.min(len, Math.max(0, this.size - at)));
      let got = 0;
      while (got < buf.length) {
        const { bytesRead } = await this.fh.read(buf, got, buf.length - got, at + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      this.start = at;
      this.buf = buf.subarray(0, got);
    }
    const from = at - this.start;
    return this.buf.subarray(from, Math.min(from + n, this.buf.length));
  }
}

/**
 * Opens the file at `path` and gives `read` its bytes and its first 64; null when the file cannot be
 * opened or `read` throws (a reader of structure then knows nothing, and the decoder says what is wrong).
 */
export async function readStructure<T>(
  path: string,
  read: (bytes: FileBytes, head: Buffer) => Promise<T | null>,
): Promise<T | null> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch {
    return null;
  }
  try {
    const bytes = new FileBytes(fh, (await fh.stat()).size);
    return await read(bytes, Buffer.from(await bytes.at(0, 64)));
  } catch {
    return null;
  } finally {
    await fh.close();
  }
}
