/**
 * docs/commands/genpipe-<command>[-<sub>].md, one page per command and subcommand, written from the
 * commander definitions of src/cli (as rclone writes its command pages): the description, the usage
 * line, the arguments and options as `--help` shows them (grouped as it groups them), the examples
 * `--help` ends with (src/cli/command-examples.ts), the exit codes (COMMAND_EXITS of
 * src/cli/exit-codes.ts) and links to the parent, sibling and sub commands and to the guide page that
 * explains the command (docs/*.md, else the README).
 *
 * `npm run docs` writes them (scripts/docs.ts); test/scripts/command-pages.test.ts fails when a page
 * differs, is missing or is no command's.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Command, Help, type Option } from 'commander';
import { examplesOf } from '../src/cli/command-examples.ts';
import { COMMAND_EXITS, EXIT, type ExitMeanings } from '../src/cli/exit-codes.ts';
import { optionHelpText } from '../src/cli/option-help.ts';
import { buildProgram, commandDefinedIn } from '../src/cli/program.ts';
import { argumentWord, cell, commandPath, visibleOptions } from './command-words.ts';

/** Where the pages are, relative to the package root. */
export const PAGES_DIR = 'docs/commands';
/** A file of PAGES_DIR that is a generated page (any other file there is left alone). */
export const PAGE_FILE = /^genpipe-[a-z-]+\.md$/;

/** The page's file name: `genpipe-files-upload.md`. */
export function pageFile(cmd: Command): string {
  return `genpipe-${commandPath(cmd).replace(/ /g, '-')}.md`;
}

/** Every command and subcommand, in the order `--help` lists them. */
function allCommands(program: Command): Command[] {
  const found: Command[] = [];
  const walk = (cmd: Command) => {
    for (const sub of cmd.commands) {
      found.push(sub);
      walk(sub);
    }
  };
  walk(program);
  return found;
}

function topLevel(cmd: Command): Command {
  let top = cmd;
  while (top.parent?.parent) top = top.parent;
  return top;
}

/**
 * The guides a page links to for the command, by path relative to PAGES_DIR (`../run.md`), in the
 * order they are searched: the first with a heading about the command wins.
 */
export type Guides = ReadonlyMap<string, string>;

/** The README, where a guide page lacks a command. */
const README_LINK = '../../README.md';

/**
 * The first guide heading about the command (`## \`genpipe files list\`, \`files get\`` for `files get`),
 * as a markdown link: to the page when it is the page's title, else to the heading.
 */
