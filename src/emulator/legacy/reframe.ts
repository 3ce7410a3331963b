/**
 * Reframe an image or a video (legacy ReframeImageRequest / ReframeVideoRequest) to a new aspect
 * ratio. The geometry fields, in px: x_start/x_end/y_start/y_end crop the source first (images);
 * resized_width/resized_height are the source's size on the output canvas and grid_position_x/y its
 * top-left corner there (default: fitted whole and centred). The canvas keeps the source's short side.
 */
import { join } from 'node:path';
import { isMediaError, probeVideo } from '../../media/index.ts';
import {
  LEGACY_OPERATION_CHOICES as C,
  LEGACY_CHOICES,
  LEGACY_FAILURE_REASONS,
  type LegacyReframeGeometry,
} from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { reframeCanvas } from '../media/edit-video.ts';
import { type ImageCrop, reframeImage, reframeVideo } from '../media/render.ts';
import type { SourcePosition } from '../media/types.ts';
import { LegacyFailure, type LegacyRender } from './lifecycle.ts';
import { fetchInput } from './sources.ts';

export interface ReframeRequest extends LegacyReframeGeometry {
  media: { url: string };
  first_frame?: { url: string };
  aspect_ratio: string;
  format?: 'jpg' | 'png';
}

/** The crop of x_start..x_end × y_start..y_end (a missing bound is the source's edge), or none. */
function cropOf(r: ReframeRequest): ImageCrop | undefined {
  if ([r.x_start, r.x_end, r.y_start, r.y_end].every((v) => v === undefined)) return undefined;
  const left = r.x_start ?? 0;
  const top = r.y_start ?? 0;
  const big = Number.MAX_SAFE_INTEGER;
  return {
    left,
    top,
    width: Math.max(1, (r.x_end ?? big) - left),
    height: Math.max(1, (r.y_end ?? big) - top),
  };
}

function placeOf(r: ReframeRequest) {
  return { width: r.resized_width, height: r.resized_height, x: r.grid_position_x, y: r.grid_position_y };
}

export function reframeImageRender(ctx: EmulatorContext, request: ReframeRequest): LegacyRender {
  return async (dir, signal) => {
    const field = 'media.url';
    const source = await fetchInput(ctx, request.media.url, join(dir, 'source'), {
      field,
      accept: 'image',
      maxBytes: C.imageMaxBytes,
      signal,
    });
    const format = request.format ?? 'jpg';
    try {
      const out = await reframeImage({
        sourcePath: source,
        aspectRatio: request.aspect_ratio,
        crop: cropOf(request),
        place: placeOf(request),
        format,
        outPath: join(dir, `output.${format}`),
      });
      return { type: 'image', mime: out.mime, blobPath: out.path, layer: null };
    } catch (err) {
      if (isMediaError(err)) throw new LegacyFailure(LEGACY_FAILURE_REASONS.imageUndecodable(field));
      throw err;
    }
  };
}

export function reframeVideoRender(ctx: EmulatorContext, request: ReframeRequest): LegacyRender {
  return async (dir, signal) => {
    const field = 'media.url';
    const maxBytes = LEGACY_CHOICES.sourceMaxBytes;
    const source = await fetchInput(ctx, request.media.url, join(dir, 'source'), {
      field,
      accept: 'video',
      maxBytes,
      signal,
    });
    if (request.first_frame) {
      // Fetched so an unreachable first frame fails like a real service; the reframe does not use it.
      const ff = 'first_frame.url';
      await fetchInput(ctx, request.first_frame.url, join(dir, 'first-frame'), {
        field: ff,
        accept: 'image',
        maxBytes: C.imageMaxBytes,
        signal,
      });
    }
    try {
      const probe = await probeVideo(source);
      if (probe.durationSeconds > LEGACY_CHOICES.sourceMaxSeconds) {
        throw new LegacyFailure(LEGACY_FAILURE_REASONS.tooLong(field, LEGACY_CHOICES.sourceMaxSeconds));
      }
      const canvas = reframeCanvas(probe, request.aspect_ratio);
      const place = placeOf(request);
      const pos: SourcePosition = {};
      if (place.width !== undefined) pos.w_norm = place.width / canvas.width;
      if (place.height !== undefined) pos.h_norm = place.height / canvas.height;
      if (place.x !== undefined) pos.x_norm = place.x / canvas.width;
      if (place.y !== undefined) pos.y_norm = place.y / canvas.height;
      const out = await reframeVideo({
        sourcePath: source,
        aspectRatio: request.aspect_ratio,
        sourcePosition: pos,
        outPath: join(dir, 'output.mp4'),
        signal,
      });
      return { type: 'video', mime: out.mime, blobPath: out.path, layer: null };
    } catch (err) {
      if (isMediaError(err, 'corrupt') || isMediaError(err, 'unsupported')) {
        throw new LegacyFailure(LEGACY_FAILURE_REASONS.undecodable(field));
      }
      throw err;
    }
  };
}
