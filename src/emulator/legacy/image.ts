/**
 * Image generation (legacy ImageGenerationRequest): an image of the asked aspect ratio drawn from the
 * prompt, as jpg or png. modify_image_ref makes it an edit of that image; image_ref, style_ref and
 * character_ref images are fetched (an unreachable one fails the generation) and seed the drawing.
 */
import { join } from 'node:path';
import { isMediaError } from '../../media/index.ts';
import { LEGACY_OPERATION_CHOICES as C, LEGACY_FAILURE_REASONS } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { editImage, encodeImage, renderImage } from '../media/render.ts';
import { LegacyFailure, type LegacyRender } from './lifecycle.ts';
import { fetchInput } from './sources.ts';

interface Ref {
  url: string;
  weight?: number;
}

export interface ImageRequest {
  model: string;
  prompt?: string;
  aspect_ratio?: string;
  format: 'jpg' | 'png';
  image_ref?: Ref[];
  style_ref?: Ref[];
  character_ref?: Record<string, { images: string[] }>;
  modify_image_ref?: Ref;
}

/** The references of a request with the field path each is reported under. */
function references(request: ImageRequest): { field: string; url: string }[] {
  const refs = [
    ...(request.image_ref ?? []).map((r, i) => ({ field: `image_ref[${i}].url`, url: r.url })),
    ...(request.style_ref ?? []).map((r, i) => ({ field: `style_ref[${i}].url`, url: r.url })),
  ];
  for (const [id, identity] of Object.entries(request.character_ref ?? {})) {
    identity.images.forEach((url, i) => {
      refs.push({ field: `character_ref.${id}.images[${i}]`, url });
    });
  }
  return refs;
}

export function imageRender(ctx: EmulatorContext, request: ImageRequest): LegacyRender {
  return async (dir, signal) => {
    const aspectRatio = request.aspect_ratio ?? C.defaultAspectRatio;
    const refs = references(request);
    for (const [i, ref] of refs.entries()) {
      await fetchInput(ctx, ref.url, join(dir, `ref-${i}`), {
        field: ref.field,
        accept: 'image',
        maxBytes: C.imageMaxBytes,
        signal,
      });
    }
    const prompt = [request.prompt ?? '', ...refs.map((r) => r.url)].join(' ').trim();
    const drawn = join(dir, 'drawn.png');
    const modify = request.modify_image_ref;
    if (modify) {
      const field = 'modify_image_ref.url';
      const source = await fetchInput(ctx, modify.url, join(dir, 'modify-source'), {
        field,
        accept: 'image',
        maxBytes: C.imageMaxBytes,
        signal,
      });
      try {
        await editImage({ sourcePath: source, prompt, aspectRatio: request.aspect_ratio, outPath: drawn });
      } catch (err) {
        if (isMediaError(err)) throw new LegacyFailure(LEGACY_FAILURE_REASONS.imageUndecodable(field));
        throw err;
      }
    } else {
      await renderImage({ prompt, aspectRatio, model: request.model, outPath: drawn });
    }
    const out = await encodeImage(drawn, request.format, join(dir, `output.${request.format}`));
    return { type: 'image', mime: out.mime, blobPath: out.path, layer: null };
  };
}
