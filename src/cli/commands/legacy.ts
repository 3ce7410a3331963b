/**
 * `genpipe legacy modify|get`: the legacy surface (`<legacy-base-url>`, by default
 * `<base-url>/dream-machine/v1`): modify a video by URL, optionally wait and download the result
 * (into `<out>/<generation id>/`, see generation-out.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import type { LegacyGeneration, ModifyVideoInput } from '../../client/index.ts';
import { LEGACY_MODIFY_MODES, LEGACY_VIDEO_MODELS } from '../../spec/index.ts';
import { AGAINST_SERVE, addExamples, type Examples } from '../command-examples.ts';
import {
  addPollOption,
  addServiceOptions,
  type ClientFlags,
  checkTimeoutWaits,
  idArg,
  REQUEST_ID_HELP,
  requestIdArg,
  secondsArg,
} from '../command-flags.ts';
import { type SavedOutput, saveGenerationOutputs } from '../generation-out.ts';
import { checkOutDir } from '../out-dir-check.ts';
import { runWithClient } from '../run-with-client.ts';
import { outputsJson } from './generations.ts';

/** The lines describing a legacy generation, for people. */
export function legacyLines(g: LegacyGeneration, requestId?: string): string[] {
  const lines = [`legacy generation ${g.id}  ${g.state}`];
  lines.push(`  model: ${g.model}   created: ${g.created_at}`);
  if (requestId) lines.push(`  request id: ${requestId}`);
  if (g.failure_reason) lines.push(`  failure_reason: ${g.failure_reason}`);
  for (const [name, url] of Object.entries(g.assets ?? {})) if (url) lines.push(`  ${name}: ${url}`);
  return lines;
}

interface ModifyFlags extends ClientFlags {
  mediaUrl: string;
  model: string;
  mode: string;
  prompt?: string;
  firstFrameUrl?: string;
  callbackUrl?: string;
  requestId?: string;
  wait?: boolean;
  out?: string;
  timeout?: number;
}

/** Builds the ModifyVideoRequest from the flags (checked by the service's rules when sent). */
export function modifyRequest(flags: ModifyFlags): ModifyVideoInput {
  return {
    media: { url: flags.mediaUrl },
    model: flags.model,
    mode: flags.mode,
    ...(flags.prompt !== undefined ? { prompt: flags.prompt } : {}),
    ...(flags.firstFrameUrl !== undefined ? { first_frame: { url: flags.firstFrameUrl } } : {}),
    ...(flags.callbackUrl !== undefined ? { callback_url: flags.callbackUrl } : {}),
  } as ModifyVideoInput;
}

const MODIFY_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment:
        'restyle a video by its URL (from `genpipe serve`: a video output url of `generations get <generation-id> --json`); waits, downloads into out/',
      line: "genpipe legacy modify --media-url <video-url> --model ray-2 --mode flex_1 --prompt 'in watercolour' --out out/",
    },
    {
      comment: 'create it and print it queued, with a request id of your own',
      line: "genpipe legacy modify --media-url <video-url> --model ray-2 --mode adhere_1 --prompt 'at night' --request-id night-1",
    },
  ],
};

const GET_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a legacy generation by its id (as `legacy modify` printed it)',
      line: 'genpipe legacy get <generation-id>',
    },
    { comment: 'the same as JSON', line: 'genpipe legacy get <generation-id> --json' },
  ],
};

/** Registers `genpipe legacy modify|get`. */
export function registerLegacy(program: Command): void {
  const legacy = program
    .command('legacy')
    .description('The legacy surface (/dream-machine/v1): modify a video, show a generation');

  const modify = legacy
    .command('modify')
    .description('Modify a video given by URL (style transfer, prompt-based editing)')
    .requiredOption('--media-url <url>', 'the source video (http or https)')
    .requiredOption('--model <model>', LEGACY_VIDEO_MODELS.join(' or '))
    .requiredOption('--mode <mode>', LEGACY_MODIFY_MODES.join(', '))
    .option('--prompt <text>', 'what to change')
    .option('--first-frame-url <url>', 'an image for the first frame')
    .option('--callback-url <url>', 'receives the generation when dreaming, completed or failed')
    .option('--request-id <id>', REQUEST_ID_HELP, requestIdArg('genpipe legacy modify'))
    .option('--wait', 'wait until the generation completes (exit 1 when it fails)')
    .option(
      '--out <dir>',
      'wait, then download the result into <dir>/<generation id>/output-0.mp4 and print its path',
    )
    .option(
      '--timeout <seconds>',
      'with --wait or --out: give up waiting after this long (exit 1; default: no limit)',
      secondsArg(0),
    );
  addPollOption(addServiceOptions(addExamples(modify, MODIFY_EXAMPLES))).action((flags: ModifyFlags) =>
    runWithClient(flags, async (ctx) => {
      checkTimeoutWaits(flags, flags.wait === true || flags.out !== undefined, '--wait or --out');
      if (flags.out !== undefined) await checkOutDir(flags.out);
      const requestId = flags.requestId ?? randomUUID();
      const created = await ctx.client.legacy.modifyVideo(modifyRequest(flags), {
        requestId,
        signal: ctx.signal,
      });
      let final = created;
      let outputs: SavedOutput[] | null = null;
      if (flags.wait === true || flags.out !== undefined) {
        ctx.note(`created legacy generation ${created.id} (request id ${requestId}); waiting`);
        final = await ctx.client.legacy.wait(created.id, {
          signal: ctx.signal,
          onUpdate: (g) => ctx.note(`legacy generation ${g.id}: ${g.state}`),
          ...(flags.timeout !== undefined ? { timeoutMs: flags.timeout * 1000 } : {}),
        });
        if (flags.out !== undefined) {
          const done = final;
          outputs = await saveGenerationOutputs(ctx, done, flags.out, (dir, o) =>
            ctx.client.legacy.download(done, dir, o),
          );
        }
      }
      ctx.result(
        {
          request_id: requestId,
          generation: final,
          ...(outputs ? { outputs: outputsJson(outputs) } : {}),
        },
        () => (outputs ? outputs.map((o) => o.path) : legacyLines(final, requestId)),
      );
    }),
  );

  addServiceOptions(
    addExamples(
      legacy
        .command('get')
        .description('Show a legacy generation')
        .argument('<id>', 'the generation id (a UUID)', idArg('generation')),
      GET_EXAMPLES,
    ),
  ).action((id: string, flags: ClientFlags) =>
    runWithClient(flags, async (ctx) => {
      const g = await ctx.client.legacy.get(id, { signal: ctx.signal });
      ctx.result(g, () => legacyLines(g));
    }),
  );
}
