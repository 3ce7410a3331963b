/**
 * genpipe's command line. The only place that reads argv and the environment and picks exit codes:
 * the codes of exit-codes.ts. Importing it runs the command line: the commands themselves are built by
 * program.ts.
 */
import { CommanderError } from 'commander';
import { EXIT } from './exit-codes.ts';
import { buildProgram, wantsJson } from './program.ts';

/**
 * A reader of stdout that goes away (`genpipe run photos --out out | head`) ends what is shown there,
 * not the command: a batch goes on, writes its reports and prints its closing summary on stderr. Any
 * other stdout error still ends the process.
 */
export function outliveClosedStdout(stdout: NodeJS.WriteStream = process.stdout): void {
  stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE' || err.code === 'ERR_STREAM_DESTROYED') return;
    throw err;
  });
}

export async function main(argv: string[]): Promise<void> {
  outliveClosedStdout();
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
    process.exitCode = printError(err, { json: wantsJson(argv) });
  }
}

await main(process.argv);
