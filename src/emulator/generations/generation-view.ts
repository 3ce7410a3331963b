/** The Generation resource as GET and the 201 show it, with fresh signed output URLs on every call. */
import type { Generation, GenerationState } from '../../spec/index.ts';
import type { EmulatorContext } from '../context.ts';
import { outputUrl } from '../files/output-url.ts';
import type { GenerationRec } from '../store.ts';

/** The wire shape (src/spec/resources.ts). */
export type GenerationView = Generation;

/**
 * Renders an agents-surface generation. Outputs appear once it completed, each with a freshly signed URL.
 * @param base scheme://host[:port] the caller reached us on
 */
export function generationView(ctx: EmulatorContext, rec: GenerationRec, base: string): GenerationView {
  return {
    id: rec.id,
    type: rec.type,
    state: rec.state as GenerationState,
    model: rec.model,
    created_at: new Date(rec.createdAt).toISOString(),
    output:
      rec.state === 'completed'
        ? rec.outputs.map((o, i) => ({ type: o.type, url: outputUrl(ctx, base, rec.id, i), layer: o.layer }))
        : [],
    failure_reason: rec.failure_reason,
    failure_code: rec.failure_code,
  };
}
