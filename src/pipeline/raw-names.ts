/**
 * Names on disk that are not valid UTF-8 (a Latin-1 `caf<0xE9>.jpg` from an old share). A JavaScript
 * string cannot hold such a name in a way Node's fs turns back into the same bytes, so such a file
 * cannot be read, hashed, uploaded or moved through the path every stage uses. Discovery reads names
 * as bytes, and a file whose name (or a folder's above it) is not valid UTF-8 becomes an item failed
 * at once with a reason naming it, escaped (`caf$'\xe9'.jpg`, escapedName): it is in the summary, the exit code and the reports, as
 * every file is, and nothing ever opens it by a wrong name.
 */
import { isUtf8 } from 'node:buffer';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Item, newItem } from './item.ts';
import { validSequenceAt } from './utf8-text.ts';

/**
 * The name as text, told apart from every other name that is not valid UTF-8 and from the valid name
 * its bytes look like: its valid UTF-8 kept, each run of bytes that are not part of a valid sequence
 * written `$'\xNN…'` (bash's quoting of bytes, as `ls` shows them), and a `\` of the name written `\\`.
 * A valid name is returned as it is. The shape of the name is kept (a leading `.`, its extension), so
 * discovery's rules (hidden, temporary, sidecar, --include) read it as they read the bytes; and the
 * text, given to a shell (in the common case of a name without spaces or quotes), is the name.
 *
 * @example escapedName(Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x2e, 0x6a, 0x70, 0x67])) // "caf$'\\xe9'.jpg"
 * @example escapedName(Buffer.from('caf\\xe9.jpg')) // 'caf\\xe9.jpg' (valid: as it is)
 */
export function escapedName(raw: Uint8Array): string {
  if (isUtf8(raw)) return Buffer.from(raw).toString('utf8');
  let out = '';
  let bad = ''; // the run of invalid bytes being escaped
  let i = 0;
  while (i < raw.length) {
    const n = validSequenceAt(raw, i);
    if (n === 0) {
      bad += `\\x${(raw[i] as number).toString(16).padStart(2, '0')}`;
      i += 1;
      continue;
    }
    if (bad !== '') out += `$'${bad}'`;
    bad = '';
    const text = Buffer.from(raw.subarray(i, i + n)).toString('utf8');
    out += text === '\\' ? '\\\\' : text;
    i += n;
  }
  return bad === '' ? out : `${out}$'${bad}'`;
}

/**
 * The top folder of the out dir that holds the places of inputs whose path is not valid UTF-8 (see
 * placeInput). Its name begins with a dot, as no input's path does (discovery skips such names), so no
 * other input's place is ever in it.
 */
export const NOT_UTF8_DIR = '.not-utf8';

/**
 * What an item's place is made from (report/item-paths.ts folderPlace): its input path; for a path
 * that is not valid UTF-8, `.not-utf8/` and the path's bytes with each byte that is not part of a
 * valid sequence written `%NN` (and a `%` of such a name `%25`), so that it never takes the folder of
 * a valid name and two such paths never share one.
 *
 * @example placeInput({ input: "caf$'\\xe9'.jpg", rawInput: 'Y2Fm6S5qcGc=' }) // '.not-utf8/caf%E9.jpg'
 */
export function placeInput(item: Pick<Item, 'input' | 'rawInput'>): string {
  if (item.rawInput === undefined) return item.input;
  const segments = Buffer.from(item.rawInput, 'base64')
    .toString('latin1')
    .split('/')
    .map((seg) => percentName(Buffer.from(seg, 'latin1')));
  return [NOT_UTF8_DIR, ...segments].join('/');
}

/** A name's bytes as text: valid UTF-8 kept, other bytes `%NN`; `%` itself `%25` in a name not valid. */
function percentName(raw: Buffer): string {
  if (isUtf8(raw)) return raw.toString('utf8');
  let out = '';
  let i = 0;
  while (i < raw.length) {
    const n = validSequenceAt(raw, i);
    const b = raw[i] as number;
    if (n === 0 || b === 0x25) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    else out += raw.subarray(i, i + n).toString('utf8');
    i += Math.max(n, 1);
  }
  return out;
}

/** True when `raw` is a name a string path can reach (valid UTF-8). */
export function isUsableName(raw: Uint8Array): boolean {
  return isUtf8(raw);
}

