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

  it('of a small batch wait 9 times as long: a slow rewrite on a loaded machine delays the next by seconds, not tens', () => {
    expect([SMALL_REPORT_FILES, SMALL_REWRITE_SHARE_INVERSE]).toEqual([1_000, 10]);
    expect(nextRewriteAt(0, 300, 2)).toBe(3_000);
    expect(nextRewriteAt(0, 300, SMALL_REPORT_FILES)).toBe(300 + 39 * 300);
  });

  it('leave out the time spent waiting for thumbnails being made: they are made once per file', () => {
    // 300 ms, 280 of them on the thumbnails of its first files: the next may come 9 × 20 ms later.
    expect(nextRewriteAt(0, 300, 2, 280)).toBe(300 + 9 * 20);
    expect(nextRewriteAt(0, 1_300, 5_000, 300)).toBe(1_300 + 39 * 1_000);
    expect(nextRewriteAt(0, 300, 2, 400)).toBe(300); // never before the rewrite ended
  });

  it('leave a quick rewrite to the interval: one of 0 ms may be followed at once', () => {
    expect(nextRewriteAt(5_000, 5_000, 10)).toBe(5_000);
  });
});
