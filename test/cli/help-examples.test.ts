/**
 * `--help` of every command with more than three flags (and of status) ends with examples, and every
 * example is a command line of that command that commander takes as written: its words, its flags and
 * their values parse (the command's action replaced, so nothing runs). One example also runs for real.
 */
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { commandPath, visibleOptions } from '../../scripts/command-words.ts';
import { type Example, examplesOf } from '../../src/cli/command-examples.ts';
import { buildProgram } from '../../src/cli/program.ts';
import { runCli } from './run-cli.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The environment of a user with no GENPIPE_* variable set. */
function plainEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GENPIPE_')));
}

/** Commands the help of which must end with examples whatever their number of flags. */
const ALWAYS = new Set(['run', 'watch', 'worker', 'serve', 'status']);

function everyCommand(program: Command): Command[] {
  return program.commands.flatMap((c) => [c, ...everyCommand(c)]);
}

/** A command line's words, as sh splits them (single and double quotes; no expansion is used). */
function words(line: string): string[] {
  const found: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) found.push(m[1] ?? m[2] ?? m[3]!);
  return found;
}

/** `<generation-id>` → a UUID, `<video-url>` → a URL: the placeholders an example may hold. */
function filled(word: string): string {
  if (/^<[a-z-]*id>$/.test(word)) return '0b0e6b8a-2f1c-4d5e-9a7b-3c2d1e0f4a5b';
  if (/^<[a-z-]*url>$/.test(word)) return 'https://example.com/clip.mp4';
  return word;
}

function helpOf(cmd: Command): string {
  let text = '';
  cmd.configureOutput({ writeOut: (s) => (text += s) });
  cmd.outputHelp();
  return text;
}

/**
 * Parses `example` with the program built for it, the action of the command it names replaced.
 * @returns the words after `genpipe` of the command whose action it reached
 */
async function parseOnly(example: Example): Promise<string> {
  const argv = words(example.line).map(filled);
  expect(argv[0], example.line).toBe('genpipe');
  const program = await buildProgram(['node', ...argv]);
  let reached = '';
  for (const cmd of everyCommand(program)) {
    // Commander's words for a refused line go in the error thrown, not on the test's stderr.
    cmd.configureOutput({ writeErr: () => undefined });
    if (cmd.commands.length > 0) continue;
    cmd.action(() => {
      reached = commandPath(cmd);
    });
  }
  program.configureOutput({ writeErr: () => undefined });
  await program.parseAsync(argv.slice(1), { from: 'user' });
  return reached;
}

describe('examples at the end of --help (src/cli/command-examples.ts)', async () => {
  const program = await buildProgram(['node', 'genpipe']);
  const commands = everyCommand(program);

  it('every command with more than three flags, and run, watch, worker, serve, status, has 2 to 4', () => {
    const wanting = commands.filter((c) => visibleOptions(c).length > 3 || ALWAYS.has(commandPath(c)));
    expect(wanting.map(commandPath)).toEqual(expect.arrayContaining([...ALWAYS]));
    const without = wanting
      .filter((c) => {
        const n = examplesOf(c)?.examples.length ?? 0;
        return n < 2 || n > 4;
      })
      .map(commandPath);
    expect(without, 'commands whose --help needs 2 to 4 examples').toEqual([]);
  });

  it('--help ends with them: a heading, then each one-line comment over its line', () => {
    for (const cmd of commands.filter((c) => examplesOf(c) !== undefined)) {
      const help = helpOf(cmd);
      const { setup, examples } = examplesOf(cmd)!;
      const tail = help.slice(help.indexOf('\nExamples:\n'));
      expect(tail, commandPath(cmd)).toMatch(/^\nExamples:\n {2}# /);
      for (const { comment, line } of setup ? [setup, ...examples] : examples) {
        expect(comment, line).not.toContain('\n');
        expect(tail).toContain(`  # ${comment}\n  ${line}\n`);
      }
      expect(help.indexOf('\nExamples:\n'), commandPath(cmd)).toBeGreaterThan(help.indexOf('Options:'));
    }
  });

  it("every example is a line of its own command that commander parses: its flags are the command's, its values valid", async () => {
    for (const cmd of commands) {
      const set = examplesOf(cmd);
      if (set === undefined) continue;
      if (set.setup) expect(set.setup.line).toMatch(/^export GENPIPE_[A-Z_]+=/);
      for (const example of set.examples) {
        expect(await parseOnly(example), example.line).toBe(commandPath(cmd));
      }
    }
  });

  it('genpipe --help ends with examples of the commands people start with, each parsed as its command, and where the manual is', async () => {
    const own = examplesOf(program)?.examples ?? [];
    expect(own.length).toBeGreaterThanOrEqual(2);
    for (const example of own) expect(await parseOnly(example), example.line).toBe(words(example.line)[1]);
    expect(helpOf(program)).toMatch(
      /Documentation: README\.md, the guides in docs\/, and a page per command/,
    );
  });

  it('a line with a flag the command lacks is refused by that check', async () => {
    await expect(parseOnly({ comment: 'no such flag', line: 'genpipe status out --bogus' })).rejects.toThrow(
      "unknown option '--bogus'",
    );
  });

  it('`genpipe run --help` ends with its examples, and the dry-run one runs as written', async () => {
    const help = await runCli(['run', '--help'], plainEnv());
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/\n\nExamples:\n {2}# [^\n]+\n {2}genpipe run samples [^\n]+\n/);
    expect(help.stdout.trimEnd().split('\n').at(-1)).toMatch(/^ {2}genpipe run /);
    const line = examplesOf(commands.find((c) => commandPath(c) === 'run')!)!.examples.find((e) =>
      e.line.includes('--dry-run'),
    )!.line;
    // From the package root, where samples/ is; a dry run writes nothing.
    const dry = await runCli(words(line).slice(1), plainEnv(), 30_000, undefined, { cwd: ROOT });
    expect(dry.stderr).toContain('genpipe: dry run: 8 files');
    expect(dry.code).toBe(0);
  }, 60_000);
});
