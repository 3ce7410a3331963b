/**
 * Stage download (completed → downloaded): the generation's outputs into the item's out folder
 * `<out>/<place>/` (see itemPlace) through the client (each streamed to a `.part` file and renamed when complete; expired URLs
 * refreshed): `output-<i>.<ext>` per output, `layer-<index>.png` per layer of a layer stack. The
 * layers are recorded with the service's metadata (item.layers) and composited into `composite.png`.
 */
import { join, relative, sep } from 'node:path';
import { isChain } from '../chain.ts';
import { type Item, type ItemLayer, stepOf } from '../item.ts';
import { isLegacyRequest } from '../legacy-request.ts';
import { itemFolder } from '../report/item-paths.ts';
import type { RunContext } from '../run-context.ts';
import { isRunnersToHandle, reasonOf } from '../runner-errors.ts';
import { advanceStep, expectState, failStep } from '../stage.ts';
import { composite } from './composite.ts';

/**
 * Downloads the item's outputs and advances it to `downloaded` with `outputs` (paths relative to the
 * out dir), `layers` and `composite` set. Fails it when an output cannot be fetched or the layer
 * stack cannot be composited.
 *
 * @example const next = await download(completedItem, ctx); // next.outputs → ['a.png/output-0.png']
 */
export async function download(item: Item, ctx: RunContext): Promise<Item> {
  expectState(item, 'download', 'completed');
  ctx.signal.throwIfAborted();
  const step = stepOf(item);
  const id = step.generationId;
  if (!id) return failStep(item, 'download', 'no generation id was recorded for this item');
  // A chain step's outputs go to `<place>/<step>/`, and only when asked for (StepRecord.download).
  if (step.download === false) {
    ctx.completedReads.delete(id);
    return advanceStep(item, 'downloaded', { outputs: [], layers: [], composite: null });
  }
  const rel = (abs: string) => relative(ctx.outDir, abs).split(sep).join('/');
  try {
    const dir = isChain(item) ? join(itemFolder(ctx.outDir, item), step.name) : itemFolder(ctx.outDir, item);
    // The read that found it completed, when this run made it: no second read of the generation.
    const read = ctx.completedReads.get(id);
    ctx.completedReads.delete(id);
    const files = isLegacyRequest(step.request)
      ? await ctx.client.legacy.download(id, dir, { signal: ctx.signal })
      : await ctx.client.generations.download(read ?? id, dir, { signal: ctx.signal });
    const outputs = files.map((f) => rel(f.path));
    const layers: ItemLayer[] = files
      .filter((f) => f.layer)
      .map((f) => {
        const layer = f.layer!;
        const bounds = layer.bounds ?? null;
        return {
          path: rel(f.path),
          alpha_hint: layer.alpha_hint,
          description: layer.description,
          index: layer.index,
          bounds: bounds ? { ...bounds } : null,
        };
      });
    const next = advanceStep(item, 'downloaded', { outputs, layers, composite: null });
    return await composite(next, ctx.outDir);
  } catch (err) {
    if (isRunnersToHandle(err, ctx.signal)) throw err;
    return failStep(item, 'download', `the outputs could not be downloaded: ${reasonOf(err)}`);
  }
}
