/**
 * Operations on one of the caller's completed video generations, each making a new generation:
 * upscale (the same video at the asked resolution) and add audio (the same video with an audio track).
 */
import { join } from 'node:path';
import { addAudio, upscaleVideo } from '../media/render.ts';
import type { StoredOutput } from '../store.ts';
import type { LegacyRender } from './lifecycle.ts';

export function upscaleRender(source: StoredOutput, resolution: string): LegacyRender {
  return async (dir, signal) => {
    const out = await upscaleVideo({
      sourcePath: source.blobPath,
      resolution,
      outPath: join(dir, 'output.mp4'),
      signal,
    });
    return { type: 'video', mime: out.mime, blobPath: out.path, layer: null };
  };
}

export function audioRender(source: StoredOutput, prompt: string): LegacyRender {
  return async (dir, signal) => {
    const out = await addAudio({
      sourcePath: source.blobPath,
      prompt,
      outPath: join(dir, 'output.mp4'),
      signal,
    });
    return { type: 'video', mime: out.mime, blobPath: out.path, layer: null };
  };
}
