/**
 * The shape of a failure reason: its text with the details that differ from file to file — numbers
 * (sizes, durations, counts), ids (request, generation and file ids), paths, file names and quoted
 * values — taken out, and the fixed words kept. Reasons of one cause have one shape
 * (`source: image is 9000x30px but …` and `source: image is 8200x8200px but …`), so report.html
 * counts failures by it (failure-groups.ts).
 *
 * What is kept as a fixed word: words without a digit, HTTP statuses (`HTTP 502` is another cause than
 * `HTTP 404`), and quoted plain words such as a type or a state (`type 'video_edit'`, `state 'pending'`).
 */

/** A reason cut into fixed text and details: `literals[0] details[0] literals[1] …`. */
export interface ReasonShape {
  /** The fixed text with a placeholder for each detail: equal for reasons of one shape. */
  key: string;
  /** The fixed text around the details (one more than the details). */
  literals: string[];
  /** The details, in order. */
  details: string[];
}

/**
 * One detail or one kept word, leftmost first (the alternatives in this order at one place; a path, a
 * name or a token starts where a word starts, so that a word is tried once, not from each of its letters):
 * - `HTTP 502`, `status 404`: kept;
 * - a quoted value (`'…'`, `"…"`, `‘…’`, `“…”`) opened after a space, a bracket, `=`, `:` or `,` (not an
 *   apostrophe in a word) and closed before a non-word character: a detail unless a plain word;
 * - a token with a `/` (a path, a URL, a MIME type): a detail;
 * - a file name with a common extension (`fox.txt`): a detail;
 * - a token with a digit (`9000x30px`, `12.5s`, `7f3a…-…`, `gen-41`, `img-000123`, `127.0.0.1:8787`):
 *   a detail.
 */
const DETAIL =
  /\b(?:HTTP|status) [1-5]\d\d\b|(?<=^|[\s([{=:,])(?:'[^'\n]*'|"[^"\n]*"|‘[^’\n]*’|“[^”\n]*”)(?=$|[^\p{L}\p{N}_])|(?<![^\s'"()[\]{},;<>])[^\s'"()[\]{},;<>]*\/[^\s'"()[\]{},;<>]*[^\s'"()[\]{},;<>.:]|(?<![\p{L}\p{N}_.~@+-])(?:[\p{L}\p{N}_~@+-]+(?:\.[\p{L}\p{N}_~@+-]+)*\.(?:png|jpe?g|webp|gif|heic|heif|avif|tiff?|bmp|exr|mp4|mov|webm|mkv|avi|m4v|txt|md|json|ya?ml|psd)\b|[\p{L}\p{N}_~@+-]*\d(?:[\p{L}\p{N}_.:~@+-]*[\p{L}\p{N}_])?)/giu;

/** A quoted plain word (a type, a state, a field): kept as a fixed word. */
const PLAIN_QUOTED = /^['"‘“][A-Za-z_]{1,32}['"’”]$/;
/** A kept status. */
const STATUS = /^(?:HTTP|status) /i;

/** The placeholder of a detail in a shape's key. */
const MARK = '\u0000';

/**
 * A reason's shape (see the module comment).
 *
 * @example reasonShape('source: image is 9000x30px but each side must be <= 8000px. Resize and try again.')
 * // { key: 'source: image is \0 but each side must be <= \0. Resize and try again.',
 * //   literals: ['source: image is ', ' but each side must be <= ', '. Resize and try again.'],
 * //   details: ['9000x30px', '8000px'] }
 */
export function reasonShape(reason: string): ReasonShape {
  const literals: string[] = [];
  const details: string[] = [];
  let text = '';
  let from = 0;
  for (const m of reason.matchAll(DETAIL)) {
    const word = m[0];
    if (word === '' || STATUS.test(word) || PLAIN_QUOTED.test(word)) continue;
    text += reason.slice(from, m.index);
    literals.push(text);
    details.push(word);
    text = '';
    from = m.index + word.length;
  }
  literals.push(text + reason.slice(from));
  return { key: literals.join(MARK), literals, details };
}
