/** `genpipe legacy reframe-image` and `reframe-video`: a picture or a video by URL, to another aspect ratio. */
import type { Command } from 'commander';
import type { LegacyReframeImageInput, LegacyReframeVideoInput } from '../../client/index.ts';
import { LEGACY_ASPECT_RATIOS, LEGACY_IMAGE_MODELS, LEGACY_VIDEO_MODELS } from '../../spec/index.ts';
import { AGAINST_SERVE, type Examples } from '../command-examples.ts';
import {
  addLegacyCreateOptions,
  type LegacyCreateFlags,
  legacyBody,
  runLegacyCreate,
} from './legacy-create.ts';

interface ReframeFlags extends LegacyCreateFlags {
  mediaUrl?: string;
  aspectRatio?: string;
  model?: string;
  prompt?: string;
  format?: string;
  firstFrameUrl?: string;
  callbackUrl?: string;
}

/** The request from --request and the flags (flags win); the geometry comes from the file. */
export function reframeRequest(flags: ReframeFlags): Record<string, unknown> {
  return legacyBody(flags, {
    media: flags.mediaUrl === undefined ? undefined : { url: flags.mediaUrl },
    first_frame: flags.firstFrameUrl === undefined ? undefined : { url: flags.firstFrameUrl },
    aspect_ratio: flags.aspectRatio,
    model: flags.model,
    prompt: flags.prompt,
    format: flags.format,
    callback_url: flags.callbackUrl,
  });
}

const GEOMETRY_HELP =
  'the request body as a JSON file (flags override its fields); the geometry (x_start, x_end, y_start, y_end, resized_width, resized_height, grid_position_x, grid_position_y) is given here';

const IMAGE_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'an image by URL (as `legacy get` prints it) made portrait; waits, downloads into out/',
      line: 'genpipe legacy reframe-image --media-url <image-url> --aspect-ratio 9:16 --model photon-flash-1 --out out/',
    },
    {
      comment: 'with a crop and placement from a file, as JSON',
      line: 'genpipe legacy reframe-image --request reframe.json --media-url <image-url> --json',
    },
  ],
};

const VIDEO_EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a video by URL made square; waits, downloads into out/',
      line: 'genpipe legacy reframe-video --media-url <video-url> --aspect-ratio 1:1 --model ray-flash-2 --out out/',
    },
    {
      comment: 'prints it queued, with a request id of your own',
      line: "genpipe legacy reframe-video --media-url <video-url> --aspect-ratio 9:16 --model ray-2 --prompt 'extend the sky' --request-id tall-1",
    },
  ],
};

function reframeCommand(legacy: Command, name: string, what: string, models: readonly string[]): Command {
  return legacy
    .command(name)
    .description(`Reframe ${what} given by URL to another aspect ratio (flags or --request file.json)`)
    .option('--media-url <url>', `the source ${what.replace(/^an? /, '')} (http or https); required`)
    .option('--aspect-ratio <ratio>', `${LEGACY_ASPECT_RATIOS.join(', ')}; required`)
    .option('--model <model>', `${models.join(' or ')}; required`)
    .option('--prompt <text>', 'what to fill the new space with');
}

/** Registers `genpipe legacy reframe-image` and `reframe-video`. */
export function registerLegacyReframe(legacy: Command): void {
  const image = reframeCommand(legacy, 'reframe-image', 'an image', LEGACY_IMAGE_MODELS)
    .option('--format <format>', 'jpg (default) or png')
    .option('--callback-url <url>', 'receives the generation when dreaming, completed or failed')
    .option('--request <file>', GEOMETRY_HELP);
  addLegacyCreateOptions(image, IMAGE_EXAMPLES, 'output-0.jpg (or .png)', false).action(
    (flags: ReframeFlags) =>
      runLegacyCreate(flags, (ctx, requestId) =>
        ctx.client.legacy.reframeImage(reframeRequest(flags) as unknown as LegacyReframeImageInput, {
          requestId,
          signal: ctx.signal,
        }),
      ),
  );
  const video = reframeCommand(legacy, 'reframe-video', 'a video', LEGACY_VIDEO_MODELS)
    .option('--first-frame-url <url>', 'an image for the first frame')
    .option('--callback-url <url>', 'receives the generation when dreaming, completed or failed')
    .option('--request <file>', GEOMETRY_HELP);
  addLegacyCreateOptions(video, VIDEO_EXAMPLES, 'output-0.mp4', false).action((flags: ReframeFlags) =>
    runLegacyCreate(flags, (ctx, requestId) =>
      ctx.client.legacy.reframeVideo(reframeRequest(flags) as unknown as LegacyReframeVideoInput, {
        requestId,
        signal: ctx.signal,
      }),
    ),
  );
}
