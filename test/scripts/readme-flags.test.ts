import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { describe, expect, it } from 'vitest';
import { renderFlagTables } from '../../scripts/readme-flags.ts';
import { addServiceOptions } from '../../src/cli/make-client.ts';
import { requiredByCommand } from '../../src/cli/option-help.ts';
import { buildProgram } from '../../src/cli/program.ts';

const README = join(import.meta.dirname, '..', '..', 'README.md');

/** A small program: `tool copy <from> --to <dir> [--mode <m>] [--tag <t>]` and `tool shelf list`. */
function toyProgram(): Command {
  const program = new Command().name('tool');
  const copy = program
    .command('copy')
    .argument('<from>', 'what to copy')
    .addOption(requiredByCommand(new Option('-t, --to <dir>', 'where it goes')))
    .addOption(new Option('--mode <m>', 'fast | safe').choices(['fast', 'safe']).default('safe'))
    .requiredOption('--tag <t>', 'a <label> for *it*')
    .addOption(new Option('--secret-knob', 'for benches').hideHelp());
  addServiceOptions(copy);
  const shelf = program.command('shelf');
  shelf.command('list').option('--limit <n>', 'at most n (default: all)');
  shelf.command('empty');
  return program;
}

const BLOCKS = (names: string[]) =>
  names.map((n) => `<!-- flags:${n} -->\nold text\n<!-- /flags:${n} -->`).join('\n\nprose\n\n');

describe('README.md flag tables (scripts/readme-flags.ts)', () => {
  it('README.md holds exactly the tables `npm run docs:flags` writes from src/cli', async () => {
    const readme = await readFile(README, 'utf8');
    const expected = await renderFlagTables(readme);
    expect(
      readme,
      "README.md's flag tables differ from the commands' options in src/cli: run `npm run docs:flags`",
    ).toBe(expected);
  });

  it('writes a synopsis and a table of every visible option, with what --help says', async () => {
    const out = await renderFlagTables(BLOCKS(['copy', 'shelf list', 'connection']), toyProgram());
    expect(out).toContain(
      '```\ngenpipe copy <from> --to <dir> --tag <t> [--mode <m>] [--json] [--quiet] [connection options]\n```',
    );
    expect(out).toContain('| `<from>` | what to copy |');
    expect(out).toContain('| `-t, --to <dir>` | required: where it goes |');
    expect(out).toContain('| `--mode <m>` | fast \\| safe (choices: "fast", "safe", default: "safe") |');
    expect(out).toContain('| `--tag <t>` | required: a \\<label> for \\*it\\* |');
    expect(out).not.toContain('secret-knob');
    expect(out).toContain('Also the [connection options](#connection-options).');
    expect(out).toContain('| `--limit <n>` | at most n (default: all) |');
    expect(out).toMatch(
      /<!-- flags:connection -->\n\n\| option \| meaning \|\n\|---\|---\|\n\| `--api-key <key>` \|/,
    );
    expect(out).not.toContain('old text');
    expect(await renderFlagTables(out, toyProgram())).toBe(out);
  });

  it('refuses a README that lacks a table of a command, or has one of no command', async () => {
    await expect(renderFlagTables(BLOCKS(['copy', 'connection']), toyProgram())).rejects.toThrow(
      'README.md has no flag table for: shelf list.',
    );
    await expect(renderFlagTables(BLOCKS(['copy', 'shelf list']), toyProgram())).rejects.toThrow(
      'README.md has no flag table for: connection.',
    );
    await expect(
      renderFlagTables(BLOCKS(['copy', 'shelf list', 'connection', 'shelf empty']), toyProgram()),
    ).rejects.toThrow('<!-- flags:shelf empty --> names no command with options');
    await expect(
      renderFlagTables(
        `${BLOCKS(['copy', 'shelf list', 'connection'])}\n<!-- flags:copy -->\n`,
        toyProgram(),
      ),
    ).rejects.toThrow('no closing <!-- /flags:NAME --> for: copy');
  });

  it("--help of run and watch marks --out required, as the README's tables do", async () => {
    for (const name of ['run', 'watch']) {
      const program = await buildProgram(['node', 'genpipe', name]);
      const help = program.commands.find((c) => c.name() === name)!.helpInformation();
      expect(help).toMatch(/-o, --out <out-dir>\s+required: where/);
    }
  });
});
