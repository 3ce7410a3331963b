/**
 * processing_ms may be a spread, [min, max], drawn per generation from the seeded random source: the
 * emulator then serves jobs of different lengths (a batch whose durations vary widely), the same
 * lengths for the same seed.
 */
import { describe, expect, it } from 'vitest';
import { drawMs, resolveConfig } from '../../src/emulator/config.ts';
import { Rng } from '../../src/emulator/rng.ts';

describe('processing_ms as a spread', () => {
  it('takes [min, max] per media kind, and a number as before', () => {
    const cfg = resolveConfig({ processing_ms: { image: [1000, 20000], video: 3000 } });
    expect(cfg.processing_ms).toEqual({ image: [1000, 20000], video: 3000 });
  });

  it('refuses a spread whose max is below its min, or that is not a pair, naming the field', () => {
    expect(() => resolveConfig({ processing_ms: { image: [5, 1] } })).toThrow(/processing_ms\.image\[1\]/);
    expect(() => resolveConfig({ processing_ms: { image: [1, 2, 3] } })).toThrow(
      /number or \[min, max\] for processing_ms\.image/,
    );
  });

  it('draws every time within the bounds, the same times for the same seed', () => {
    const draw = (seed: number) => {
      const rng = new Rng(seed);
      return Array.from({ length: 200 }, () => drawMs([1000, 20000], rng));
    };
    const a = draw(7);
    expect(a.every((ms) => ms >= 1000 && ms <= 20000)).toBe(true);
    expect(Math.max(...a) - Math.min(...a)).toBeGreaterThan(10000);
    expect(draw(7)).toEqual(a);
    expect(drawMs(1500, new Rng(1))).toBe(1500);
  });
});
