/**
 * Chains over real HTTP, checked by their media: an extend starts (ends) with the parent's last (first)
 * frame, an edit of a generated video keeps its duration, a reframe changes its shape, an image_edit of
 * a generated image is made of its pixels, and an image's output URL can open a video.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import {
  DURATION_FRAMES_DETAIL,
  GENERATION_KEYFRAMES_DETAIL,
  generationRefNotCompletedDetail,
  generationRefNotFoundDetail,
  generationRefWrongKindDetail,
  HDR_EXTEND_DETAIL,
  LOOP_REVERSE_EXTEND_DETAIL,
  SOURCE_GENERATION_ID_ONLY_VALID_DETAIL,
} from '../../src/spec/index.ts';
import { call, hold, KEY_B, startTestEmulator, unhold } from '../helpers/emulator.ts';
import {
  type DecodedVideo,
  decodeImageUrl,
  decodeVideoUrl,
  firstAndLast,
  lumaCorrelation,
  meanAbsDiff,
} from './chain-media.ts';
import { terminal } from './generations-helpers.ts';

/** Frames of one clip compared with themselves differ by a few levels (lossy encodes); others by tens. */
const SAME = 12;
const DIFFERENT = 25;

let emu: RunningEmulator;

async function generate(json: Record<string, unknown>) {
  const created = await call(emu, 'POST', '/v1/generations', { json });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.body?.detail}`);
  const done = await terminal(emu, created.body.id, undefined, 60_000);
  if (done.state !== 'completed') throw new Error(`generation ${done.state}: ${done.failure_reason}`);
  return done as { id: string; output: Array<{ url: string }> };
}

const clip = (prompt: string, extra: Record<string, unknown> = {}) => ({
  type: 'video',
  prompt,
  aspect_ratio: '16:9',
  ...extra,
  video: { resolution: '360p', ...((extra.video as object | undefined) ?? {}) },
});

let parent: { id: string; output: Array<{ url: string }> };
let parentVideo: DecodedVideo;
let otherVideo: DecodedVideo;

beforeAll(async () => {
  emu = await startTestEmulator({ blocked_words: ['forbidden'], tiny_outputs: false });
  const [p, o] = await Promise.all([
    generate(clip('a parent clip of a harbour')),
    generate(clip('an unrelated clip of a desert')),
  ]);
  parent = p;
  [parentVideo, otherVideo] = await Promise.all([
    decodeVideoUrl(p.output[0]?.url ?? ''),
    decodeVideoUrl(o.output[0]?.url ?? ''),
  ]);
  // The control must be a different picture, or the comparisons below prove nothing.
  expect(meanAbsDiff(firstAndLast(parentVideo).last, firstAndLast(otherVideo).last)).toBeGreaterThan(
    DIFFERENT,
  );
}, 120_000);
afterAll(async () => {
  await emu.close();
});

describe('video extend', () => {
  it('forward: the output opens on the parent video’s last frame', async () => {
    const ext = await generate(clip('carry on', { video: { start_frame: { generation_id: parent.id } } }));
    const out = await decodeVideoUrl(ext.output[0]?.url ?? '');
    const { first } = firstAndLast(out);
    expect(meanAbsDiff(first, firstAndLast(parentVideo).last)).toBeLessThan(SAME);
    expect(meanAbsDiff(first, firstAndLast(otherVideo).last)).toBeGreaterThan(DIFFERENT);
    // Not the parent's first frame either: it continues from the end.
    expect(meanAbsDiff(first, firstAndLast(parentVideo).first)).toBeGreaterThan(SAME);
  });

  it('keeps the parent’s shape and resolution when the extend sends none, and opens on its last frame', async () => {
    const tall = await generate(clip('a tall clip of a tower', { aspect_ratio: '9:16' }));
    const tallVideo = await decodeVideoUrl(tall.output[0]?.url ?? '');
    const ext = await generate({
      type: 'video',
      prompt: 'higher',
      video: { start_frame: { generation_id: tall.id } },
    });
    const out = await decodeVideoUrl(ext.output[0]?.url ?? '');
    expect([out.probe.width, out.probe.height]).toEqual([tallVideo.probe.width, tallVideo.probe.height]);
    expect(meanAbsDiff(firstAndLast(out).first, firstAndLast(tallVideo).last)).toBeLessThan(SAME);
  });

  it('reverse: the output ends on the parent video’s first frame', async () => {
    const ext = await generate(clip('lead in', { video: { end_frame: { generation_id: parent.id } } }));
    const out = await decodeVideoUrl(ext.output[0]?.url ?? '');
    const { last } = firstAndLast(out);
    expect(meanAbsDiff(last, firstAndLast(parentVideo).first)).toBeLessThan(SAME);
    expect(meanAbsDiff(last, firstAndLast(otherVideo).first)).toBeGreaterThan(DIFFERENT);
  });
});

describe('edits and reframes of a generated video', () => {
  it('video_edit keeps the parent’s duration and frame count', async () => {
    const edit = await generate({
      type: 'video_edit',
      prompt: 'make it dusk',
      source: { generation_id: parent.id },
    });
    const out = await decodeVideoUrl(edit.output[0]?.url ?? '');
    expect(out.frames.length).toBe(parentVideo.frames.length);
    expect(out.probe.durationSeconds).toBeCloseTo(parentVideo.probe.durationSeconds, 1);
    expect([out.probe.width, out.probe.height]).toEqual([parentVideo.probe.width, parentVideo.probe.height]);
  });

  it('video_reframe changes the parent’s shape to the asked aspect ratio and keeps its duration', async () => {
    const re = await generate({
      type: 'video_reframe',
      aspect_ratio: '9:16',
      source: { generation_id: parent.id },
    });
    const out = await decodeVideoUrl(re.output[0]?.url ?? '');
    expect(parentVideo.probe.width).toBeGreaterThan(parentVideo.probe.height);
    expect(out.probe.width / out.probe.height).toBeCloseTo(9 / 16, 2);
    expect(out.frames.length).toBe(parentVideo.frames.length);
  });
});

describe('image chains', () => {
  it('image_edit of a generated image is made of the parent’s pixels', async () => {
    const [image, other] = await Promise.all([
      generate({ type: 'image', prompt: 'a parent picture of boats', aspect_ratio: '1:1' }),
      generate({ type: 'image', prompt: 'an unrelated picture of cacti', aspect_ratio: '1:1' }),
    ]);
    const edit = await generate({
      type: 'image_edit',
      prompt: 'in autumn colours',
      source: { generation_id: image.id },
    });
    const [p, o, e] = await Promise.all(
      [image, other, edit].map((g) => decodeImageUrl(g.output[0]?.url ?? '', { width: 64, height: 64 })),
    );
    expect([e?.width, e?.height]).toEqual([p?.width, p?.height]);
    const withParent = lumaCorrelation(e!.rgb, p!.rgb);
    const withOther = lumaCorrelation(e!.rgb, o!.rgb);
    expect(withParent).toBeGreaterThan(0.8);
    expect(withParent - withOther).toBeGreaterThan(0.3);
  });

  it('an image’s output URL as a video start_frame: the video opens on that image', async () => {
    const image = await generate({ type: 'image', prompt: 'a still of a lighthouse', aspect_ratio: '16:9' });
    const url = image.output[0]?.url ?? '';
    const video = await generate(clip('from the still', { video: { start_frame: { url } } }));
    const out = await decodeVideoUrl(video.output[0]?.url ?? '');
    const still = await decodeImageUrl(url);
    expect(meanAbsDiff(firstAndLast(out).first, still.rgb)).toBeLessThan(SAME);
    expect(meanAbsDiff(firstAndLast(otherVideo).first, still.rgb)).toBeGreaterThan(DIFFERENT);
  });
});

describe('refused chains, with the interface’s details', () => {
  const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
  let image: { id: string };
  beforeAll(async () => {
    image = await generate({ type: 'image', prompt: 'a picture to chain wrongly', aspect_ratio: '16:9' });
  });

  async function refused(json: Record<string, unknown>, key?: string) {
    const r = await call(emu, 'POST', '/v1/generations', { json, key });
    return { status: r.status, detail: r.body?.detail as string };
  }

  it('a generation of the wrong kind for the position: 422', async () => {
    expect(await refused({ type: 'image_edit', prompt: 'x', source: { generation_id: parent.id } })).toEqual({
      status: 422,
      detail: generationRefWrongKindDetail('source', parent.id, 'video', 'image'),
    });
    for (const type of ['video_edit', 'video_reframe']) {
      expect(
        await refused({ type, prompt: 'x', aspect_ratio: '9:16', source: { generation_id: image.id } }),
      ).toEqual({ status: 422, detail: generationRefWrongKindDetail('source', image.id, 'image', 'video') });
    }
    expect(await refused(clip('x', { video: { end_frame: { generation_id: image.id } } }))).toEqual({
      status: 422,
      detail: generationRefWrongKindDetail('video.end_frame', image.id, 'image', 'video'),
    });
  });

  it('an unknown generation and another client’s read the same: 422 not found', async () => {
    const body = (id: string) => clip('x', { video: { start_frame: { generation_id: id } } });
    expect(await refused(body(UNKNOWN_ID))).toEqual({
      status: 422,
      detail: generationRefNotFoundDetail('video.start_frame', UNKNOWN_ID),
    });
    expect(await refused(body(parent.id), KEY_B)).toEqual({
      status: 422,
      detail: generationRefNotFoundDetail('video.start_frame', parent.id),
    });
    expect(
      await refused({ type: 'video_edit', prompt: 'x', source: { generation_id: parent.id } }, KEY_B),
    ).toEqual({ status: 422, detail: generationRefNotFoundDetail('source', parent.id) });
  });

  it('a generation that has not completed, or failed: 422 with its state', async () => {
    const held = await hold(emu, { state: 'queued', prompt: '^still waiting$' });
    const waiting = await call(emu, 'POST', '/v1/generations', { json: clip('still waiting') });
    try {
      expect(
        await refused(clip('x', { video: { start_frame: { generation_id: waiting.body.id } } })),
      ).toEqual({
        status: 422,
        detail: generationRefNotCompletedDetail('video.start_frame', waiting.body.id, 'queued'),
      });
    } finally {
      await unhold(emu, held);
    }
    const created = await call(emu, 'POST', '/v1/generations', { json: clip('a forbidden clip') });
    expect((await terminal(emu, created.body.id)).state).toBe('failed');
    expect(
      await refused({
        type: 'video_reframe',
        aspect_ratio: '1:1',
        source: { generation_id: created.body.id },
      }),
    ).toEqual({
      status: 422,
      detail: generationRefNotCompletedDetail('source', created.body.id, 'failed'),
    });
  });

  it('extend rules: one generation reference, in start_frame or end_frame; no HDR; loop only forward; 5s', async () => {
    const ref = { generation_id: parent.id };
    expect(await refused(clip('x', { video: { start_frame: ref, end_frame: ref } }))).toEqual({
      status: 400,
      detail: GENERATION_KEYFRAMES_DETAIL,
    });
    expect(await refused(clip('x', { video: { guide_frame: ref } }))).toEqual({
      status: 400,
      detail: GENERATION_KEYFRAMES_DETAIL,
    });
    expect(await refused(clip('x', { source: ref }))).toEqual({
      status: 400,
      detail: SOURCE_GENERATION_ID_ONLY_VALID_DETAIL,
    });
    expect(await refused(clip('x', { video: { resolution: '720p', hdr: true, start_frame: ref } }))).toEqual({
      status: 400,
      detail: HDR_EXTEND_DETAIL,
    });
    expect(await refused(clip('x', { video: { loop: true, end_frame: ref } }))).toEqual({
      status: 400,
      detail: LOOP_REVERSE_EXTEND_DETAIL,
    });
    expect(await refused(clip('x', { video: { duration: '10s', start_frame: ref } }))).toEqual({
      status: 400,
      detail: DURATION_FRAMES_DETAIL,
    });
  });
});
