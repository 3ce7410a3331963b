/**
 * The genpipe program: every command, loaded only when it is the one being run. Kept apart from
 * main.ts (which parses argv when imported) so that scripts and tests can walk the commands and their
 * options: the docs/commands pages are written from them (scripts/docs.ts).
 */

import { Command } from 'commander';
import { printable } from '../pipeline/progress/format.ts';
import { addExamples, type Examples } from './command-examples.ts';
import { checkPollingFlags } from './flag-groups/polling.ts';
import { configureOptionHelp } from './option-help.ts';
import { checkPathArgs } from './path-args.ts';

type Register = (program: Command) => void;

/**
 * Every command's definition, loaded only when it is the one being run; help (or no command) loads
 * them all, `--version` none. A definition is light — commander and the command's words: what it runs
 * (the client, the pipeline, a store, the emulator) its action loads when it runs, so that `--help`
 * and `--version` answer at once and `genpipe files upload` holds none of the batch's modules.
 * test/cli/startup-modules.test.ts checks that a definition loads none of them.
 */
const COMMANDS: ReadonlyArray<[name: string, load: () => Promise<Register>, definedIn: string]> = [
  ['serve', async () => (await import('./commands/serve.ts')).registerServe, 'commands/serve.ts'],
  ['run', async () => (await import('./commands/run-command.ts')).registerRun, 'commands/run-command.ts'],
  [
    'watch',
    async () => (await import('./commands/watch-command.ts')).registerWatch,
    'commands/watch-command.ts',
  ],
  ['demo', async () => (await import('./commands/demo.ts')).registerDemo, 'commands/demo.ts'],
  ['files', async () => (await import('./commands/files.ts')).registerFiles, 'commands/files.ts'],
  ['generate', async () => (await import('./commands/generate.ts')).registerGenerate, 'commands/generate.ts'],
  [
    'generations',
    async () => (await import('./commands/generations.ts')).registerGenerations,
    'commands/generations.ts',
  ],
  ['legacy', async () => (await import('./commands/legacy.ts')).registerLegacy, 'commands/legacy.ts'],
  [
    'status',
    async () => (await import('./commands/status-command.ts')).registerStatus,
    'commands/status-command.ts',
  ],
  [
    'dashboard',
    async () => (await import('./commands/dashboard-command.ts')).registerDashboard,
    'commands/dashboard-command.ts',
  ],
  ['worker', async () => (await import('./commands/worker.ts')).registerWorker, 'commands/worker.ts'],
];

/**
 * The file under src/cli that defines a top-level command (`commands/run-command.ts`), as its page in
 * docs/commands names it.
 */
export function commandDefinedIn(name: string): string | undefined {
  return COMMANDS.find(([n]) => n === name)?.[2];
}

/**
 * The program with the commands `argv` needs registered: only the named command when there is one,
 * all of them otherwise.
 *
 * @example const program = await buildProgram(['node', 'genpipe']); // every command, for its help
 */
export async function buildProgram(argv: readonly string[] = process.argv): Promise<Command> {
  const json = wantsJson(argv);
  const program = new Command();
  program
    .name('genpipe')
    .description('Media ingestion pipeline for an asynchronous video and image generation service')
    .version('0.1.0')
    // Set before the commands are added: they inherit it. A usage error reads like genpipe's others,
    // and with --json it is one JSON line, as printError writes every other error then.
    .configureOutput({ outputError: (text, write) => write(json ? jsonUsageError(text) : plainError(text)) })
    .exitOverride()
    // Every command's path-valued options and arguments, checked alike before it runs (path-args.ts).
    .hook('preAction', (_program, action) => {
      checkPathArgs(action);
      // The rules of the flag groups, for every command that takes their flags (flag-groups/).
      checkPollingFlags(action);
    });
  configureOptionHelp(program);
  for (const [, load] of commandsFor(argv)) (await load())(program);
  for (const cmd of program.commands) requireSubcommand(cmd);
  addExamples(program, PROGRAM_EXAMPLES);
  program.addHelpText('after', PROGRAM_DOCS);
  // The pointer to the help is text: with --json the JSON line stands alone.
  if (!json) pointToHelp(program);
  return program;
}

/** The program's own examples: the three ways people use genpipe, each against the embedded emulator. */
const PROGRAM_EXAMPLES: Examples = {
  examples: [
    { comment: 'the bundled samples through an embedded emulator, with a report', line: 'genpipe demo' },
    {
      comment: 'a folder from the command line: what would be sent, and what it would cost',
      line: 'genpipe run samples --out out/samples --emulator --dry-run',
    },
    {
      comment: 'a drop folder: files dropped into inbox/ are processed until Ctrl-C',
      line: 'genpipe watch inbox --out out/inbox --emulator',
    },
  ],
};

/** Where the manual is. */
const PROGRAM_DOCS =
  '\nDocumentation: README.md, the guides in docs/, and a page per command in docs/commands/\n' +
  "(genpipe-<command>.md); 'genpipe <command> --help' for a command's flags and examples.";

/**
 * The commands `argv` needs: the named one; none for `genpipe --version` (answered before any command
 * is looked at); all of them otherwise (the program's help lists them).
 */
function commandsFor(argv: readonly string[]): typeof COMMANDS {
  const named = COMMANDS.find(([name]) => name === argv[2]);
  if (named) return [named];
  return argv[2] === '--version' || argv[2] === '-V' ? [] : COMMANDS;
}

/**
 * Whether the command line asks for `--json` (before any `--`): its usage errors are then one JSON line.
 *
 * @example wantsJson(['node', 'genpipe', 'run', 'in', '--json']) // true
 */
export function wantsJson(argv: readonly string[]): boolean {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).includes('--json');
}

/** Commander's words, each line made printable: an argument it quotes may hold escape sequences. */
function plainError(text: string): string {
  return text
    .replace(/^error: /, 'genpipe: ')
    .split('\n')
    .map((line) => printable(line))
    .join('\n');
}

/**
 * A usage error commander found, as the one JSON line printError writes for genpipe's own usage errors:
 * `{"error":{"name":"UsageError","code":"GENPIPE_USAGE","message":"unknown option '--bogus'"}}`.
 */
function jsonUsageError(text: string): string {
  const message = text.replace(/^error: /, '').trimEnd();
  return `${JSON.stringify({ error: { name: 'UsageError', code: 'GENPIPE_USAGE', message } })}\n`;
}

/**
 * A group of commands (`genpipe files`, `generations`, `legacy`) named without one of its commands is a
 * usage error like the others (one line, and the pointer to the help), not the whole help.
 */
function requireSubcommand(group: Command): void {
  if (group.commands.length === 0) return;
  const names = group.commands.map((c) => c.name());
  // An action would otherwise drop the implicit `help [command]` of the group.
  group.helpCommand(true);
  group.allowExcessArguments().action(() => {
    const [first] = group.args;
    group.error(
      first === undefined
        ? `error: '${commandPath(group)}' needs a command: ${names.join(', ')}`
        : `error: unknown command '${first}'`,
      { exitCode: 2, code: first === undefined ? 'genpipe.missingCommand' : 'commander.unknownCommand' },
    );
  });
}

/** `genpipe files upload`: the words that run `cmd`. */
function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/**
 * After a usage error commander finds (an unknown option, a bad option value, a missing argument), one
 * line saying how to see the command's help, instead of the whole help: the problem stays in sight.
 */
function pointToHelp(cmd: Command): void {
  cmd.showHelpAfterError(`Run '${commandPath(cmd)} --help' for usage.`);
  for (const sub of cmd.commands) pointToHelp(sub);
}
