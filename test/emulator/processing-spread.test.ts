/**
 * processing_ms may be a spread, [min, max], drawn per generation from the seeded random source: the
 * emulator then serves jobs of different lengths (a batch whose durations vary widely), the same
 * lengths for the same seed.
 */
import { describe, expect, it } from 'vitest';
import { drawMs, processingMsFor, resolveConfig } from '../../src/emulator/config.ts';
import { Rng } from '../../src/emulator/rng.ts';
import { call, startTestEmulator } from '../helpers/emulator.ts';
import { terminal } from './generations-helpers.ts';

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

describe('processing_ms per type', () => {
  it('gives image_edit, video_edit and video_reframe their own time when set, else their kind’s', () => {
    const cfg = resolveConfig({ processing_ms: { image: 10, video: 20, video_reframe: [5, 6] } });
    expect(processingMsFor(cfg.processing_ms, 'video_reframe')).toEqual([5, 6]);
    expect(processingMsFor(cfg.processing_ms, 'video_edit')).toBe(20);
    expect(processingMsFor(cfg.processing_ms, 'video')).toBe(20);
    expect(processingMsFor(cfg.processing_ms, 'image_edit')).toBe(10);
    expect(processingMsFor(cfg.processing_ms, 'image')).toBe(10);
    expect(() => resolveConfig({ processing_ms: { image_edit: 'slow' } })).toThrow(
      /for processing_ms\.image_edit/,
    );
  });

  it('keeps a type with its own time processing at least that long, over HTTP', async () => {
    const emu = await startTestEmulator({ tiny_outputs: true, processing_ms: { image: 0, image_edit: 700 } });
    try {
      const image = await call(emu, 'POST', '/v1/generations', { json: { type: 'image', prompt: 'a seed' } });
      expect((await terminal(emu, image.body.id)).state).toBe('completed');
      const edit = await call(emu, 'POST', '/v1/generations', {
        json: { type: 'image_edit', prompt: 'warmer', source: { generation_id: image.body.id } },
      });
      expect((await terminal(emu, edit.body.id)).state).toBe('completed');
      const rows = (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data as Array<{
        id: string;
        started_at: string;
        finished_at: string;
      }>;
      const took = (id: string) => {
        const row = rows.find((r) => r.id === id);
        return Date.parse(row?.finished_at ?? '') - Date.parse(row?.started_at ?? '');
      };
      expect(took(edit.body.id)).toBeGreaterThanOrEqual(690);
    } finally {
      await emu.close();
    }
  });
});
