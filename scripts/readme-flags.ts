/**
 * README.md's flag tables, written from the commander definitions of src/cli, so that the README and
 * `--help` cannot say different things. A block between `<!-- flags:<command> -->` and
 * `<!-- /flags:<command> -->` (`<command>` as typed after `genpipe`: `run`, `files upload`, ...) gets
 * the command's synopsis and a table of its arguments and options, each described with the text
 * `--help` shows (src/cli/option-help.ts). The connection options (--api-key, --base-url,
 * --legacy-base-url, --legacy-token) are shared by most commands: they get one table of their own, in
 * the block `<!-- flags:connection -->`, and the other tables point to it.
 *
 * `npm run docs` rewrites the blocks (scripts/docs.ts); test/scripts/readme-flags.test.ts
 * fails when README.md differs from what it would write.
 */
import type { Argument, Command, Option } from 'commander';
import { isRequired, optionHelpText } from '../src/cli/option-help.ts';
import { buildProgram } from '../src/cli/program.ts';
import { serviceFlagHelp } from '../src/cli/service-config.ts';

/** The block that holds the connection options' table. */
export const CONNECTION_BLOCK = 'connection';
/** Where the other tables link to for the connection options (the README heading above that block). */
export const CONNECTION_ANCHOR = '#connection-options';
/** Synopsis lines are wrapped at this width. */
const SYNOPSIS_WIDTH = 100;

const CONNECTION_FLAGS = new Set(serviceFlagHelp().map(([flags]) => flags));
const BLOCK = /<!-- flags:([^>]*?) -->\n[\s\S]*?<!-- \/flags:\1 -->/g;

/** A command's words after `genpipe`: `files upload`. */
export function commandPath(cmd: Command): string {
  const words: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

export function visibleOptions(cmd: Command): Option[] {
  return cmd.options.filter((o) => !o.hidden);
}

function isConnection(option: Option): boolean {
  return CONNECTION_FLAGS.has(option.flags);
}

/** Every command and subcommand that takes options, in the order `--help` lists them. */
export function documentedCommands(program: Command): Command[] {
  const found: Command[] = [];
  const walk = (cmd: Command) => {
    for (const sub of cmd.commands) {
      if (visibleOptions(sub).length > 0) found.push(sub);
      walk(sub);
    }
  };
  walk(program);
  return found;
}

/** Markdown table cell text: no table breaks, no HTML tags, no emphasis. */
export function cell(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/([\\|<*])/g, '\\$1');
}

export function argumentWord(arg: Argument): string {
  const name = `${arg.name()}${arg.variadic ? '...' : ''}`;
  return arg.required ? `<${name}>` : `[${name}]`;
}

/** `-o, --out <out-dir>` → `--out <out-dir>`. */
function longForm(option: Option): string {
  return option.flags.replace(/^-\w, /, '');
}

/** `genpipe run <input-dir> --out <out-dir> [--recipe <file>] ...`, wrapped under its first word. */
function synopsis(cmd: Command): string {
  const options = visibleOptions(cmd).filter((o) => !isConnection(o));
  const words = [
    ...cmd.registeredArguments.map(argumentWord),
    ...options.filter(isRequired).map(longForm),
    ...options.filter((o) => !isRequired(o)).map((o) => `[${longForm(o)}]`),
    ...(visibleOptions(cmd).some(isConnection) ? ['[connection options]'] : []),
  ];
  const head = `genpipe ${commandPath(cmd)}`;
  const indent = ' '.repeat(head.length + 1);
  const lines = [head];
  for (const word of words) {
    const last = lines.length - 1;
    if (`${lines[last]} ${word}`.length > SYNOPSIS_WIDTH) lines.push(indent + word);
    else lines[last] = `${lines[last]} ${word}`;
  }
  return lines.join('\n');
}

export function table(rows: Array<[string, string]>): string {
  return ['| option | meaning |', '|---|---|', ...rows.map(([k, v]) => `| \`${k}\` | ${cell(v)} |`)].join(
    '\n',
  );
}

function commandBlock(cmd: Command): string {
  const rows: Array<[string, string]> = [
    ...cmd.registeredArguments
      .filter((a) => a.description)
      .map((a): [string, string] => [argumentWord(a), a.description]),
    ...visibleOptions(cmd)
      .filter((o) => !isConnection(o))
      .map((o): [string, string] => [o.flags, optionHelpText(o)]),
  ];
  const parts = [`\`\`\`\n${synopsis(cmd)}\n\`\`\``, table(rows)];
  if (visibleOptions(cmd).some(isConnection)) {
    parts.push(`Also the [connection options](${CONNECTION_ANCHOR}).`);
  }
  return parts.join('\n\n');
}

/**
 * The connection options' table, from the commands that take them.
 * @throws Error when two commands describe one of them differently (the table could not be shared)
 */
function connectionBlock(commands: Command[]): string {
  const seen = new Map<string, { text: string; where: string }>();
  for (const cmd of commands) {
    for (const option of visibleOptions(cmd).filter(isConnection)) {
      const text = optionHelpText(option);
      const earlier = seen.get(option.flags);
      if (earlier && earlier.text !== text) {
        throw new Error(
          `${option.flags} is described differently by 'genpipe ${earlier.where}' and 'genpipe ${commandPath(cmd)}': ` +
            'the connection options share one table, so their descriptions must be the same',
        );
      }
      if (!earlier) seen.set(option.flags, { text, where: commandPath(cmd) });
    }
  }
  return table([...seen].map(([flags, { text }]) => [flags, text]));
}

/**
 * README text with every flag block rewritten from the program's commands.
 *
 * @param readme - README.md's text
 * @param program - the program with every command registered (default: buildProgram's)
 * @throws Error naming a block of no command, or the commands with options that have no block
 * @example await writeFile('README.md', await renderFlagTables(await readFile('README.md', 'utf8')));
 */
export async function renderFlagTables(readme: string, program?: Command): Promise<string> {
  const root = program ?? (await buildProgram(['node', 'genpipe']));
  const commands = documentedCommands(root);
  const byPath = new Map(commands.map((c) => [commandPath(c), c]));
  const written = new Set<string>();
  const blocks: string[] = [];
  const out = readme.replace(BLOCK, (_whole, name: string) => {
    let body: string;
    if (name === CONNECTION_BLOCK) body = connectionBlock(commands);
    else {
      const cmd = byPath.get(name);
      if (!cmd) {
        throw new Error(
          `<!-- flags:${name} --> names no command with options (commands: ${[...byPath.keys()].join(', ')})`,
        );
      }
      body = commandBlock(cmd);
    }
    written.add(name);
    blocks.push(name);
    return `<!-- flags:${name} -->\n\n${body}\n\n<!-- /flags:${name} -->`;
  });
  const unclosed = [...readme.matchAll(/<!-- flags:([^>]*?) -->/g)].map((m) => m[1]!);
  for (const name of blocks) unclosed.splice(unclosed.indexOf(name), 1);
  if (unclosed.length > 0) {
    throw new Error(`no closing <!-- /flags:NAME --> for: ${unclosed.join(', ')}`);
  }
  const missing = [...byPath.keys()].filter((name) => !written.has(name));
  if (commands.some((c) => visibleOptions(c).some(isConnection))) {
    if (!written.has(CONNECTION_BLOCK)) missing.push(CONNECTION_BLOCK);
  }
  if (missing.length > 0) {
    throw new Error(
      `README.md has no flag table for: ${missing.join(', ')}. ` +
        'Add <!-- flags:NAME --> <!-- /flags:NAME --> where each belongs, then run `npm run docs`',
    );
  }
  return out;
}
