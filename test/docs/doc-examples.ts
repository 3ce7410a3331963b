/**
 * The example commands of the user docs (README.md and docs/*.md), read as test/docs/doc-examples.test.ts
 * runs them.
 *
 * An example is a fenced ```sh or ```bash block holding at least one genpipe command: a logical line
 * (continued with a trailing `\`) that starts, after any `NAME=value` assignments, with `npx genpipe`,
 * `genpipe` or `node bin/genpipe.js`. The block's other lines are its set-up: a line whose first word is
 * one of SETUP_WORDS (`mkdir`, `cp`, `cat > file <<'EOF'` with its here-document, `export`, ...) runs
 * in its place; any other line (`npm ci`, `ffmpeg ...`) is not run, the checkout being installed already.
 *
 * An HTML comment on the line before the block's fence (blank lines between allowed) changes what is
 * expected of it; it is not rendered:
 * - `<!-- example: skip (reason) -->`: not run, listed as skipped with the reason. For what a test cannot
 *   have: a real PostgreSQL, several machines, a network share, a fixed port that may be taken.
 * - `<!-- example: exit N (reason) -->`: every genpipe command of the block must exit with N (default:
 *   0), as an example on an id the emulator does not know answers 404 (exit 1).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** First words of the set-up lines a block may hold, run in their place. */
export const SETUP_WORDS = new Set(['mkdir', 'cp', 'mv', 'cat', 'echo', 'printf', 'touch', 'export', 'cd']);

/** `genpipe`, `npx genpipe` or `node bin/genpipe.js` after optional NAME=value assignments. */
const GENPIPE_COMMAND =
  /^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:npx\s+genpipe|genpipe|node\s+bin\/genpipe\.js)(?:\s|$)/;
const ANNOTATION = /^<!-- example: (skip|exit (\d+)) \((.+)\) -->$/;
const HEREDOC = /<<-?\s*'?"?([A-Za-z_]+)'?"?/;

export interface ExampleLine {
  /** The 1-based line of the docs file where it starts. */
  line: number;
  /** The text as a shell reads it (continuations and a here-document included). */
  text: string;
  kind: 'genpipe' | 'setup' | 'not run';
}

export interface ExampleBlock {
  /** The docs file, relative to the package root. */
  file: string;
  /** The 1-based line of the opening fence. */
  line: number;
  lines: ExampleLine[];
  /** null: run it; else why it is not run. */
  skip: string | null;
  /** The exit code each of its genpipe commands must end with. */
  exit: number;
  /** Why that code, when it is not 0. */
  exitReason: string | null;
}

/** The docs whose examples run: README.md, then docs/*.md by name (not the generated docs/commands). */
export async function docFiles(root: string): Promise<string[]> {
  const names = (await readdir(join(root, 'docs'))).filter((n) => n.endsWith('.md')).sort();
  return ['README.md', ...names.map((n) => `docs/${n}`)];
}

function kindOf(text: string): ExampleLine['kind'] {
  if (GENPIPE_COMMAND.test(text)) return 'genpipe';
  const first = text.trim().split(/\s+/)[0] ?? '';
  return SETUP_WORDS.has(first) ? 'setup' : 'not run';
}

/** A block's body as logical lines: comments and blank lines dropped, `\` continuations and here-documents joined. */
function logicalLines(body: string[], firstLine: number): ExampleLine[] {
  const found: ExampleLine[] = [];
  for (let i = 0; i < body.length; i++) {
    const start = i;
    let text = body[i]!;
    if (text.trim() === '' || text.trim().startsWith('#')) continue;
    while (text.endsWith('\\') && i + 1 < body.length) text = `${text}\n${body[++i]}`;
    const heredoc = HEREDOC.exec(text);
    if (heredoc) {
      while (i + 1 < body.length && body[i] !== heredoc[1]) text = `${text}\n${body[++i]}`;
    }
    found.push({ line: firstLine + start, text, kind: kindOf(text) });
  }
  return found;
}

/**
 * The example blocks of one docs file.
 * @throws Error naming the file and line of an annotation that is not one of the forms above, or of a
 *   fence that is never closed
 */
export function examplesIn(file: string, text: string): ExampleBlock[] {
  const lines = text.split('\n');
  const blocks: ExampleBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const close = lines.findIndex((l, j) => j > i && /^```\s*$/.test(l));
    if (close < 0) throw new Error(`${file}:${i + 1}: this code block is never closed`);
    const body = lines.slice(i + 1, close);
    const start = i;
    i = close;
    if (fence[1] !== 'sh' && fence[1] !== 'bash') continue;
    const parsed = logicalLines(body, start + 2);
    if (!parsed.some((l) => l.kind === 'genpipe')) continue;
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === '') before--;
    const comment = before >= 0 ? lines[before]!.trim() : '';
    const annotation = ANNOTATION.exec(comment);
    if (!annotation && comment.startsWith('<!-- example')) {
      throw new Error(
        `${file}:${before + 1}: '${comment}' is not an example annotation: write <!-- example: skip (why) --> or <!-- example: exit N (why) -->`,
      );
    }
    blocks.push({
      file,
      line: start + 1,
      lines: parsed,
      skip: annotation?.[1] === 'skip' ? annotation[3]! : null,
      exit: annotation?.[2] === undefined ? 0 : Number(annotation[2]),
      exitReason: annotation?.[2] === undefined ? null : annotation[3]!,
    });
  }
  return blocks;
}

/** Every example block of the docs. */
export async function allExamples(root: string): Promise<ExampleBlock[]> {
  const blocks: ExampleBlock[] = [];
  for (const file of await docFiles(root))
    blocks.push(...examplesIn(file, await readFile(join(root, file), 'utf8')));
  return blocks;
}
