/** `genpipe legacy generate-image`: an image from a prompt and references, optionally answered in sync. */
import type { Command } from 'commander';
import type { LegacyImageInput } from '../../client/index.ts';
import { LEGACY_ASPECT_RATIOS, LEGACY_IMAGE_MODELS, LEGACY_OPERATION_CHOICES } from '../../spec/index.ts';
import { AGAINST_SERVE, type Examples } from '../command-examples.ts';
import { collect, positiveSeconds } from '../flag-groups/parsers.ts';
import {
  addLegacyCreateOptions,
  type LegacyCreateFlags,
  legacyBody,
  runLegacyCreate,
} from './legacy-create.ts';

interface ImageFlags extends LegacyCreateFlags {
  prompt?: string;
  model?: string;
  aspectRatio?: string;
  format?: string;
  imageRef?: string[];
  styleRef?: string[];
  modifyImageRef?: string;
  sync?: boolean;
  syncTimeout?: number;
  callbackUrl?: string;
}

/** The request from --request and the flags (flags win). */
export function imageRequest(flags: ImageFlags): LegacyImageInput {
  return legacyBody(flags, {
    prompt: flags.prompt,
    model: flags.model,
    aspect_ratio: flags.aspectRatio,
    format: flags.format,
    image_ref: flags.imageRef?.map((url) => ({ url })),
    style_ref: flags.styleRef?.map((url) => ({ url })),
    modify_image_ref: flags.modifyImageRef === undefined ? undefined : { url: flags.modifyImageRef },
    sync: flags.sync,
    sync_timeout: flags.syncTimeout,
    callback_url: flags.callbackUrl,
  }) as LegacyImageInput;
}

const EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a png from a prompt; waits, downloads into out/',
      line: "genpipe legacy generate-image --prompt 'a red fox in the snow' --format png --out out/",
    },
    {
      comment: 'answered when done (or after 30 s, as it stands), as JSON',
      line: "genpipe legacy generate-image --prompt 'a paper boat' --aspect-ratio 1:1 --sync --sync-timeout 30 --json",
    },
    {
      comment: 'an edit of an image by URL (as `legacy get` prints it)',
      line: "genpipe legacy generate-image --modify-image-ref <image-url> --prompt 'at night' --wait",
    },
  ],
};

/** Registers `genpipe legacy generate-image`. */
export function registerLegacyImage(legacy: Command): void {
  const max = LEGACY_OPERATION_CHOICES.syncTimeoutMaxSeconds;
  const cmd = legacy
    .command('generate-image')
    .description('Create an image from a prompt and reference images (flags or --request file.json)')
    .option('--prompt <text>', 'what to make')
    .option('--model <model>', `${LEGACY_IMAGE_MODELS.join(' or ')} (default photon-1)`)
    .option('--aspect-ratio <ratio>', `${LEGACY_ASPECT_RATIOS.join(', ')} (default 16:9)`)
    .option('--format <format>', 'jpg (default) or png')
    .option('--image-ref <url>', 'an image to draw from (repeatable)', collect)
    .option('--style-ref <url>', 'an image to take the style of (repeatable)', collect)
    .option('--modify-image-ref <url>', 'an image to edit')
    .option('--sync', `the service answers when the image is done (or after --sync-timeout)`)
    .option(
      '--sync-timeout <seconds>',
      `with --sync: longest wait of the answer (default ${LEGACY_OPERATION_CHOICES.syncTimeoutDefaultSeconds}, at most ${max})`,
      positiveSeconds(max),
    )
    .option('--callback-url <url>', 'receives the generation when dreaming, completed or failed');
  addLegacyCreateOptions(cmd, EXAMPLES, 'output-0.jpg (or .png)').action((flags: ImageFlags) =>
    runLegacyCreate(flags, (ctx, requestId) =>
      ctx.client.legacy.createImage(imageRequest(flags), { requestId, signal: ctx.signal }),
    ),
  );
}
