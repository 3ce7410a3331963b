/** Signed URLs of generation outputs, served by `GET /_storage/outputs/:generationId/:index`. */
import type { EmulatorContext } from '../context.ts';
import { STORAGE_PREFIX, signUrl } from '../signing.ts';

/** Path (without query) of a generation output's URL. */
export function outputPath(generationId: string, index: number): string {
  return `${STORAGE_PREFIX}/outputs/${generationId}/${index}`;
}

/**
 * A fresh signed GET URL of a generation's output, valid for config.output_url_ttl_s. Call it on every
 * read of the generation so each response carries a URL valid for the full lifetime.
 * @param base scheme://host[:port] the caller reached us on (see publicBase)
 * @param index position of the output in the generation's `outputs`
 * @example outputUrl(ctx, publicBase(request), gen.id, 0) // 'http://127.0.0.1:4010/_storage/outputs/<id>/0?expires=…&sig=…'
 */
export function outputUrl(ctx: EmulatorContext, base: string, generationId: string, index: number): string {
  return signUrl(ctx, base, 'GET', outputPath(generationId, index), ctx.config.output_url_ttl_s).url;
}
