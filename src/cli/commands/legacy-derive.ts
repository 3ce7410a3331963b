/** `genpipe legacy upscale <id>` and `add-audio <id>`: a new video made from one of your completed videos. */
import type { Command } from 'commander';
import type { LegacyAudioInput, LegacyUpscaleInput } from '../../client/index.ts';
import { LEGACY_OPERATION_CHOICES } from '../../spec/index.ts';
import { AGAINST_SERVE, type Examples } from '../command-examples.ts';
import { idArg } from '../command-flags.ts';
import {
  addLegacyCreateOptions,
  type LegacyCreateFlags,
  legacyBody,
  runLegacyCreate,
} from './legacy-create.ts';

interface DeriveFlags extends LegacyCreateFlags {
  resolution?: string;
  prompt?: string;
  negativePrompt?: string;
  callbackUrl?: string;
}

const UPSCALE_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'one of your completed videos at 1080p; waits, downloads into out/',
      line: 'genpipe legacy upscale <generation-id> --out out/',
    },
    {
      comment: 'at 540p, printed queued as JSON',
      line: 'genpipe legacy upscale <generation-id> --resolution 540p --json',
    },
  ],
};

const AUDIO_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a soundtrack for one of your completed videos; waits, downloads into out/',
      line: "genpipe legacy add-audio <generation-id> --prompt 'waves on a beach' --out out/",
    },
    {
      comment: 'without music, waited for',
      line: "genpipe legacy add-audio <generation-id> --prompt 'city traffic' --negative-prompt music --wait",
    },
  ],
};

const CALLBACK_HELP = 'receives the generation when dreaming, completed or failed';

/** Registers `genpipe legacy upscale` and `add-audio`. */
export function registerLegacyDerived(legacy: Command): void {
  const upscale = legacy
    .command('upscale')
    .description('Upscale one of your completed video generations (a new generation)')
    .argument('<id>', 'the video generation id (a UUID)', idArg('generation'))
    .option(
      '--resolution <r>',
      `short side, e.g. 1080p (default ${LEGACY_OPERATION_CHOICES.defaultUpscaleResolution})`,
    )
    .option('--callback-url <url>', CALLBACK_HELP);
  addLegacyCreateOptions(upscale, UPSCALE_EXAMPLES, 'output-0.mp4').action((id: string, flags: DeriveFlags) =>
    runLegacyCreate(flags, (ctx, requestId) => {
      const body = legacyBody(flags, { resolution: flags.resolution, callback_url: flags.callbackUrl });
      return ctx.client.legacy.upscale(id, body as LegacyUpscaleInput, { requestId, signal: ctx.signal });
    }),
  );
  const audio = legacy
    .command('add-audio')
    .description('Add an audio track to one of your completed video generations (a new generation)')
    .argument('<id>', 'the video generation id (a UUID)', idArg('generation'))
    .option('--prompt <text>', 'what it should sound like')
    .option('--negative-prompt <text>', 'what it should not')
    .option('--callback-url <url>', CALLBACK_HELP);
  addLegacyCreateOptions(audio, AUDIO_EXAMPLES, 'output-0.mp4').action((id: string, flags: DeriveFlags) =>
    runLegacyCreate(flags, (ctx, requestId) => {
      const body = legacyBody(flags, {
        prompt: flags.prompt,
        negative_prompt: flags.negativePrompt,
        callback_url: flags.callbackUrl,
      });
      return ctx.client.legacy.addAudio(id, body as LegacyAudioInput, { requestId, signal: ctx.signal });
    }),
  );
}
