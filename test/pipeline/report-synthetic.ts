/**
 * A large made-up batch for the report's scale tests and bench: `n` finished items (no files behind
 * them) in a fixed mix — most succeeded, some failed for one of a few causes (at check, at the
 * service, at download; each file's reason with its own sizes, durations, ids), some skipped, some left unprocessed, a few retried with an earlier attempt.
 */
import { type Item, type ItemAttempt, newItem } from '../../src/pipeline/item.ts';
import { patchItem } from '../helpers/item-patch.ts';

export const SYNTH_T0 = Date.UTC(2026, 0, 2, 12, 0, 0);

/**
 * The failures of the mix — [stage, failure_code, reason of the file numbered i] — worded as genpipe and
 * the service word them, with the details of each file (sizes, durations, ids) in them.
 */
export const SYNTH_FAILURES: [Item['failedAt'], string | null, (i: number) => string][] = [
  [
    'check',
    null,
    (i) =>
      `source: image is ${8001 + (i % 4000)}x${30 + (i % 900)}px but each side must be <= 8000px. Resize and try again.`,
  ],
  [
    'check',
    null,
    (i) =>
      `source: video is ${(30 + (i % 97) / 10).toFixed(1)}s long but must be at most 30s for type 'video_reframe'`,
  ],
  ['wait', 'content_moderated', () => 'The prompt or an input image violated the content guidelines.'],
  [
    'submit',
    null,
    (i) =>
      `submission outcome unknown (request id ${synthUuid(i)}): the create may have reached the service — the run sending it was interrupted, or its answer was lost — so it was not sent again, which could pay twice. Rerun with --resubmit-unknown to submit it again`,
  ],
  [
    'download',
    null,
    (i) =>
      `the outputs could not be downloaded: shoot-${String(Math.floor(i / 1000)).padStart(3, '0')}/img-${String(i).padStart(6, '0')}.png/output-0.png has ${1000 + i * 7} bytes, ${2_000_000 + i} expected`,
  ],
  [
    'submit',
    null,
    (i) => `Invalid aspect_ratio '${['4:5', '2:1', '5:4'][Math.floor(i / 6) % 3]}'. Valid: 16:9, 1:1, 9:16`,
  ],
];

/** A request id of the file numbered i (a uuid, as genpipe makes them). */
export function synthUuid(i: number): string {
  const h = (n: number, w: number) => ((n * 2654435761) >>> 0).toString(16).padStart(8, '0').slice(0, w);
  return `${h(i + 1, 8)}-${h(i + 7, 4)}-4${h(i + 3, 3)}-a${h(i + 5, 3)}-${h(i + 11, 8)}${h(i + 13, 4)}`;
}

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
    const [stage, code, reasonOf] = SYNTH_FAILURES[i % SYNTH_FAILURES.length]!;
    const reason = reasonOf(i);
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
