/** `genpipe legacy generate-video`: a video from a prompt, keyframes and camera concepts. */
import type { Command } from 'commander';
import type { LegacyKeyframe, LegacyVideoInput } from '../../client/index.ts';
import { LEGACY_ASPECT_RATIOS, LEGACY_VIDEO_MODELS } from '../../spec/index.ts';
import { AGAINST_SERVE, type Examples } from '../command-examples.ts';
import { collect } from '../flag-groups/parsers.ts';
import {
  addLegacyCreateOptions,
  type LegacyCreateFlags,
  legacyBody,
  runLegacyCreate,
} from './legacy-create.ts';

interface VideoFlags extends LegacyCreateFlags {
  prompt?: string;
  model?: string;
  aspectRatio?: string;
  resolution?: string;
  duration?: string;
  loop?: boolean;
  frame0?: string;
  frame1?: string;
  concept?: string[];
  callbackUrl?: string;
}

/** A keyframe flag: `generation:<id>` (one of your completed generations) or an image URL. */
export function keyframeArg(text: string): LegacyKeyframe {
  const m = /^generation:(.*)$/i.exec(text.trim());
  return m ? { type: 'generation', id: (m[1] ?? '').trim() } : { type: 'image', url: text.trim() };
}

/** The request from --request and the flags (flags win; --frame0/--frame1 over the file's keyframes). */
export function videoRequest(flags: VideoFlags): LegacyVideoInput {
  const body = legacyBody(flags, {
    prompt: flags.prompt,
    model: flags.model,
    aspect_ratio: flags.aspectRatio,
    resolution: flags.resolution,
    duration: flags.duration,
    loop: flags.loop,
    concepts: flags.concept?.map((key) => ({ key })),
    callback_url: flags.callbackUrl,
  });
  if (flags.frame0 !== undefined || flags.frame1 !== undefined) {
    const given = typeof body.keyframes === 'object' && body.keyframes !== null ? body.keyframes : {};
    body.keyframes = {
      ...given,
      ...(flags.frame0 !== undefined ? { frame0: keyframeArg(flags.frame0) } : {}),
      ...(flags.frame1 !== undefined ? { frame1: keyframeArg(flags.frame1) } : {}),
    };
  }
  return body as LegacyVideoInput;
}

const EXAMPLES: Examples = {
  setup: AGAINST_SERVE,
  examples: [
    {
      comment: 'a short video from a prompt; waits, downloads into out/',
      line: "genpipe legacy generate-video --prompt 'a lighthouse at dusk' --resolution 360p --duration 2s --out out/",
    },
    {
      comment: 'extend one of your completed videos, with a slow zoom; prints it queued',
      line: "genpipe legacy generate-video --frame0 generation:<generation-id> --prompt 'the tide comes in' --concept zoom_in",
    },
    {
      comment: 'the body from a file, the model from a flag, waited for, as JSON',
      line: 'genpipe legacy generate-video --request video.json --model ray-flash-2 --wait --json',
    },
  ],
};

/** Registers `genpipe legacy generate-video`. */
export function registerLegacyVideo(legacy: Command): void {
  const cmd = legacy
    .command('generate-video')
    .description('Create a video from a prompt, keyframes and camera concepts (flags or --request file.json)')
    .option('--prompt <text>', 'what to make')
    .option('--model <model>', `${LEGACY_VIDEO_MODELS.join(' or ')} (default ray-2)`)
    .option('--aspect-ratio <ratio>', `${LEGACY_ASPECT_RATIOS.join(', ')} (default 16:9)`)
    .option('--resolution <r>', 'short side, e.g. 360p, 540p, 720p (default), 1080p')
    .option('--duration <d>', 'e.g. 5s (default), 9s')
    .option('--loop', 'end on the first frame')
    .option('--frame0 <ref>', 'the first frame: an image URL, or generation:<id> (extends that video)')
    .option('--frame1 <ref>', 'the last frame: an image URL, or generation:<id>')
    .option('--concept <key>', 'a camera concept (repeatable; `genpipe legacy concepts` lists them)', collect)
    .option('--callback-url <url>', 'receives the generation when dreaming, completed or failed');
  addLegacyCreateOptions(cmd, EXAMPLES, 'output-0.mp4').action((flags: VideoFlags) =>
    runLegacyCreate(flags, (ctx, requestId) =>
      ctx.client.legacy.createVideo(videoRequest(flags), { requestId, signal: ctx.signal }),
    ),
  );
}