function guideLink(cmd: Command, guides: Guides): string {
  const path = commandPath(cmd);
  const sub = path.includes(' ') ? path : null;
  for (const [file, text] of guides) {
    const heading = text
      .split('\n')
      .filter((line) => /^#{1,4} /.test(line))
      .find((line) => line.includes(`\`genpipe ${path}\``) || (sub !== null && line.includes(`\`${sub}\``)));
    if (heading === undefined) continue;
    const title = heading.replace(/^#+ /, '');
    if (heading.startsWith('# ')) return `[${title}](${file})`;
    const anchor = title
      .toLowerCase()
      .replace(/[^a-z0-9 _-]/g, '')
      .replace(/ /g, '-');
    return `[${title}](${file}#${anchor})`;
  }
  // A group (`files`): the section of its first command.
  const [first] = cmd.commands;
  return first === undefined ? `[README](${README_LINK})` : guideLink(first, guides);
}

function mdTable(head: [string, string], rows: Array<[string, string]>): string {
  return [`| ${head[0]} | ${head[1]} |`, '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${cell(v)} |`)].join(
    '\n',
  );
}

/** The options as `--help` lists them: one table per help group (commander's groupItems). */
function optionsSection(cmd: Command): string[] {
  const shown = visibleOptions(cmd);
  if (shown.length === 0) return [];
  const groups = new Help().groupItems(
    [...cmd.options],
    shown,
    (o: Option) => o.helpGroupHeading ?? 'Options:',
  );
  const tables = [...groups]
    .filter(([, options]) => options.length > 0)
    .map(([heading, options]) => ({
      heading: heading.replace(/:$/, ''),
      table: mdTable(
        ['option', 'meaning'],
        (options as Option[]).map((o) => [`\`${o.flags}\``, optionHelpText(o)]),
      ),
    }));
  if (tables.length === 1) return ['## Options', tables[0]!.table];
  return ['## Options', ...tables.flatMap(({ heading, table }) => [`### ${heading}`, table])];
}

function examplesSection(cmd: Command): string[] {
  const set = examplesOf(cmd);
  if (set === undefined) return [];
  const all = set.setup === undefined ? set.examples : [set.setup, ...set.examples];
  const body = all.map(({ comment, line }) => `# ${comment}\n${line}`).join('\n\n');
  return ['## Examples', `\`\`\`sh\n${body}\n\`\`\``];
}

/** @throws Error naming the command when src/cli/exit-codes.ts does not say what its exit codes mean */
function exitCodesSection(cmd: Command, exits: Readonly<Record<string, ExitMeanings>>): string[] {
  const meanings = exits[commandPath(cmd)];
  if (meanings === undefined) {
    throw new Error(
      `src/cli/exit-codes.ts: COMMAND_EXITS has no entry for 'genpipe ${commandPath(cmd)}': say what each exit code it can end with means`,
    );
  }
  const rows = Object.entries(meanings).map(([code, meaning]): [string, string] => [
    Number(code) === EXIT.interrupted ? `${EXIT.interrupted} / ${EXIT.terminated}` : code,
    meaning,
  ]);
  return ['## Exit codes', mdTable(['code', 'meaning'], rows)];
}

function link(cmd: Command): string {
  return `[\`genpipe ${commandPath(cmd)}\`](${pageFile(cmd)})`;
}

function seeAlso(cmd: Command, guides: Guides): string[] {
  const items: string[] = [];
  const parent = cmd.parent?.parent ? cmd.parent : null;
  if (parent) items.push(`${link(parent)}: ${parent.description()}`);
  for (const sub of cmd.commands) items.push(`${link(sub)}: ${sub.description()}`);
  for (const sibling of parent?.commands ?? []) {
    if (sibling !== cmd) items.push(`${link(sibling)}: ${sibling.description()}`);
  }
  items.push(guideLink(cmd, guides));
  return ['## See also', items.map((item) => `- ${item}`).join('\n')];
}

/** A page's whole text. */
function page(cmd: Command, guides: Guides, exits: Readonly<Record<string, ExitMeanings>>): string {
  const definedIn = commandDefinedIn(topLevel(cmd).name());
  const source = definedIn === undefined ? 'src/cli' : `src/cli/${definedIn}`;
  const args = cmd.registeredArguments.map((a): [string, string] => [
    `\`${argumentWord(a)}\``,
    a.description,
  ]);
  const subs = cmd.commands.map((s): [string, string] => [link(s), s.description()]);
  const sections = [
    `<!-- generated by npm run docs from ${source}; do not edit -->`,
    `# genpipe ${commandPath(cmd)}`,
    cmd.description(),
    '## Usage',
    `\`\`\`\n${new Help().commandUsage(cmd)}\n\`\`\``,
    ...(args.length > 0 ? ['## Arguments', mdTable(['argument', 'meaning'], args)] : []),
    ...(subs.length > 0 ? ['## Commands', mdTable(['command', 'what it does'], subs)] : []),
    ...optionsSection(cmd),
    ...examplesSection(cmd),
    ...exitCodesSection(cmd, exits),
    ...seeAlso(cmd, guides),
  ];
  return `${sections.join('\n\n')}\n`;
}

/**
 * Every page, by file name, from the program's commands.
 *
 * @param guides - the guide pages' texts (readGuides): each page links to the one about its command
 * @param program - the program with every command registered (default: buildProgram's)
 * @param exits - what each command's exit codes mean (default: COMMAND_EXITS)
 * @throws Error naming a command whose exit codes src/cli/exit-codes.ts does not give
 * @example for (const [file, text] of await renderCommandPages(await readGuides(root))) await writeFile(join(PAGES_DIR, file), text);
 */
export async function renderCommandPages(
  guides: Guides,
  program?: Command,
  exits: Readonly<Record<string, ExitMeanings>> = COMMAND_EXITS,
): Promise<Map<string, string>> {
  const root = program ?? (await buildProgram(['node', 'genpipe']));
  return new Map(allCommands(root).map((cmd) => [pageFile(cmd), page(cmd, guides, exits)]));
}

/** The generated pages in `dir` (PAGE_FILE names; none when it does not exist). */
export async function pageFilesIn(dir: string): Promise<string[]> {
  const names = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  return names.filter((name) => PAGE_FILE.test(name)).sort();
}

/**
 * The guides the pages link to, read from the package root: docs/*.md by name, then README.md.
 * @param root - the package root
 */
export async function readGuides(root: string): Promise<Map<string, string>> {
  const docs = join(root, 'docs');
  const names = (await readdir(docs)).filter((name) => name.endsWith('.md')).sort();
  const guides = new Map<string, string>();
  for (const name of names) guides.set(`../${name}`, await readFile(join(docs, name), 'utf8'));
  guides.set(README_LINK, await readFile(join(root, 'README.md'), 'utf8'));
  return guides;
}
