/**
 * Text-to-video and image-to-video (legacy GenerationRequest): a video of the asked shape, resolution
 * and duration seeded by the prompt and concepts; keyframes give the first (frame0) and last (frame1)
 * frames — an image by URL, or a completed generation of the caller: its video's last frame for frame0
 * (extend), its first frame for frame1 (reverse extend), or its image; an extend keeps that video's
 * aspect ratio and resolution unless the request gives them. `loop` ends on the first frame.
 */
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LEGACY_OPERATION_CHOICES as C, LEGACY_OPERATION_DETAILS } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { extendShape, extractFrame } from '../generations/extend-frame.ts';
import { HttpError } from '../http-error.ts';
import { renderImage, renderVideo } from '../media/render.ts';
import type { StoredOutput } from '../store.ts';
import type { LegacyRender } from './lifecycle.ts';
import { completedOutput, fetchInput } from './sources.ts';

type Keyframe = { type: 'generation'; id: string } | { type: 'image'; url: string };

export interface VideoRequest {
  prompt?: string;
  aspect_ratio?: string;
  loop?: boolean;
  keyframes?: { frame0?: Keyframe; frame1?: Keyframe };
  model: string;
  resolution?: string;
  duration?: string;
  concepts?: { key: string }[];
}

/** A keyframe resolved at create time: an image URL to fetch, or an output file of the caller's. */
type FrameSource = { url: string } | { output: StoredOutput };

/**
 * Checks the generation keyframes (they must be the caller's completed generations) and returns the
 * render of the video.
 * @throws HttpError 400 for a keyframe generation that is unknown (or another client's) or not completed
 */
export function videoRender(ctx: EmulatorContext, clientId: string, request: VideoRequest): LegacyRender {
  const frames: { frame0?: FrameSource; frame1?: FrameSource } = {};
  for (const name of ['frame0', 'frame1'] as const) {
    const kf = request.keyframes?.[name];
    if (!kf) continue;
    if (kf.type === 'image') frames[name] = { url: kf.url };
    else {
      const path = `keyframes.${name}`;
      const notFound = () =>
        new HttpError(400, LEGACY_OPERATION_DETAILS.keyframeGenerationNotFound(path, kf.id));
      const { output } = completedOutput(ctx, clientId, kf.id, path, notFound);
      frames[name] = { output };
    }
  }
  return async (dir, signal) => {
    const resolve = async (name: 'frame0' | 'frame1'): Promise<string | undefined> => {
      const src = frames[name];
      if (!src) return undefined;
      const dest = join(dir, `${name}.img`);
      if ('url' in src) {
        const field = `keyframes.${name}.url`;
        return fetchInput(ctx, src.url, dest, { field, accept: 'image', maxBytes: C.imageMaxBytes, signal });
      }
      if (src.output.type === 'video') {
        return extractFrame(src.output.blobPath, name === 'frame0' ? 'last' : 'first', `${dest}.png`, signal);
      }
      await copyFile(src.output.blobPath, dest);
      return dest;
    };
    // An extend (a video generation as a keyframe) keeps that video's shape unless the request says.
    const parent = [frames.frame0, frames.frame1].find(
      (f) => f && 'output' in f && f.output.type === 'video',
    );
    const shape =
      parent && 'output' in parent
        ? await extendShape(parent.output.blobPath, {
            aspectRatio: request.aspect_ratio,
            resolution: request.resolution,
          })
        : { aspectRatio: request.aspect_ratio, resolution: request.resolution };
    const aspectRatio = shape.aspectRatio ?? C.defaultAspectRatio;
    const prompt = [request.prompt ?? '', ...(request.concepts ?? []).map((c) => c.key)].join(' ').trim();
    let start = await resolve('frame0');
    let end = await resolve('frame1');
    if (request.loop) {
      // A loop ends where it starts: on frame0, or on a still of the prompt when there is none.
      if (!start) {
        start = (
          await renderImage({ prompt, aspectRatio, model: request.model, outPath: join(dir, 'loop.png') })
        ).path;
      }
      end = start;
    }
    const out = await renderVideo({
      prompt,
      aspectRatio,
      duration: request.duration ?? C.defaultDuration,
      resolution: shape.resolution ?? C.defaultResolution,
      outPath: join(dir, 'output.mp4'),
      startFramePath: start,
      endFramePath: end,
      signal,
    });
    return { type: 'video', mime: out.mime, blobPath: out.path, layer: null };
  };
}
