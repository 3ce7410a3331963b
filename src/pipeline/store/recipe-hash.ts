/**
 * The recipe hash of an item: what, besides the input's own bytes, decides the result it gets. A
 * changed recipe hash redoes the item; an unchanged one lets a later run reuse its work.
 *
 * Hashed (canonical JSON, then sha256), version {@link RECIPE_HASH_VERSION}:
 * - `request`: the planned request exactly as plan made it: the matching rule's request with the
 *   file's sidecar merged over it and the file placed at its `input_as` position (the prompt text of a
 *   prompt file included), media still as placeholders (`$input`, `$ref:<name>`), so it is the same on
 *   every run; a legacy request's `$input` media carries the mark of the rule's media_url
 *   (legacy-media-url.ts mediaUrlMark), so a changed media_url is a changed recipe;
 * - `input_as`: where the file goes;
 * - `references`: the content hash of every shared reference the request uses, by name (a changed
 *   style image changes every result that uses it);
 * - `service`: who produces the result (the service's base URL, or `emulator`), when given.
 *
 * Not hashed, because they do not change the result: the rule's index and glob (reordering rules or
 * rewriting a glob that still picks the same request keeps finished work), the rule's `upload` mode,
 * the recipe file's name and place, and the API key.
 */
import { createHash } from 'node:crypto';
import type { Item } from '../item.ts';

/** Bumped when what goes into the recipe hash changes (every item is then redone once). */
export const RECIPE_HASH_VERSION = 1;

const REF_PREFIX = '$ref:';

/**
 * JSON with object keys sorted (by UTF-16 code unit) at every depth and no whitespace: equal values
 * give equal text whatever the order their keys were written in. `undefined` members are left out, as
 * JSON.stringify does.
 *
 * @throws TypeError for a non-finite number, a bigint or a function
 * @example canonicalJson({ b: 1, a: [2, { d: 3, c: 4 }] }) // '{"a":[2,{"c":4,"d":3}],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonicalJson: ${value} has no JSON form`);
      return JSON.stringify(value);
    case 'object': {
      if (Array.isArray(value)) {
        return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
    }
    default:
      throw new TypeError(`canonicalJson: a ${typeof value} has no JSON form`);
  }
}

/** sha256 (hex) of a string's UTF-8 bytes. */
export function sha256Text(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The names of the shared references (`{ file_id: '$ref:<name>' }`) a planned request uses, sorted. */
export function referencesUsed(request: unknown): string[] {
  const names = new Set<string>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) walk(x);
    } else if (typeof v === 'object' && v !== null) {
      const o = v as Record<string, unknown>;
      if (typeof o.file_id === 'string' && o.file_id.startsWith(REF_PREFIX)) {
        names.add(o.file_id.slice(REF_PREFIX.length));
      }
      for (const x of Object.values(o)) walk(x);
    }
  };
  walk(request);
  return [...names].sort();
}

/**
 * The recipe hash of a planned item (see the module comment).
 *
 * @param item - the item as plan left it (state `planned`; later states hold real file ids instead of
 *   placeholders, so the hash must be taken before upload)
 * @param referenceHashes - content hash of each shared reference by name (at least those used)
 * @param service - who produces the result, e.g. the service's base URL; omitted from the hash when absent
 * @throws Error when the request uses a reference whose content hash is not given
 * @example recipeHash(plannedItem, { style: 'ab12…' }, 'https://api.example.com')
 */
export function recipeHash(
  item: Pick<Item, 'steps' | 'inputAs'>,
  referenceHashes: Readonly<Record<string, string>> = {},
  service?: string,
): string {
  // One step (a single-request rule) hashes as its request alone, as items did before they had steps.
  const request = item.steps.length <= 1 ? (item.steps[0]?.request ?? null) : null;
  const steps =
    item.steps.length > 1 ? item.steps.map((s) => ({ name: s.name, request: s.request })) : undefined;
  const references: Record<string, string> = {};
  for (const name of item.steps.flatMap((s) => referencesUsed(s.request))) {
    const hash = referenceHashes[name];
    if (hash === undefined) throw new Error(`recipeHash: no content hash for shared reference '${name}'`);
    references[name] = hash;
  }
  return sha256Text(
    canonicalJson({
      v: RECIPE_HASH_VERSION,
      request,
      ...(steps ? { steps } : {}),
      input_as: item.inputAs ?? null,
      references,
      service,
    }),
  );
}
