/** Writing a report file atomically: into a scratch name beside it, renamed onto it on success. */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

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
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${randomUUID().slice(0, 8)}.tmp`;
  try {
    await writeFile(tmp, typeof text === 'string' ? text : batched(text), 'utf8');
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Pieces joined into strings of about 64 KiB: one write each. */
async function* batched(pieces: Iterable<string> | AsyncIterable<string>): AsyncGenerator<string> {
  let buf: string[] = [];
  let size = 0;
  for await (const piece of pieces) {
    buf.push(piece);
    size += piece.length;
    if (size >= 65_536) {
      yield buf.join('');
      buf = [];
      size = 0;
    }
  }
  if (buf.length > 0) yield buf.join('');
}
