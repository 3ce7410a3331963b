/**
 * genpipe's command line. The only place that reads argv and the environment and picks exit codes:
 * the codes of exit-codes.ts.
 */
import { Command, CommanderError } from 'commander';
import { EXIT } from './exit-codes.ts';

type Register = (program: Command) => void;

/**
 * Every command, loaded only when it is the one being run: a command's module pulls in the client,
 * the pipeline or the emulator, and a process that loads all of them starts slower and holds
 * tens of MB more than `genpipe files upload` needs. Help (or no command) loads them all.
 */
const COMMANDS: ReadonlyArray<[name: string, load: () => Promise<Register>]> = [
  ['serve', async () => (await import('./commands/serve.ts')).registerServe],
  ['run', async () => (await import('./commands/run.ts')).registerRun],
  ['watch', async () => (await import('./commands/watch.ts')).registerWatch],
  ['demo', async () => (await import('./commands/demo.ts')).registerDemo],
  ['files', async () => (await import('./commands/files.ts')).registerFiles],
  ['generate', async () => (await import('./commands/generate.ts')).registerGenerate],
  ['generations', async () => (await import('./commands/generations.ts')).registerGenerations],
  ['legacy', async () => (await import('./commands/legacy.ts')).registerLegacy],
];

/**
 * The program with the commands `argv` needs registered: only the named command when there is one,
 * all of them otherwise.
 */
export async function buildProgram(argv: readonly string[] = process.argv): Promise<Command> {
  const program = new Command();
  program
    .name('genpipe')
    .description('Media ingestion pipeline for an asynchronous video and image generation service')
    .version('0.1.0')
    // Set before the commands are added: they inherit it. A usage error reads like genpipe's others.
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'genpipe: ')) })
    .exitOverride();
  const named = COMMANDS.find(([name]) => name === argv[2]);
  for (const [, load] of named ? [named] : COMMANDS) (await load())(program);
  pointToHelp(program);
  return program;
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

export async function main(argv: string[]): Promise<void> {
  const program = await buildProgram(argv);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit through here with code 0.
      process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    // Loaded only now: `serve` has no other use for the client's redaction.
    const { printError } = await import('./print-error.ts');
    process.exitCode = printError(err);
  }
}

await main(process.argv);
