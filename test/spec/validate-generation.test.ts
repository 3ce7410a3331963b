import { describe, expect, it } from 'vitest';
import {
  CHOICES,
  checkMediaFacts,
  type GenerationType,
  LIMITS,
  listMediaRefs,
  MiB,
  type NormalizedGenerationRequest,
  validateGenerationRequest,
} from '../../src/spec/index.ts';
import {
  file,
  GENERATION_CASES,
  gen,
  img,
  UNKNOWN_GENERATION_ID,
  VALID_BODIES,
  vid,
} from '../cases/generation-cases.ts';

function valid(body: unknown): NormalizedGenerationRequest {
  const result = validateGenerationRequest(body);
  if (!result.ok) throw new Error(`expected a valid body, got ${result.status} ${result.detail}`);
  return result.request;
}

describe('the shared case table', () => {
  it('has unique row names', () => {
    const names = GENERATION_CASES.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(GENERATION_CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const before = JSON.stringify(c.body);
    const result = validateGenerationRequest(c.body, c.media);
    expect(result).toEqual({ ok: false, status: c.status, detail: c.detail });
    expect(JSON.stringify(c.body)).toBe(before);
  });

  it('needs the media facts for every 413 row (no 413 without them)', () => {
    for (const c of GENERATION_CASES.filter((row) => row.status === 413)) {
      expect(c.media, c.name).toBeDefined();
      expect(validateGenerationRequest(c.body).ok, c.name).toBe(true);
    }
  });

  // Every row of the interface's 400 / 413 / 422 tables, as the text the interface gives (up to its
  // "..." or placeholder). Each must be the detail of at least one row of the case table.
  const INTERFACE_ROWS: RegExp[] = [
    /^Unknown model: /,
    /^Type '.+' is not supported for model '.+'$/,
    /^Invalid aspect_ratio '.+'\. Valid: 16:9, 1:1, 1:2, 1:3, 2:1, 2:3, 3:1, 3:2, 9:16$/,
    /^Invalid aspect_ratio '.+'\. Valid: 16:9, 1:1, 21:9, 3:4, 4:3, 9:16$/,
    /^Prompt must be between 1 and 6000 characters$/,
    /^source: provide either 'url' or 'data', not both$/,
    /^image_ref\[\d+\]: provide either 'url' or 'data', not both$/,
    /^source: 'media_type' is required with 'data'$/,
    /^image_ref\[\d+\]: 'media_type' is required with 'data'$/,
    /^image_edit supports up to 8 reference images \(source occupies one slot\)$/,
    /^source is only valid for /,
    /^source is required for type 'image_edit'$/,
    /^source is required for type 'video_edit'/,
    /^source is required for type 'video_reframe'/,
    /^source\.generation_id is only valid for type 'image_edit', 'video_edit', or 'video_reframe'$/,
    /^source\.media_type must be a video\/\* type .*'video_edit'/,
    /^source\.media_type must be a video\/\* type .*'video_reframe'/,
    /^image_ref is not supported for type 'video_edit'$/,
    /^video\.loop is only valid for type 'video'$/,
    /^video\.edit is only valid for type 'video_edit'$/,
    /^video\.edit\.auto_controls=true cannot be combined with video\.edit\.controls /,
    /^video\.edit\.keyframes and video\.edit\.keyframe_indexes must both be provided or both omitted$/,
    /^video\.edit\.keyframe_indexes must have the same length as video\.edit\.keyframes$/,
    /^video\.edit\.keyframe_indexes must be non-negative$/,
    /^video\.edit\.keyframe_indexes must be unique$/,
    /^video\.start_frame and video\.edit\.keyframes are mutually exclusive /,
    /^video\.source_position is only valid for type 'video_reframe'$/,
    /^resolution '540p' is not supported with hdr=true$/,
    /^resolution '360p' is not supported with hdr=true$/,
    /^duration '10s' is not supported with hdr=true$/,
    /^duration '10s' is not supported with start_frame \/ end_frame$/,
    /^loop is not supported with duration '10s'$/,
    /^loop is not supported with hdr=true$/,
    /^loop is not supported with end_frame \(no seamless start-end match\)$/,
    /^exr_export requires hdr=true$/,
    /^HDR is not supported with video extend$/,
    /^loop is only supported with forward video extend$/,
    /^generation-ref keyframes are only supported for video extend /,
    /^aspect_ratio \(the target shape\) is required for type 'video_reframe'$/,
    /^video\.start_frame \/ video\.end_frame are not supported for type 'video_reframe'$/,
    /^video\.loop is not supported for type 'video_reframe'$/,
    /^HDR \/ exr_export are not supported for type 'video_reframe'$/,
    /^video\.edit is not supported for type 'video_reframe'$/,
    /^1080p resolution is not yet available for vertical reframe .*coming soon$/,
    /^aspect_ratio='.+' is not allowed when style='manga'\. Valid aspect_ratio: 1:2, 1:3, 2:3, 9:16$/,
    /^source: image exceeds 50 MB limit$/,
    /^image_ref\[\d+\]: image exceeds 50 MB limit$/,
    /^video\.start_frame: image exceeds 50 MB limit$/,
    /^image_ref\[\d+\]: image is \d+x\d+px but each side must be <= 8000px\. Resize and try again\.$/,
    /^video\.end_frame: image is \d+x\d+px but each side must be <= 8000px\. Resize and try again\.$/,
    /^source: video is [\d.]+s long but must be at most 30s for type 'video_reframe'$/,
    /^source: video is [\d.]+s long but must be at most 30s for type 'video_edit'$/,
    /^source: video is [\d.]+s long but must be at most 18s for type 'video_edit' with video\.edit$/,
  ];
  it.each(INTERFACE_ROWS.map((re) => [re.source, re] as const))('covers the interface row %s', (_s, re) => {
    expect(GENERATION_CASES.some((c) => re.test(c.detail))).toBe(true);
  });

  it('uses the status the interface gives for each kind of row', () => {
    for (const c of GENERATION_CASES) {
      if (c.detail.includes("when style='manga'") || / long but must be at most /.test(c.detail)) {
        expect(c.status, c.name).toBe(422);
      } else if (/: image (exceeds|is \d)/.test(c.detail)) {
        expect(c.status, c.name).toBe(413);
      } else {
        expect(c.status, c.name).toBe(400);
      }
    }
  });
});

describe('valid bodies', () => {
  const rows = Object.entries(VALID_BODIES).flatMap(([type, list]) =>
    list.map((v) => [`${type}: ${v.name}`, type as GenerationType, v.body] as const),
  );
  it.each(rows)('accepts %s', (_name, type, body) => {
    const before = JSON.stringify(body);
    const request = valid(body);
    expect(request.type).toBe(type);
    expect(JSON.stringify(body)).toBe(before);
  });

  it('has at least one body for each of the five types', () => {
    for (const list of Object.values(VALID_BODIES)) expect(list.length).toBeGreaterThan(0);
  });
});

describe('defaults', () => {
  it('defaults type to image, model to uni-1 and aspect ratio to 1:1', () => {
    expect(valid({ prompt: 'a fox' })).toEqual({
      type: 'image',
      model: 'uni-1',
      prompt: 'a fox',
      aspect_ratio: CHOICES.defaultImageAspectRatio,
    });
  });

  it('defaults a video to ray-3.2, 16:9, 5s and 720p', () => {
    expect(valid({ type: 'video', prompt: 'waves' })).toEqual({
      type: 'video',
      model: 'ray-3.2',
      prompt: 'waves',
      aspect_ratio: '16:9',
      video: { duration: '5s', resolution: '720p' },
    });
  });

  it('fills resolution but neither duration nor aspect ratio on video_edit, keeping given options', () => {
    const request = valid({ type: 'video_edit', prompt: 'p', source: vid(), video: { hdr: true } });
    expect(request.model).toBe('ray-3.2');
    expect(request.aspect_ratio).toBeUndefined();
    expect(request.video).toEqual({ hdr: true, resolution: '720p' });
  });

  it('keeps a given resolution and model, and a video_reframe needs no prompt', () => {
    const request = valid({
      type: 'video_reframe',
      aspect_ratio: '4:3',
      source: gen(),
      video: { resolution: '360p' },
    });
    expect(request).toEqual({
      type: 'video_reframe',
      model: 'ray-3.2',
      aspect_ratio: '4:3',
      source: gen(),
      video: { resolution: '360p' },
    });
  });

  it('leaves image_edit aspect ratio to the source and adds no video object to image types', () => {
    const request = valid({ type: 'image_edit', model: 'uni-1-max', prompt: 'p', source: file() });
    expect(request.aspect_ratio).toBeUndefined();
    expect(request.video).toBeUndefined();
    expect(request.model).toBe('uni-1-max');
  });

  it('returns copies, so changing the result never changes the body', () => {
    const body = { type: 'image_edit', prompt: 'p', source: img(), image_ref: [img()] };
    const request = valid(body);
    request.source!.data = 'changed';
    request.image_ref![0]!.data = 'changed';
    expect(body.source.data).not.toBe('changed');
    expect(body.image_ref[0]!.data).not.toBe('changed');
  });
});

describe('prompt length', () => {
  it('counts characters (code points), not UTF-16 units', () => {
    expect(validateGenerationRequest({ prompt: '🦊'.repeat(6000) }).ok).toBe(true);
    expect(validateGenerationRequest({ prompt: '🦊'.repeat(6001) })).toMatchObject({
      ok: false,
      status: 400,
    });
  });

  it('accepts 1 character', () => {
    expect(validateGenerationRequest({ prompt: 'a' }).ok).toBe(true);
  });
});

describe('video extend and keyframes', () => {
  it('accepts forward extend with loop and reverse extend without', () => {
    expect(valid({ type: 'video', prompt: 'p', video: { start_frame: gen(), loop: true } }).video?.loop).toBe(
      true,
    );
    expect(
      valid({ type: 'video', prompt: 'p', video: { end_frame: gen(), start_frame: img() } }).video?.end_frame,
    ).toEqual(gen());
  });

  it('accepts the last grid position and rejects the next one', () => {
    const at = (i: number) =>
      validateGenerationRequest({
        type: 'video',
        prompt: 'p',
        video: { keyframes: [img()], keyframe_indexes: [i] },
      });
    expect(at(maxIndex('5s')).ok).toBe(true);
    expect(at(maxIndex('5s') + 1).ok).toBe(false);
  });

  it('accepts 64 keyframes', () => {
    const keyframes = Array.from({ length: LIMITS.keyframesMax }, img);
    const keyframe_indexes = keyframes.map((_, i) => i);
    expect(
      validateGenerationRequest({ type: 'video', prompt: 'p', video: { keyframes, keyframe_indexes } }).ok,
    ).toBe(true);
  });

  it('treats false flags as not given', () => {
    expect(
      valid({
        type: 'video_reframe',
        aspect_ratio: '1:1',
        source: vid(),
        video: { hdr: false, loop: false, exr_export: false },
      }).type,
    ).toBe('video_reframe');
    expect(valid({ type: 'video_edit', prompt: 'p', source: vid(), video: { loop: false } }).type).toBe(
      'video_edit',
    );
  });
});

function maxIndex(d: '5s' | '10s'): number {
  return LIMITS.durationSeconds[d] * LIMITS.fps;
}

describe('listMediaRefs', () => {
  it('lists every site in a fixed order with its path and position', () => {
    const request = valid({
      type: 'video_edit',
      prompt: 'p',
      source: vid(),
      video: {
        end_frame: img(),
        guide_frame: file(),
        edit: { keyframes: [img(), img()], keyframe_indexes: [1, 2] },
      },
    });
    expect(listMediaRefs(request).map((s) => [s.path, s.position])).toEqual([
      ['source', 'video_source'],
      ['video.end_frame', 'image'],
      ['video.guide_frame', 'image'],
      ['video.edit.keyframes[0]', 'image'],
      ['video.edit.keyframes[1]', 'image'],
    ]);
  });

  it('marks the image_edit source and lists image_ref entries and type video anchors', () => {
    const edit = valid({ type: 'image_edit', prompt: 'p', source: gen(), image_ref: [img(), file()] });
    expect(listMediaRefs(edit).map((s) => [s.path, s.position, s.ref])).toEqual([
      ['source', 'image_edit_source', gen()],
      ['image_ref[0]', 'image', img()],
      ['image_ref[1]', 'image', file()],
    ]);
    const v = valid({
      type: 'video',
      prompt: 'p',
      video: { keyframes: [img(), img()], keyframe_indexes: [0, 9] },
      image_ref: [img()],
    });
    expect(listMediaRefs(v).map((s) => s.path)).toEqual([
      'image_ref[0]',
      'video.keyframes[0]',
      'video.keyframes[1]',
    ]);
    expect(listMediaRefs(valid({ prompt: 'p' }))).toEqual([]);
  });
});

describe('checkMediaFacts', () => {
  const imageEdit = () =>
    valid({
      type: 'image_edit',
      prompt: 'p',
      source: img(),
      image_ref: [{ url: 'https://example.com/a.png' }],
    });

  it('accepts media exactly at the limits and skips sites without facts', () => {
    const facts = { bytes: LIMITS.imageMaxBytes, width: LIMITS.imageMaxSide, height: LIMITS.imageMaxSide };
    expect(checkMediaFacts(imageEdit(), { source: facts, 'image_ref[0]': facts })).toBeNull();
    expect(checkMediaFacts(imageEdit(), {})).toBeNull();
    expect(checkMediaFacts(imageEdit(), { 'image_ref[0]': { bytes: 50 * MiB + 1 } })).toEqual({
      status: 413,
      detail: 'image_ref[0]: image exceeds 50 MB limit',
    });
  });

  it('gives no 413 for generation_id or file_id references', () => {
    const request = valid({ type: 'image_edit', prompt: 'p', source: gen(), image_ref: [file()] });
    const huge = { bytes: 10 * LIMITS.imageMaxBytes, width: 20_000, height: 20_000 };
    expect(checkMediaFacts(request, { source: huge, 'image_ref[0]': huge })).toBeNull();
  });

  it('checks bytes of an inline video source only, not of a url one', () => {
    const url = valid({
      type: 'video_reframe',
      aspect_ratio: '16:9',
      source: { url: 'https://example.com/clip.mp4', media_type: 'video/mp4' },
    });
    expect(
      checkMediaFacts(url, { source: { bytes: 2 * LIMITS.imageMaxBytes, durationSeconds: 10 } }),
    ).toBeNull();
    const inline = valid({ type: 'video_reframe', aspect_ratio: '16:9', source: vid() });
    expect(checkMediaFacts(inline, { source: { bytes: LIMITS.imageMaxBytes + 1 } })?.status).toBe(413);
  });

  it('allows 30 s sources, and 18 s with video.edit, and uses the lower limit only with video.edit', () => {
    const plain = valid({ type: 'video_edit', prompt: 'p', source: vid() });
    const withEdit = valid({
      type: 'video_edit',
      prompt: 'p',
      source: vid(),
      video: { edit: { strength: 0.5 } },
    });
    expect(
      checkMediaFacts(plain, { source: { bytes: 10, durationSeconds: LIMITS.sourceVideoMaxSeconds } }),
    ).toBeNull();
    expect(checkMediaFacts(plain, { source: { bytes: 10, durationSeconds: 25 } })).toBeNull();
    expect(
      checkMediaFacts(withEdit, { source: { bytes: 10, durationSeconds: LIMITS.editVideoMaxSeconds } }),
    ).toBeNull();
    expect(checkMediaFacts(withEdit, { source: { bytes: 10, durationSeconds: 25 } })).toEqual({
      status: 422,
      detail: "source: video is 25s long but must be at most 18s for type 'video_edit' with video.edit",
    });
  });

  it('is what validateGenerationRequest runs last when facts are passed', () => {
    const body = {
      type: 'video_reframe',
      aspect_ratio: '1:1',
      source: { generation_id: UNKNOWN_GENERATION_ID },
    };
    const media = { source: { bytes: 0, durationSeconds: 45 } };
    const request = valid(body);
    const direct = checkMediaFacts(request, media);
    expect(direct).not.toBeNull();
    expect(validateGenerationRequest(body, media)).toEqual({ ok: false, ...direct });
  });
});
