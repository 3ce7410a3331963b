import { describe, expect, it } from 'vitest';
import { nextRewriteAt, REWRITE_SHARE_INVERSE } from '../../src/pipeline/runner/report-refresher.ts';

describe('running report rewrites', () => {
  it('wait 39 times as long as the last one took: a fortieth of the batch at most', () => {
    expect(REWRITE_SHARE_INVERSE).toBe(40);
    // A rewrite of a large batch that took 1 s: the next waits 39 s after it ended.
    expect(nextRewriteAt(10_000, 11_000)).toBe(50_000);
    const [started, ended] = [10_000, 11_000];
    const share = (ended - started) / (nextRewriteAt(started, ended) - started);
    expect(share).toBeCloseTo(1 / 40, 10);
  });

  it('leave a quick rewrite to the interval: one of 0 ms may be followed at once', () => {
    expect(nextRewriteAt(5_000, 5_000)).toBe(5_000);
  });
});
