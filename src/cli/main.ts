/**
 * genpipe's command line. The only place that reads argv and the environment and picks exit codes:
 * the codes of exit-codes.ts. Importing it runs the command line: the commands themselves are built by
 * program.ts.
 */
import { CommanderError } from 'commander';
import { EXIT } from './exit-codes.ts';
import { buildProgram } from './program.ts';

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
