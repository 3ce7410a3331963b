/**
 * The Vercel AI SDK (`ai` + `@ai-sdk/luma`, unchanged) against a started emulator over HTTP:
 * `generateImage` returns a real image of the asked shape for both legacy image models.
 */
import { createLuma } from '@ai-sdk/luma';
import { generateImage } from 'ai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { KEY, startTestEmulator } from '../helpers/emulator.ts';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator({ queue_ms: 5, processing_ms: { image: 20, video: 20 } });
});

afterAll(async () => {
  await emu?.close();
});

describe('@ai-sdk/luma against genpipe serve', () => {
  for (const model of ['photon-1', 'photon-flash-1'] as const) {
    it(`generateImage with ${model} returns a real image`, async () => {
      const luma = createLuma({ apiKey: KEY, baseURL: emu.url });
      const { image } = await generateImage({
        model: luma.image(model),
        prompt: 'a paper boat on a pond',
        aspectRatio: '3:4',
        providerOptions: { luma: { pollIntervalMillis: 20 } },
        maxRetries: 0,
      });
      const meta = await sharp(Buffer.from(image.uint8Array)).metadata();
      expect(meta.format).toBe('jpeg');
      expect(image.mediaType).toBe('image/jpeg');
      expect(meta.width! / meta.height!).toBeCloseTo(3 / 4, 1);
    });
  }
});
