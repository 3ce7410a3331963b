/**
 * Sidecars: `<file>.json` beside an input holds request fields that override the rule's request for
 * that file alone. A broken sidecar fails its own item with a reason naming the sidecar; the batch goes on.
 */
import { lstat, readFile } from 'node:fs/promises';
import { describeValue } from '../spec/index.ts';
import {
  getAt,
  imageRefPositions,
  isObject,
  type Json,
  type ReferenceKind,
  resolveReferences,
} from './recipe-request.ts';
import { formatPath } from './recipe-yaml.ts';
import { utf8Text } from './utf8-text.ts';

/** What is appended to an input's name to name its sidecar. */
export const SIDECAR_SUFFIX = '.json';
/** Largest sidecar read (a sidecar holds a few request fields, never media). */
export const SIDECAR_MAX_BYTES = 1024 * 1024;

export type SidecarResult = { ok: true; fields: Json | null } | { ok: false; reason: string };

/** "… at position 12" → "… at line 2 column 5", for a JSON.parse message about `text`. */
function jsonWhy(err: unknown, text: string): string {
  let msg = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim();
  const at = /(?: in JSON)? at position (\d+)(?: \(line \d+ column \d+\))?/.exec(msg);
  if (at) {
    const pos = Number(at[1]);
    const before = text.slice(0, pos);
    const line = before.split('\n').length;
    const column = pos - before.lastIndexOf('\n');
    msg = `${msg.slice(0, at.index)} at line ${line} column ${column}`;
  }
  return msg.length > 200 ? `${msg.slice(0, 199)}…` : msg;
}

/**
 * Reads the sidecar at `path`, if there is one, and resolves its `{ ref: <name> }` entries against the
 * recipe's references.
 *
 * @param path - absolute path of `<input>.json`
 * @param name - the sidecar as reasons name it: its path relative to the input dir
 * @param references - the recipe's references by name
 * @returns `{ ok: true, fields: null }` when there is no sidecar, the fields when it is sound, or a
 *   reason naming the sidecar and its problem
 * @example await readSidecar('/in/a/photo.jpg.json', 'a/photo.jpg.json', recipe.references)
 */
export async function readSidecar(
  path: string,
  name: string,
  references: Readonly<Record<string, ReferenceKind>>,
): Promise<SidecarResult> {
  let st: Awaited<ReturnType<typeof lstat>>;
  try {
    st = await lstat(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ENAMETOOLONG: the input's name is so long that `<name>.json` cannot be a file's name.
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENAMETOOLONG') return { ok: true, fields: null };
    return { ok: false, reason: `sidecar ${name} could not be read (${code ?? 'error'})` };
  }
  if (st.isDirectory()) return { ok: true, fields: null };
  if (st.isSymbolicLink()) {
    return { ok: false, reason: `sidecar ${name} is a symbolic link; a sidecar must be a regular file` };
  }
  if (!st.isFile()) return { ok: false, reason: `sidecar ${name} is not a regular file` };
  if (st.size > SIDECAR_MAX_BYTES) {
    return {
      ok: false,
      reason: `sidecar ${name} is too large (${st.size} bytes; a sidecar holds request fields, at most ${SIDECAR_MAX_BYTES} bytes)`,
    };
  }
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (err) {
    return {
      ok: false,
      reason: `sidecar ${name} could not be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    };
  }
  const decoded = utf8Text(bytes);
  if (!decoded.ok) return { ok: false, reason: `sidecar ${name}: ${decoded.reason}` };
  let text = decoded.text;
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, reason: `sidecar ${name} is not valid JSON: ${jsonWhy(err, text)}` };
  }
  if (!isObject(value)) {
    return {
      ok: false,
      reason: `sidecar ${name} must hold a JSON object of request fields, not ${describeValue(value)}`,
    };
  }
  const problems = resolveReferences(value, references);
  // A chain rule's sidecar may override its steps one by one: `steps: { <step>: { fields } }`.
  const steps = value.steps;
  if (steps !== undefined && !isObject(steps)) {
    return {
      ok: false,
      reason: `sidecar ${name}: steps must be an object of step name: request fields, not ${describeValue(steps)}`,
    };
  }
  for (const [step, fields] of Object.entries(steps ?? {})) {
    if (!isObject(fields)) {
      return {
        ok: false,
        reason: `sidecar ${name}: steps.${step} must be an object of request fields, not ${describeValue(fields)}`,
      };
    }
    const more = resolveReferences(fields, references);
    problems.push(...more.map((p) => ({ ...p, path: ['steps', step, ...p.path] })));
  }
  const from =
    fromIn(value, []) ??
    Object.entries(steps ?? {})
      .map(([step, f]) => fromIn(f as Json, ['steps', step]))
      .find((x) => x !== null);
  if (from)
    return { ok: false, reason: `sidecar ${name}: ${formatPath(from.path)}: ${SIDECAR_FROM(from.parent)}` };
  if (problems.length > 0) {
    const p = problems[0]!;
    return { ok: false, reason: `sidecar ${name}: ${formatPath(p.path)}: ${p.message}` };
  }
  return { ok: true, fields: value };
}

/** Why a sidecar cannot say `{ from: <step> }`. */
const SIDECAR_FROM = (parent: unknown) =>
  `a sidecar cannot say { from: ${typeof parent === 'string' ? parent : JSON.stringify(parent)} }: which step's output a step takes is the recipe's (write it in the rule's steps); a sidecar may change a step's other fields`;

/** The first `{ from }` at a media position of `fields` (a sidecar's, at `prefix`), or null. */
function fromIn(
  fields: Json,
  prefix: Array<string | number>,
): { path: Array<string | number>; parent: unknown } | null {
  for (const path of imageRefPositions(fields)) {
    const ref = getAt(fields, path);
    if (isObject(ref) && 'from' in ref) return { path: [...prefix, ...path], parent: ref.from };
  }
  return null;
}
