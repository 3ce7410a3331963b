/**
 * runWithClient of make-client.ts, loaded only when a command's body runs: the client (HTTP, media
 * sniffing) is no part of defining the command, nor of its `--help`.
 */
import type { ClientOptions } from '../client/index.ts';
import type { ClientFlags } from './command-flags.ts';
import type { CommandContext } from './make-client.ts';

/** See make-client.ts runWithClient. */
export async function runWithClient(
  flags: ClientFlags,
  body: (ctx: CommandContext) => Promise<void>,
  options: Partial<ClientOptions> = {},
): Promise<void> {
  const made = await import('./make-client.ts');
  await made.runWithClient(flags, body, options);
}
