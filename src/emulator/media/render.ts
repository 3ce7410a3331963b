/**
 * Real media outputs of the emulator: images with sharp, videos with ffmpeg. Every function writes its
 * output files (atomically) and returns what it wrote. This module is the renderers' one entry point.
 */

export { addAudio } from './add-audio.ts';
export { editVideo, reframeVideo } from './edit-video.ts';
export { layerStack } from './layer-stack.ts';
export { encodeImage, type ImageCrop, reframeImage } from './reframe-image.ts';
export { editImage, renderImage } from './render-image.ts';
export { renderVideo } from './render-video.ts';
export { writeTinyAnchoredVideo, writeTinyImageOf, writeTinyVideoOf } from './tiny-chained.ts';
export { writeTinyMp4, writeTinyPng } from './tiny-output.ts';
export type { LayerBounds, RenderedImage, RenderedLayer, RenderedVideo, SourcePosition } from './types.ts';
export { upscaleVideo } from './upscale-video.ts';
