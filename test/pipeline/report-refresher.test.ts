import { describe, expect, it } from 'vitest';
import {
  nextRewriteAt,
  REWRITE_SHARE_INVERSE,
  SMALL_REPORT_FILES,
  SMALL_REWRITE_SHARE_INVERSE,
} from '../../src/pipeline/runner/report-refresher.ts';

describe('running report rewrites', () => {
  it('of a large batch wait 39 times as long as the last one took: a fortieth of the batch at most', () => {
    expect(REWRITE_SHARE_INVERSE).toBe(40);
    // A rewrite of 5,000 files that took 1 s: the next waits 39 s after it ended.
    expect(nextRewriteAt(10_000, 11_000, 5_000)).toBe(50_000);
    const share = (11_000 - 10_000) / (nextRewriteAt(10_000, 11_000, 5_000) - 10_000);
    expect(share).toBeCloseTo(1 / 40, 10);
  });

  it('of a small batch wait 9 times as long: a slow first rewrite (its thumbnails) delays the next by seconds, not tens', () => {
    expect([SMALL_REPORT_FILES, SMALL_REWRITE_SHARE_INVERSE]).toEqual([1_000, 10]);
    expect(nextRewriteAt(0, 300, 2)).toBe(3_000);
    expect(nextRewriteAt(0, 300, SMALL_REPORT_FILES)).toBe(300 + 39 * 300);
  });

  it('leave a quick rewrite to the interval: one of 0 ms may be followed at once', () => {
    expect(nextRewriteAt(5_000, 5_000, 10)).toBe(5_000);
  });
});
