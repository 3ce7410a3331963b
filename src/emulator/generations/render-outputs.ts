/**
 * Producing a generation's real outputs with the renderers: image → renderImage; image_edit →
 * editImage, or layerStack when the prompt asks for "layers"; video → renderVideo (with start/end
 * frames, extracted from the prior video for an extend, in that video's shape and resolution unless the
 * caller sent them); video_edit → editVideo; video_reframe → reframeVideo.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { CHOICES, type NormalizedGenerationRequest } from '../../spec/index.ts';
import {
  editImage,
  editVideo,
  layerStack,
  reframeVideo,
  renderImage,
  renderVideo,
  writeTinyAnchoredVideo,
  writeTinyImageOf,
  writeTinyMp4,
  writeTinyPng,
  writeTinyVideoOf,
} from '../media/render.ts';
import type { StoredOutput } from '../store.ts';
import { extendedVideo, extendShape, extractFrame } from './extend-frame.ts';
import type { ResolvedMedia } from './media-refs.ts';
import { containsWord } from './moderation.ts';

export interface RenderJob {
  request: NormalizedGenerationRequest;
  /** video.resolution exactly as the caller sent it (edits and extends keep the source's otherwise). */
  explicitResolution?: string;
  /** aspect_ratio exactly as the caller sent it (an extend keeps its parent's shape otherwise). */
  explicitAspectRatio?: string;
  media: readonly ResolvedMedia[];
  /** Directory for this generation's output files. */
  outDir: string;
  /** Scratch directory (extracted extend frames); removed when the generation ends. */
  workDir: string;
  signal?: AbortSignal;
  /** A minimal file per output instead of a rendering (config `tiny_outputs`); layer stacks still render. */
  tiny?: boolean;
}

function mediaAt(media: readonly ResolvedMedia[], path: string): ResolvedMedia | undefined {
  return media.find((m) => m.path === path);
}

function sourceOf(job: RenderJob): string {
  const source = mediaAt(job.media, 'source');
  if (!source) throw new Error('source media is missing');
  return source.filePath;
}

/** Whether an image_edit prompt asks for a layer stack ("layers" as a whole word). */
export function wantsLayers(prompt: string | undefined): boolean {
  return prompt !== undefined && containsWord(prompt, CHOICES.layersPromptWord);
}

/** The image file to use for a video anchor frame: the image itself, or a frame of the prior video. */
async function anchorFrame(job: RenderJob, path: 'video.start_frame' | 'video.end_frame') {
  const m = mediaAt(job.media, path);
  if (!m) return undefined;
  if (m.kind === 'image') return m.filePath;
  const which = path === 'video.start_frame' ? 'last' : 'first';
  await mkdir(job.workDir, { recursive: true });
  return extractFrame(m.filePath, which, join(job.workDir, `${which}-frame.png`), job.signal);
}

/**
 * Renders every output of the job into `job.outDir`.
 * @returns the outputs in the order GET shows them (front to back for a layer stack)
 * @throws whatever the renderer throws (a MediaError for undecodable input)
 */
