import { copyFile, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepOf } from '../../src/pipeline/item.ts';
import type { StageContext } from '../../src/pipeline/stage.ts';
import { check } from '../../src/pipeline/stages/check.ts';
import { plan } from '../../src/pipeline/stages/plan.ts';
import { sniff } from '../../src/pipeline/stages/sniff.ts';
import { GiB, MiB } from '../../src/spec/index.ts';
import {
  CLAIMED_EXT,
  CLAIMED_FORMATS,
  claimedSizeBytes,
  largestClaim,
  writeClaimedSize,
} from '../media/claimed-size.ts';
import { makeImage, makeVideo, tempDir, truncated } from '../media/fixtures.ts';
import { contextFor, itemFor, put, runLocalStages } from './stage-helpers.ts';

let dir: string;
let remove: () => Promise<void>;
let ctx: StageContext;

const RECIPE = `rules:
  - match: "edit/**"
    request: { type: image_edit, prompt: "watercolor" }
  - match: "like/**"
    input_as: image_ref
    request: { type: image, prompt: "like this", image_ref: [{ ref: style }] }
  - match: "reframe/**"
    request: { type: video_reframe, aspect_ratio: "9:16" }
  - match: "restyle/**"
    request: { type: video_edit, prompt: "as a cartoon", video: { edit: { auto_controls: true } } }
  - match: "**/*.txt"
    request: { type: image }
references:
  style: refs/style.png
`;

beforeAll(async () => {
  ({ dir, remove } = await tempDir('genpipe-check-'));
  for (const sub of ['refs', 'edit', 'like', 'reframe', 'restyle']) await put(dir, `${sub}/.keep`, '');
  await makeImage(join(dir, 'refs', 'style.png'), { width: 8, height: 8 });
  ctx = await contextFor(dir, RECIPE);
});
afterAll(() => remove());

