/**
 * The legacy surface's Generation JSON (id, generation_type, state, failure_reason, created_at,
 * assets, model, request), built from a stored GenerationRec. The legacy shape has no failure_code.
 */
import {
  LEGACY_OPERATIONS,
  type LegacyAssets,
  type LegacyGeneration,
  type LegacyRequestType,
  type LegacyState,
} from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { outputUrl } from '../files/output-url.ts';
import type { GenerationRec } from '../store.ts';

/**
 * Renders a legacy generation for the caller. Output URLs are freshly signed against `base`.
 * @param ctx the emulator context (clock, signing secret, TTLs).
 * @param base scheme://host[:port] the caller reached us on.
 * @param rec a generation with surface 'legacy'.
 * @example
 * reply.send(legacyView(ctx, publicBase(request), rec));
 */
export function legacyView(ctx: EmulatorContext, base: string, rec: GenerationRec): LegacyGeneration {
  // null until there is an output (LEGACY_CHOICES.assetsUntilCompleted).
  let assets: LegacyAssets | null = null;
  if (rec.state === 'completed') {
    assets = {};
    const a = assets;
    rec.outputs.forEach((out, i) => {
      if (out.type === 'video' && a.video === undefined) a.video = outputUrl(ctx, base, rec.id, i);
      if (out.type === 'image' && a.image === undefined) a.image = outputUrl(ctx, base, rec.id, i);
    });
  }
  return {
    id: rec.id,
    generation_type: LEGACY_OPERATIONS[rec.legacyType as LegacyRequestType]?.generationType ?? 'video',
    state: rec.state as LegacyState,
    failure_reason: rec.failure_reason,
    created_at: new Date(rec.createdAt).toISOString(),
    assets,
    model: rec.model,
    request: rec.request,
  };
}
