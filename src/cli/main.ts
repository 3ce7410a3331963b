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
    .showHelpAfterError()
    .exitOverride();
  const named = COMMANDS.find(([name]) => name === argv[2]);
  for (const [, load] of named ? [named] : COMMANDS) (await load())(program);
  return program;
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
