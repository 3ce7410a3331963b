/**
 * What every `genpipe legacy` create shares: its flags (--request file.json, --request-id, --wait,
 * --out, --timeout, --poll-interval, the connection and output groups), the body built from the
 * request file and the flags (flags win), and the run: create (checked locally by the client with the
 * service's rules, nothing sent for a bad request), optionally wait, download the assets into
 * `<out>/<generation id>/` (generation-out.ts) and print the result.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import type { LegacyGeneration } from '../../client/index.ts';
import { addExamples, type Examples } from '../command-examples.ts';
import {
  addPollOption,
  addServiceOptions,
  type ClientFlags,
  checkTimeoutWaits,
  REQUEST_ID_HELP,
  requestIdArg,
  secondsArg,
} from '../command-flags.ts';
import { waitAndSave } from '../generation-out.ts';
import type { CommandContext } from '../make-client.ts';
import { checkOutDir } from '../out-dir-check.ts';
import { runWithClient } from '../run-with-client.ts';
import { readRequestFile } from './generate.ts';
import { outputsJson } from './generations.ts';

/** The flags every legacy create takes. */
export interface LegacyCreateFlags extends ClientFlags {
  request?: string;
  requestId?: string;
  wait?: boolean;
  out?: string;
  timeout?: number;
}

/** The lines describing a legacy generation, for people. */
export function legacyLines(g: LegacyGeneration, requestId?: string): string[] {
  const lines = [`legacy generation ${g.id}  ${g.state}`];
  lines.push(`  model: ${g.model}   created: ${g.created_at}`);
  if (requestId) lines.push(`  request id: ${requestId}`);
  if (g.failure_reason) lines.push(`  failure_reason: ${g.failure_reason}`);
  for (const [name, url] of Object.entries(g.assets ?? {})) if (url) lines.push(`  ${name}: ${url}`);
  return lines;
}

/**
 * Adds the shared create flags, the examples and the connection flags to a legacy create.
 * @param saved - what --out saves, for its help (`output-0.mp4`)
 * @param withRequest - whether the command takes --request file.json
 */
export function addLegacyCreateOptions(
  cmd: Command,
  examples: Examples,
  saved: string,
  withRequest = true,
): Command {
  const name = `genpipe legacy ${cmd.name()}`;
  if (withRequest)
    cmd.option('--request <file>', 'the request body as a JSON file (flags override its fields)');
  cmd
    .option('--request-id <id>', REQUEST_ID_HELP, requestIdArg(name))
    .option('--wait', 'wait until the generation completes (exit 1 when it fails)')
    .option(
      '--out <dir>',
      `wait, then download the result into <dir>/<generation id>/${saved} and print its path`,
    )
    .option(
      '--timeout <seconds>',
      'with --wait or --out: give up waiting after this long (exit 1; default: no limit)',
      secondsArg(0),
    );
  return addPollOption(addServiceOptions(addExamples(cmd, examples)));
}

/**
 * The body of a create: the --request file's object, then each flag given over its field.
 * @param fields - field name → the flag's value (undefined when not given)
 * @throws UsageError for an unreadable request file
 */
export function legacyBody(
  flags: LegacyCreateFlags,
  fields: Record<string, unknown>,
): Record<string, unknown> {
  const body: Record<string, unknown> = flags.request ? readRequestFile(flags.request) : {};
  for (const [field, value] of Object.entries(fields)) if (value !== undefined) body[field] = value;
  return body;
}

/**
 * Runs a legacy create as a command: creates (with the given or a fresh request id), then with --wait
 * or --out waits, with --out downloads, and prints the result.
 * @param create - the client call
 */
export function runLegacyCreate(
  flags: LegacyCreateFlags,
  create: (ctx: CommandContext, requestId: string) => Promise<LegacyGeneration>,
): Promise<void> {
  return runWithClient(flags, async (ctx) => {
    const waiting = flags.wait === true || flags.out !== undefined;
    checkTimeoutWaits(flags, waiting, '--wait or --out');
    if (flags.out !== undefined) await checkOutDir(flags.out);
    const requestId = flags.requestId ?? randomUUID();
    const created = await create(ctx, requestId);
    const { final, outputs } = await waitAndSave(ctx, created, flags, {
      created: `legacy generation ${created.id} (request id ${requestId})`,
      wait: (timeoutMs) =>
        ctx.client.legacy.wait(created.id, {
          signal: ctx.signal,
          onUpdate: (g) => ctx.note(`legacy generation ${g.id}: ${g.state}`),
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        }),
      download: (done, dir, o) => ctx.client.legacy.download(done, dir, o),
    });
    ctx.result(
      {
        request_id: requestId,
        generation: final,
        ...(outputs ? { outputs: outputsJson(outputs) } : {}),
      },
      () => (outputs ? outputs.map((o) => o.path) : legacyLines(final, requestId)),
    );
  });
}