describe('stage check: images', () => {
  it('passes a sound image and records its size and frame', async () => {
    await makeImage(join(dir, 'edit', 'ok.png'), { width: 40, height: 30 });
    const item = await runLocalStages(ctx, 'edit/ok.png');
    expect(item.state).toBe('checked');
    expect(item.media).toMatchObject({ width: 40, height: 30 });
    expect(item.media!.bytes).toBeGreaterThan(0);
  });

  it('fails an 8001 px image with the service text at the position the file takes', async () => {
    await makeImage(join(dir, 'edit', 'wide.png'), { width: 8001, height: 10 });
    expect(await runLocalStages(ctx, 'edit/wide.png')).toMatchObject({
      state: 'failed',
      failedAt: 'check',
      reason: 'source: image is 8001x10px but each side must be <= 8000px. Resize and try again.',
      media: { width: 8001, height: 10 },
    });
    await copyFile(join(dir, 'edit', 'wide.png'), join(dir, 'like', 'wide.png'));
    expect((await runLocalStages(ctx, 'like/wide.png')).reason).toBe(
      'image_ref[1]: image is 8001x10px but each side must be <= 8000px. Resize and try again.',
    );
  });

  it('fails an image over 50 MB before reading it, with the service text', async () => {
    await makeImage(join(dir, 'edit', 'big.png'), { width: 16, height: 16 });
    await truncate(join(dir, 'edit', 'big.png'), 50 * MiB + 1); // sparse: nothing is really written
    expect(await runLocalStages(ctx, 'edit/big.png')).toMatchObject({
      state: 'failed',
      failedAt: 'check',
      reason:
        'source: image exceeds 50 MB limit: the file is 50.0 MiB (52,428,801 bytes); the limit is 50.0 MiB (52,428,800 bytes)',
    });
  });

  it('fails a truncated PNG as undecodable', async () => {
    await makeImage(join(dir, 'edit', 'whole.png'), { width: 64, height: 64 });
    await truncated(join(dir, 'edit', 'whole.png'), join(dir, 'edit', 'cut.png'), 0.6);
    const item = await runLocalStages(ctx, 'edit/cut.png');
    expect(item).toMatchObject({ state: 'failed', failedAt: 'check' });
    expect(item.reason).toMatch(/^image could not be decoded: the PNG file is truncated \(/);
  });

  it('fails an empty file (at plan when it was empty all along, at check when it was emptied since)', async () => {
    await put(dir, 'edit/empty.png', '');
    expect(await runLocalStages(ctx, 'edit/empty.png')).toMatchObject({
      state: 'failed',
      reason: 'file is empty',
    });
    await makeImage(join(dir, 'edit', 'later.png'), { width: 8, height: 8 });
    const planned = await plan(await sniff(await itemFor(dir, 'edit/later.png'), ctx), ctx);
    await writeFile(join(dir, 'edit', 'later.png'), '');
    expect(await check(planned, ctx)).toMatchObject({
      state: 'failed',
      failedAt: 'check',
      reason: 'file is empty',
    });
  });
});

describe('stage check: the size an image header claims', () => {
  it.each(CLAIMED_FORMATS)(
    'refuses a %s whose header claims 60000 x 60000 px with the service text, not the decoder error',
    async (format) => {
      const side = largestClaim(format, 60000); // a VP8 / VP8L WebP holds at most 16383 / 16384
      const rel = `edit/huge-${format}.${CLAIMED_EXT[format]}`;
      await writeClaimedSize(join(dir, rel), format, side, side);
      expect(await runLocalStages(ctx, rel)).toMatchObject({
        state: 'failed',
        failedAt: 'check',
        reason: `source: image is ${side}x${side}px but each side must be <= 8000px. Resize and try again.`,
        media: { width: side, height: side },
      });
    },
  );

  it('names the side over the limit with the width and height the header gives, in order', async () => {
    await writeClaimedSize(join(dir, 'like', 'tall.png'), 'png', 640, 60000);
    expect((await runLocalStages(ctx, 'like/tall.png')).reason).toBe(
      'image_ref[1]: image is 640x60000px but each side must be <= 8000px. Resize and try again.',
    );
  });

  it('refuses a file too large in pixels before decoding it: its cut body is never reached', async () => {
    // 8001 x 8001 is within sharp's pixel limit: a decode would report the missing data.
    const whole = await claimedSizeBytes('png', 8001, 8001);
    await put(dir, 'edit/cut-huge.png', whole.subarray(0, whole.length - 20));
    expect((await runLocalStages(ctx, 'edit/cut-huge.png')).reason).toBe(
      'source: image is 8001x8001px but each side must be <= 8000px. Resize and try again.',
    );
  });

  it('passes images of every format within the limits: the header size is only a first look', async () => {
    for (const format of CLAIMED_FORMATS) {
      if (format === 'heic') continue; // no HEVC decoder: it stands for a header only
      const rel = `edit/small-${format}.${CLAIMED_EXT[format]}`;
      await writeClaimedSize(join(dir, rel), format, 16, 16);
      const item = await runLocalStages(ctx, rel);
      expect({ format, state: item.state, media: item.media }).toMatchObject({
        format,
        state: 'checked',
        media: { width: 16, height: 16 },
      });
    }
  });
});

describe('stage check: videos', () => {
  it('fails a 31 s source of video_reframe (limit 30 s) with the service text', {
    timeout: 30_000,
  }, async () => {
    await makeVideo(join(dir, 'reframe', 'long.mp4'), { seconds: 31, fps: 2, width: 64, height: 36 });
    const item = await runLocalStages(ctx, 'reframe/long.mp4');
    expect(item).toMatchObject({ state: 'failed', failedAt: 'check' });
    expect(item.reason).toMatch(
      /^source: video is 31(\.\d+)?s long but must be at most 30s for type 'video_reframe'$/,
    );
    expect(item.media?.durationSeconds).toBeCloseTo(31, 0);
  });

  it('fails a 19 s source when video.edit is used (limit 18 s), and passes it for a reframe', {
    timeout: 30_000,
  }, async () => {
    await makeVideo(join(dir, 'restyle', 'clip.mp4'), { seconds: 19, fps: 2, width: 64, height: 36 });
    const edited = await runLocalStages(ctx, 'restyle/clip.mp4');
    expect(edited.reason).toMatch(
      /^source: video is 19(\.\d+)?s long but must be at most 18s for type 'video_edit' with video\.edit$/,
    );
    await copyFile(join(dir, 'restyle', 'clip.mp4'), join(dir, 'reframe', 'clip.mp4'));
    const reframed = await runLocalStages(ctx, 'reframe/clip.mp4');
    expect(reframed.state).toBe('checked');
    expect(reframed.media).toMatchObject({ width: 64, height: 36 });
    expect(reframed.media?.durationSeconds).toBeCloseTo(19, 0);
  });

  it('fails a video over 5 GiB before probing it', async () => {
    await makeVideo(join(dir, 'reframe', 'huge.mp4'), { seconds: 1, fps: 2, width: 64, height: 36 });
    await truncate(join(dir, 'reframe', 'huge.mp4'), 5 * GiB + 1); // sparse
    expect(await runLocalStages(ctx, 'reframe/huge.mp4')).toMatchObject({
      state: 'failed',
      failedAt: 'check',
      reason:
        'source: video exceeds 5 GiB limit: the file is 5.0 GiB (5,368,709,121 bytes); the limit is 5.0 GiB (5,368,709,120 bytes)',
    });
  });
});

describe('stage check: prompt files', () => {
  it('passes a prompt file planned into the request', async () => {
    await put(dir, 'idea.txt', 'a lighthouse at dawn');
    const item = await runLocalStages(ctx, 'idea.txt');
    expect(item).toMatchObject({ state: 'checked', inputAs: 'prompt', media: { bytes: 20 } });
    expect(stepOf(item).request?.prompt).toBe('a lighthouse at dawn');
  });
});