export async function renderOutputs(job: RenderJob): Promise<StoredOutput[]> {
  const { request } = job;
  const prompt = request.prompt ?? '';
  await mkdir(job.outDir, { recursive: true });
  const video = request.video ?? {};
  if (job.tiny && !(request.type === 'image_edit' && wantsLayers(request.prompt))) return tinyOutputs(job);
  switch (request.type) {
    case 'image': {
      const r = await renderImage({
        prompt,
        aspectRatio: request.aspect_ratio ?? CHOICES.defaultImageAspectRatio,
        model: request.model,
        outPath: join(job.outDir, 'output-0.png'),
      });
      return [{ type: CHOICES.outputTypes.image, mime: r.mime, blobPath: r.path, layer: null }];
    }
    case 'image_edit': {
      if (wantsLayers(request.prompt)) {
        const layers = await layerStack({ sourcePath: sourceOf(job), outDir: join(job.outDir, 'layers') });
        return layers.map((l) => ({
          type: CHOICES.outputTypes.layers,
          mime: 'image/png',
          blobPath: l.path,
          layer: { alpha_hint: l.alpha_hint, description: l.description, index: l.index, bounds: l.bounds },
        }));
      }
      const r = await editImage({
        sourcePath: sourceOf(job),
        prompt,
        aspectRatio: request.aspect_ratio,
        outPath: join(job.outDir, 'output-0.png'),
      });
      return [{ type: CHOICES.outputTypes.image, mime: r.mime, blobPath: r.path, layer: null }];
    }
    case 'video': {
      const parent = extendedVideo(job.media);
      const shape = parent
        ? await extendShape(parent.filePath, {
            aspectRatio: job.explicitAspectRatio,
            resolution: job.explicitResolution,
          })
        : undefined;
      const r = await renderVideo({
        prompt,
        aspectRatio: shape?.aspectRatio ?? request.aspect_ratio ?? CHOICES.defaultVideoAspectRatio,
        duration: video.duration ?? CHOICES.defaultVideoDuration,
        resolution: shape?.resolution ?? video.resolution ?? CHOICES.defaultVideoResolution,
        outPath: join(job.outDir, 'output-0.mp4'),
        startFramePath: await anchorFrame(job, 'video.start_frame'),
        endFramePath: await anchorFrame(job, 'video.end_frame'),
        signal: job.signal,
      });
      return [{ type: CHOICES.outputTypes.video, mime: r.mime, blobPath: r.path, layer: null }];
    }
    case 'video_edit': {
      const r = await editVideo({
        sourcePath: sourceOf(job),
        prompt,
        resolution: job.explicitResolution,
        outPath: join(job.outDir, 'output-0.mp4'),
        signal: job.signal,
      });
      return [{ type: CHOICES.outputTypes.video, mime: r.mime, blobPath: r.path, layer: null }];
    }
    case 'video_reframe': {
      const r = await reframeVideo({
        sourcePath: sourceOf(job),
        aspectRatio: request.aspect_ratio ?? CHOICES.defaultVideoAspectRatio,
        resolution: job.explicitResolution,
        outPath: join(job.outDir, 'output-0.mp4'),
        sourcePosition: request.video?.source_position,
        signal: job.signal,
      });
      return [{ type: CHOICES.outputTypes.video, mime: r.mime, blobPath: r.path, layer: null }];
    }
  }
}

/**
 * The one minimal output of a job (tiny_outputs): an 8×8 PNG for images, a one-frame 16×16 MP4 for
 * videos; made of the earlier media a job uses (an edit's source, a reframe's, an extend's or anchored
 * video's frames), so a chain of tiny outputs still shows which media it used.
 */
async function tinyOutputs(job: RenderJob): Promise<StoredOutput[]> {
  const { request } = job;
  const image = (r: { path: string; mime: string }): StoredOutput[] => [
    { type: CHOICES.outputTypes.image, mime: r.mime, blobPath: r.path, layer: null },
  ];
  const video = (r: { path: string; mime: string }): StoredOutput[] => [
    { type: CHOICES.outputTypes.video, mime: r.mime, blobPath: r.path, layer: null },
  ];
  const png = join(job.outDir, 'output-0.png');
  const mp4 = join(job.outDir, 'output-0.mp4');
  switch (request.type) {
    case 'image':
      return image(await writeTinyPng(png));
    case 'image_edit':
      return image(await writeTinyImageOf(sourceOf(job), png));
    case 'video_edit':
    case 'video_reframe':
      return video(
        await writeTinyVideoOf({
          sourcePath: sourceOf(job),
          aspectRatio: request.type === 'video_reframe' ? request.aspect_ratio : undefined,
          outPath: mp4,
          signal: job.signal,
        }),
      );
    case 'video': {
      const anchors = [
        await anchorFrame(job, 'video.start_frame'),
        await anchorFrame(job, 'video.end_frame'),
      ];
      const anchorPaths = anchors.filter((p): p is string => p !== undefined);
      if (anchorPaths.length === 0) return video(await writeTinyMp4(mp4));
      const parent = extendedVideo(job.media);
      const shape = parent
        ? await extendShape(parent.filePath, {
            aspectRatio: job.explicitAspectRatio,
            resolution: job.explicitResolution,
          })
        : undefined;
      return video(
        await writeTinyAnchoredVideo({
          anchorPaths,
          aspectRatio: shape?.aspectRatio,
          outPath: mp4,
          signal: job.signal,
        }),
      );
    }
  }
}
