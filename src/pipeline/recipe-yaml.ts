/**
 * The YAML side of recipes: parsing with yaml's Document API so that every value keeps the line it was
 * written on, and turning field paths into lines and back into text.
 */
import { type Document, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';

/** A path to a value: map keys and sequence indexes. */
export type FieldPath = ReadonlyArray<string | number>;

/** A parsed recipe file with what is needed to locate its values. */
export interface ParsedYaml {
  doc: Document.Parsed;
  lines: LineCounter;
  /** Syntax problems: line and message (yaml's first line, without its position suffix). */
  errors: Array<{ line: number; message: string }>;
}

/**
 * Parses YAML text into a Document. Syntax errors (including duplicate keys) are returned, not thrown.
 *
 * @example const { doc, errors } = parseYaml('rules: []');
 */
export function parseYaml(text: string): ParsedYaml {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const errors = doc.errors.map((e) => ({
    line: lines.linePos(e.pos[0]).line,
    message: e.message
      .split('\n')[0]!
      .replace(/ at line \d+, column \d+:?$/, '')
      .trim(),
  }));
  return { doc, lines, errors };
}

/**
 * `rules[0].request.video.hdr` from `['rules', 0, 'request', 'video', 'hdr']`.
 *
 * @example formatPath(['image_ref', 2, 'url']) // 'image_ref[2].url'
 */
export function formatPath(path: FieldPath): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out;
}

/**
 * `['image_ref', 2, 'url']` from `image_ref[2].url`.
 *
 * @example parsePath('video.keyframes[1]') // ['video', 'keyframes', 1]
 */
export function parsePath(text: string): Array<string | number> {
  const out: Array<string | number> = [];
  for (const m of text.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[1] !== undefined) out.push(m[1]);
  }
  return out;
}

function lineOfNode(parsed: ParsedYaml, node: unknown): number | null {
  const range = (node as { range?: [number, number, number] } | null)?.range;
  return range ? parsed.lines.linePos(range[0]).line : null;
}

/**
 * The line a value was written on, found by walking `path` from the document root. For a map member the
 * line of its key is given; when the path goes deeper than the document does, the line of the deepest
 * value that exists. Line 1 when nothing can be located.
 *
 * @example lineAt(parsed, ['rules', 0, 'match']) // 2
 */
export function lineAt(parsed: ParsedYaml, path: FieldPath): number {
  let node: unknown = parsed.doc.contents;
  let line = lineOfNode(parsed, node) ?? 1;
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find(
        (p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg),
      );
      if (!pair) break;
      line = lineOfNode(parsed, pair.key) ?? line;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number') {
      const item = node.items[seg];
      if (item === undefined) break;
      line = lineOfNode(parsed, item) ?? line;
      node = item;
    } else {
      break;
    }
  }
  return line;
}
