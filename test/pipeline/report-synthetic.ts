/**
 * A large made-up batch for the report's scale tests and bench: `n` finished items (no files behind
 * them) in a fixed mix — most succeeded, some failed for one of a few reasons (at check, at the
 * service, at download), some skipped, some left unprocessed, a few retried with an earlier attempt.
 */
import { type Item, type ItemAttempt, newItem } from '../../src/pipeline/item.ts';
import { patchItem } from '../helpers/item-patch.ts';

export const SYNTH_T0 = Date.UTC(2026, 0, 2, 12, 0, 0);

/** The failures of the mix: [stage, failure_code, reason]. */
export const SYNTH_FAILURES: [Item['failedAt'], string | null, string][] = [
  ['check', null, 'image could not be decoded: file is truncated'],
  ['check', null, 'video too long: 12.0 s > 10 s'],
  ['wait', 'content_moderated', 'The prompt or an input image violated the content guidelines.'],
  ['wait', 'generation_failed', 'The generation failed.'],
  ['download', null, 'download failed: connection reset'],
  ['submit', null, 'the service refused the request: 400 aspect_ratio: not one of 1:1, 16:9, 9:16'],
];

const EARLIER: ItemAttempt = {
  generation_id: 'gen-earlier',
  request_id: 'req-earlier',
  failure_code: 'generation_failed',
  failure_reason: 'The generation failed.',
};

/** The item numbered `i` of the synthetic batch (its kind is `i`'s place in a cycle of 100). */
export function synthItem(i: number): Item {
  const input = `shoot-${String(Math.floor(i / 1000)).padStart(3, '0')}/img-${String(i).padStart(6, '0')}.png`;
  const item = newItem(input, `/in/${input}`, 200_000 + (i % 977) * 131, SYNTH_T0);
  const start = SYNTH_T0 + (i % 5000) * 40;
  const kind = i % 100;
  if (kind < 8) return { ...item, state: 'skipped', reason: `no recipe rule matches '${input}'` };
  if (kind < 12) return { ...item, state: 'stopped' };
  const base = patchItem(item, {
    sniff: { mime: 'image/png', ext: 'png', kind: 'image' },
    media: { width: 1024, height: 768, bytes: item.size },
    inputAs: 'source',
    request: {
      type: 'image_edit',
      model: 'uni-1',
      prompt: `make image ${i} look like a watercolor painting`,
    },
    requestId: `req-${i}`,
    timings: {
      sniff: { started_at: start, finished_at: start + 3 },
      check: { started_at: start + 3, finished_at: start + 9 },
      upload: { started_at: start + 9, finished_at: start + 120 + (i % 37) },
      wait: { started_at: start + 200, finished_at: start + 2_000 + (i % 1013) * 7 },
    },
  });
  if (kind < 27) {
    const [stage, code, reason] = SYNTH_FAILURES[i % SYNTH_FAILURES.length]!;
    return patchItem(base, {
      state: 'failed',
      failedAt: stage,
      reason,
      generationId: code ? `gen-${i}` : null,
      generation: code ? { state: 'failed', failure_code: code, failure_reason: reason } : null,
    });
  }
  return patchItem(base, {
    state: 'reported',
    generationId: `gen-${i}`,
    generation: { state: 'completed', failure_code: null, failure_reason: null },
    outputs: [`${input}/output-0.png`],
    ...(kind < 30 ? { earlierAttempts: [EARLIER] } : {}),
  });
}

/** The first `n` items of the synthetic batch. */
export function* synthItems(n: number): Generator<Item> {
  for (let i = 0; i < n; i++) yield synthItem(i);
}
