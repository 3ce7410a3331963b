/**
 * Stage report (downloaded → reported): writes the item's `result.json` next to its outputs and marks
 * it done. (Items that end skipped or failed get their result.json from the runner.)
 */
import type { Item } from '../item.ts';
import { writeResultJson } from '../report/result-json.ts';
import type { RunContext } from '../run-context.ts';
import { advance, expectState } from '../stage.ts';

/**
 * Writes `<out>/<place>/result.json` for a downloaded item and advances it to `reported`.
 *
 * @example const done = await report(downloadedItem, ctx);
 */
export async function report(item: Item, ctx: RunContext): Promise<Item> {
  expectState(item, 'report', 'downloaded');
  const now = Date.now();
  // The runner closes this stage's timing when it returns; close it here too, for the file.
  const started = item.timings.report?.started_at ?? now;
  const next = advance(item, 'reported', {
    timings: { ...item.timings, report: { started_at: started, finished_at: now } },
  });
  await writeResultJson(next, ctx.outDir, { redact: ctx.redact });
  return next;
}
