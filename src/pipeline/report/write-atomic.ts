/** Writing a report file atomically: into a scratch name beside it, renamed onto it on success. */
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { LocalWriteError } from '../../client/index.ts';

/** Pieces are gathered into writes of about this many characters. */
const WRITE_CHARS = 65_536;

const writeText = promisify(writeFile);

/**
 * A file written piece by piece into `<path>.<random>.tmp` and renamed onto `path` by `commit`, so a
 * reader sees either the old file or the whole new one, never a half-written one. `add` only gathers a
 * piece; `drain` writes what was gathered once it is worth a write: two files can so be written side by
 * side from one pass over a report's items, neither ever whole in memory.
 *
 * @example const f = await AtomicFile.open(path); f.add(text); await f.drain(); await f.commit();
 */
export class AtomicFile {
  private buf: string[] = [];
  private chars = 0;

  private constructor(
    readonly path: string,
    private readonly tmp: string,
    private readonly handle: FileHandle,
  ) {}

  /** Opens the scratch file beside `path` (making the parent directory when missing). */
  static async open(path: string): Promise<AtomicFile> {
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.${randomUUID().slice(0, 8)}.tmp`;
    return new AtomicFile(path, tmp, await open(tmp, 'w'));
  }

  /** Gathers a piece (written by the next drain that finds enough, or by commit). */
  add(piece: string): void {
    if (piece === '') return;
    this.buf.push(piece);
    this.chars += piece.length;
  }

  /** Writes what was gathered once it is about WRITE_CHARS or more. */
  async drain(): Promise<void> {
    if (this.chars >= WRITE_CHARS) await this.flush();
  }

  /**
   * Writes the rest and renames the scratch file onto the path; when that fails (a full disk refuses
   * the rest), the scratch file is removed (abort) before the error is thrown: no caller leaves one.
   */
  async commit(): Promise<void> {
    try {
      await this.flush();
      await this.handle.close();
      await rename(this.tmp, this.path);
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** Gives up: closes and removes the scratch file (the old file, if any, stays); again: nothing more. */
  async abort(): Promise<void> {
    this.buf = [];
    await this.handle.close().catch(() => undefined);
    await rm(this.tmp, { force: true });
  }

  private async flush(): Promise<void> {
    if (this.buf.length === 0) return;
    const text = this.buf.join('');
    this.buf = [];
    this.chars = 0;
    await this.handle.writeFile(text, 'utf8');
  }
}

/**
 * Writes `text` to `path` through `<path>.<random>.tmp` and a rename, so a reader sees either the old
 * file or the whole new one, never a half-written one. Creates the parent directory when missing.
 * `text` may come in pieces (an iterable or async iterable of strings, written one after another): a
 * large report is then never one string in memory.
 *
 * @example await writeFileAtomic('/out/report.json', JSON.stringify(report));
 */
export async function writeFileAtomic(
  path: string,
  text: string | Iterable<string> | AsyncIterable<string>,
): Promise<void> {
  if (typeof text === 'string') return writeTextAtomic(path, text);
  const file = await AtomicFile.open(path).catch((err: unknown) => {
    throw LocalWriteError.from(err, path) ?? err;
  });
  try {
    for await (const piece of text) {
      file.add(piece);
      await file.drain();
    }
    await file.commit();
  } catch (err) {
    await file.abort();
    // A disk that refuses the write (full, read-only): said of this file, whatever step of it failed.
    throw LocalWriteError.from(err, path) ?? err;
  }
}

/**
 * writeFileAtomic of one string: node:fs's callback writeFile into the scratch name (one call where a
 * FileHandle takes three, for result.json's write per file), then the rename. The folder is made only
 * when the write finds it missing: result.json's usually holds the file's outputs already.
 */
async function writeTextAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.${randomUUID().slice(0, 8)}.tmp`;
  try {
    await writeText(tmp, text).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
      await mkdir(dirname(path), { recursive: true });
      await writeText(tmp, text);
    });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw LocalWriteError.from(err, path) ?? err;
  }
}
