/**
 * A command's examples, declared once next to its definition: `--help` ends with them, and its page in
 * docs/commands/ shows the same ones (scripts/command-pages.ts). Every command with more than three
 * flags has some; test/cli/help-examples.test.ts parses each line against the command it names.
 * Light on purpose: commander's types and words only.
 */
import type { Command } from 'commander';
import { EMULATOR_DEFAULT_KEY } from './print-error.ts';

/** One example: a command line that runs as written, and what it does. */
export interface Example {
  /** What it does, one line. */
  comment: string;
  /** The command line, starting with `genpipe`. */
  line: string;
}

/** A command's examples, and what they assume (a `genpipe serve` running, a variable set). */
export interface Examples {
  /** What the examples assume, shown first: a line to run before them (`export GENPIPE_BASE_URL=…`). */
  setup?: Example;
  examples: Example[];
}

/**
 * The set-up the client commands' examples assume: `genpipe serve` running in another terminal, with
 * its default address and its published default key (not a secret: `genpipe serve` prints it).
 */
export const AGAINST_SERVE: Example = {
  comment: 'with `genpipe serve` running in another terminal: its address and its default API key',
  line: `export GENPIPE_BASE_URL=http://127.0.0.1:4010 GENPIPE_API_KEY=${EMULATOR_DEFAULT_KEY}`,
};

const declared = new WeakMap<Command, Examples>();

/**
 * Gives `cmd` its examples: `--help` ends with them.
 *
 * @example addExamples(cmd, { examples: [{ comment: 'the bundled samples', line: 'genpipe run samples --out out/samples --emulator' }] });
 */
export function addExamples(cmd: Command, examples: Examples): Command {
  declared.set(cmd, examples);
  return cmd.addHelpText('after', () => `\n${examplesText(examples)}`);
}

/** The examples a command was given, if any. */
export function examplesOf(cmd: Command): Examples | undefined {
  return declared.get(cmd);
}

/** The examples as `--help` ends with them: a heading, then each comment over its line, indented. */
export function examplesText({ setup, examples }: Examples): string {
  const all = setup === undefined ? examples : [setup, ...examples];
  return [
    'Examples:',
    ...all
      .map(({ comment, line }) => `  # ${comment}\n  ${line}`)
      .join('\n\n')
      .split('\n'),
  ].join('\n');
}
