import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import {
  growHeapBeforeMarking,
  growingPercentFor,
  HEAP_HEADROOM_BYTES,
  MIN_GROWING_PERCENT,
  SMALL_HEAP_BYTES,
  SMALL_HEAP_GROWING_PERCENT,
} from '../../src/cli/heap-growth.ts';

describe('growHeapBeforeMarking', () => {
  it('leaves a growing factor the user gave on the command line or in NODE_OPTIONS alone', () => {
    expect(growHeapBeforeMarking(['--heap-growing-percent=50'], '')).toBe(false);
    expect(growHeapBeforeMarking([], '--max-old-space-size=512 --heap_growing_percent=80')).toBe(false);
  });

  it('sets the factor otherwise, and the process goes on allocating and collecting', () => {
    expect(growHeapBeforeMarking([], '--max-old-space-size=512')).toBe(true);
    const kept: number[][] = [];
    for (let i = 0; i < 2_000; i++) kept.push(new Array(1_000).fill(i));
    kept.length = 0;
    expect(getHeapStatistics().used_heap_size).toBeGreaterThan(0);
  });

  it('lets a small heap grow three times what survived, and a larger one only HEAP_HEADROOM_BYTES more', () => {
    expect(growingPercentFor(20 * 2 ** 20)).toBe(SMALL_HEAP_GROWING_PERCENT);
    expect(growingPercentFor(SMALL_HEAP_BYTES - 1)).toBe(SMALL_HEAP_GROWING_PERCENT);
    // Past SMALL_HEAP_BYTES the room above what survived stays HEAP_HEADROOM_BYTES: the peak heap grows
    // by what the live heap grows, not by a multiple of it.
    for (const mb of [32, 48, 96, 150, 250]) {
      const used = mb * 2 ** 20;
      const room = (used * growingPercentFor(used)) / 100;
      expect(Math.abs(room - HEAP_HEADROOM_BYTES)).toBeLessThan(used / 100);
    }
    expect(growingPercentFor(4 * 2 ** 30)).toBe(MIN_GROWING_PERCENT);
  });
});
