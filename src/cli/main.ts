/**
 * genpipe's command line. The only place that reads argv and the environment and picks exit codes:
 * 0 success, 1 a failed call or batch item, 2 usage or configuration errors.
 */
import { Command, CommanderError } from 'commander';
import { registerDemo } from './commands/demo.ts';
import { registerFiles } from './commands/files.ts';
import { registerGenerate } from './commands/generate.ts';
import { registerGenerations } from './commands/generations.ts';
import { registerLegacy } from './commands/legacy.ts';
import { registerRun } from './commands/run.ts';
import { registerServe } from './commands/serve.ts';
import { registerWatch } from './commands/watch.ts';

export const EXIT = { ok: 0, failed: 1, usage: 2, stoppedEarly: 3 } as const;

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('genpipe')
    .description('Media ingestion pipeline for an asynchronous video and image generation service')
    .version('0.1.0')
    .showHelpAfterError()
    .exitOverride();
  registerServe(program);
  registerRun(program);
  registerWatch(program);
  registerDemo(program);
  registerFiles(program);
  registerGenerate(program);
  registerGenerations(program);
  registerLegacy(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version exit through here with code 0.
      process.exitCode = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
      return;
    }
    console.error(`genpipe: ${(err as Error).message}`);
    process.exitCode = (err as { exitCode?: number }).exitCode ?? EXIT.failed;
  }
}

await main(process.argv);
