/**
 * How the docs name a command and its parts, shared by the command pages (scripts/command-pages.ts)
 * and the tests that read the commands' definitions: the words after `genpipe`, the options `--help`
 * shows, an argument as the usage line writes it, and table-safe text.
 */
import type { Argument, Command, Option } from 'commander';

/** A command's words after `genpipe`: `files upload`. */
export function commandPath(cmd: Command): string {
  const words: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

/** The options `--help` lists (hidden ones left out). */
export function visibleOptions(cmd: Command): Option[] {
  return cmd.options.filter((o) => !o.hidden);
}

/** Markdown table cell text: no table breaks, no HTML tags, no emphasis. */
export function cell(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/([\\|<*])/g, '\\$1');
}

/** `<input-dir>`, `[files...]`: an argument as a usage line writes it. */
export function argumentWord(arg: Argument): string {
  const name = `${arg.name()}${arg.variadic ? '...' : ''}`;
  return arg.required ? `<${name}>` : `[${name}]`;
}
