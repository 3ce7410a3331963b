/**
 * `genpipe legacy ...`: the legacy surface (`<legacy-base-url>`, by default
 * `<base-url>/dream-machine/v1`). Here the group, `modify` and `get`; the other creates and reads are
 * registered from legacy-*.ts, every create through legacy-create.ts (flags, wait, --out, output).
 */
import type { Command } from 'commander';
import type { ModifyVideoInput } from '../../client/index.ts';
import { LEGACY_MODIFY_MODES, LEGACY_VIDEO_MODELS } from '../../spec/index.ts';
import { AGAINST_SERVE, addExamples, type Examples } from '../command-examples.ts';
import { addServiceOptions, type ClientFlags, idArg } from '../command-flags.ts';
import { runWithClient } from '../run-with-client.ts';
import {
  addLegacyCreateOptions,
  type LegacyCreateFlags,
  legacyLines,
  runLegacyCreate,
} from './legacy-create.ts';
import { registerLegacyDerived } from './legacy-derive.ts';
import { registerLegacyImage } from './legacy-image.ts';
import { registerLegacyReads } from './legacy-reads.ts';
import { registerLegacyReframe } from './legacy-reframe.ts';
import { registerLegacyVideo } from './legacy-video.ts';

interface ModifyFlags extends LegacyCreateFlags {
  mediaUrl: string;
  model: string;
  mode: string;
  prompt?: string;
  firstFrameUrl?: string;
  callbackUrl?: string;
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
    .description(
      'The legacy surface (/dream-machine/v1): generate, modify, reframe, upscale and add audio; list, show and delete generations; concepts and credits',
    );

  const modify = legacy
    .command('modify')
    .description('Modify a video given by URL (style transfer, prompt-based editing)')
    .requiredOption('--media-url <url>', 'the source video (http or https)')
    .requiredOption('--model <model>', LEGACY_VIDEO_MODELS.join(' or '))
    .requiredOption('--mode <mode>', LEGACY_MODIFY_MODES.join(', '))
    .option('--prompt <text>', 'what to change')
    .option('--first-frame-url <url>', 'an image for the first frame')
    .option('--callback-url <url>', 'receives the generation when dreaming, completed or failed');
  addLegacyCreateOptions(modify, MODIFY_EXAMPLES, 'output-0.mp4', false).action((flags: ModifyFlags) =>
    runLegacyCreate(flags, (ctx, requestId) =>
      ctx.client.legacy.modifyVideo(modifyRequest(flags), { requestId, signal: ctx.signal }),
    ),
  );
  registerLegacyVideo(legacy);
  registerLegacyImage(legacy);
  registerLegacyReframe(legacy);
  registerLegacyDerived(legacy);

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
  registerLegacyReads(legacy);
}