/** Why a file is failed for its name, naming what must be renamed (escaped). */
export const RAW_NAME_TEXTS = {
  file: (escaped: string) => `file name is not valid UTF-8: ${escaped}; rename it`,
  folder: (escaped: string) => `folder name is not valid UTF-8: ${escaped}; rename it`,
  linkTarget: (escaped: string) =>
    `the file this link leads to has a name that is not valid UTF-8: ${escaped}; rename it`,
} as const;

/**
 * The item of a file that cannot be read by its name: failed at sniff (the first stage, which would
 * read it) with `reason`, before any stage runs. `absPath` is for nothing to open; `rawRel` is the
 * path's bytes relative to the input dir (Item.rawInput).
 */
export function unnamableItem(
  input: string,
  rawRel: Uint8Array,
  absPath: string,
  size: number,
  mtimeMs: number,
  reason: string,
): Item {
  return {
    ...newItem(input, absPath, size, mtimeMs),
    rawInput: Buffer.from(rawRel).toString('base64'),
    state: 'failed',
    failedAt: 'sniff',
    reason,
  };
}

/**
 * What tells an item's input from every other: its path, or for a path that is not valid UTF-8 its
 * bytes (base64) behind a `/` — which no input path, relative to the input dir, begins with — so that
 * two paths that are not valid UTF-8 yet print alike are two inputs wherever inputs are
 * told apart (places, the scheduler, watch). Text any store keeps (no NUL).
 *
 * @example inputKey({ input: 'a.jpg' }) // 'a.jpg'
 */
export function inputKey(item: Pick<Item, 'input' | 'rawInput'>): string {
  return item.rawInput === undefined ? item.input : `/${item.rawInput}`;
}

/** The path of an item's input on disk: its raw bytes when its name is not valid UTF-8 (Item.rawInput). */
export function inputPathIn(dir: string, item: Pick<Item, 'input' | 'rawInput'>): string | Buffer {
  if (item.rawInput === undefined) return join(dir, ...item.input.split('/'));
  return Buffer.concat([Buffer.from(join(dir, '/')), Buffer.from(item.rawInput, 'base64')]);
}

/** What a path given as text (a command's argument) leads to when a name on it is not valid UTF-8. */
export interface RawPathProblem {
  /** The path's bytes on disk. */
  raw: Buffer;
  /** Why it cannot be used: RAW_NAME_TEXTS.file or .folder, naming the path as given, escaped. */
  reason: string;
}

/**
 * The problem of a path that the command line handed over with U+FFFD in place of bytes that are not
 * valid UTF-8 (Node decodes arguments so, and then nothing opens the file): the names on its way are
 * looked up as bytes in their folders, and when exactly one entry decodes as each does and the whole
 * leads somewhere, the file (or a folder on its way; `last` says what the path names) is named escaped
 * as discovery names it. Null when
 * the path holds no U+FFFD or no such entry is found (the caller says the path does not exist).
 *
 * @example rawPathProblem('caf\uFFFD.jpg')?.reason // "file name is not valid UTF-8: caf$'\\xe9'.jpg; rename it"
 */
export function rawPathProblem(path: string, last: 'file' | 'folder' = 'file'): RawPathProblem | null {
  if (!path.includes('\uFFFD')) return null;
  const parts = path.split('/');
  let raw: Buffer = Buffer.alloc(0);
  const shown: string[] = [];
  let badFolder: string | null = null;
  for (const [i, part] of parts.entries()) {
    let name: Buffer = Buffer.from(part);
    if (part.includes('\uFFFD')) {
      let names: Buffer[];
      try {
        names = readdirSync(raw.length > 0 ? raw : '.', { encoding: 'buffer' });
      } catch {
        return null;
      }
      const matches = names.filter((n) => !isUtf8(n) && n.toString('utf8') === part);
      if (matches.length !== 1) return null;
      name = matches[0] as Buffer;
    }
    shown.push(escapedName(name));
    if (!isUtf8(name) && (i < parts.length - 1 || last === 'folder')) badFolder ??= shown.join('/');
    raw = i === 0 ? name : Buffer.concat([raw, Buffer.from('/'), name]);
  }
  if (!existsSync(raw)) return null;
  const reason = badFolder === null ? RAW_NAME_TEXTS.file(shown.join('/')) : RAW_NAME_TEXTS.folder(badFolder);
  return { raw, reason };
}
