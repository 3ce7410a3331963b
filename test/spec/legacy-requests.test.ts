/**
 * The legacy request shapes beyond modify (src/spec/legacy-requests.ts): defaults applied as
 * Generation.request echoes them, and the exact 400 detail of the first problem in field order.
 */
import { describe, expect, it } from 'vitest';
import {
  validateAudioRequest,
  validateImageRequest,
  validateReframeImageRequest,
  validateReframeVideoRequest,
  validateUpscaleRequest,
  validateVideoRequest,
} from '../../src/spec/index.ts';

const detail = (r: { ok: boolean; detail?: string }) => (r.ok ? 'ok' : r.detail);
const URL_A = 'https://example.com/a.png';

describe('legacy request shapes', () => {
  it('applies the defaults', () => {
    expect(validateVideoRequest({ prompt: 'x' })).toEqual({
      ok: true,
      request: { generation_type: 'video', model: 'ray-2', prompt: 'x' },
    });
    expect(validateImageRequest({ image: [{ url: URL_A, weight: 0.85 }] })).toEqual({
      ok: true,
      request: {
        generation_type: 'image',
        model: 'photon-1',
        format: 'jpg',
        image_ref: [{ url: URL_A, weight: 0.85 }],
      },
    });
    expect(validateUpscaleRequest(undefined)).toEqual({
      ok: true,
      request: { generation_type: 'upscale_video', resolution: '1080p' },
    });
    expect(validateAudioRequest({})).toEqual({ ok: true, request: { generation_type: 'add_audio' } });
  });

  it('answers the first problem in field order, exactly', () => {
    expect(detail(validateVideoRequest({ model: 'ray-3' }))).toBe(
      "Expected one of 'ray-2', 'ray-flash-2' for model but received 'ray-3'",
    );
    expect(detail(validateVideoRequest({ aspect_ratio: '2:1', model: 'nope' }))).toBe(
      "Expected one of '1:1', '16:9', '9:16', '4:3', '3:4', '21:9', '9:21' for aspect_ratio but received '2:1'",
    );
    expect(detail(validateVideoRequest({ keyframes: { frame0: { type: 'generation', id: 'x' } } }))).toBe(
      "Expected uuid string for keyframes.frame0.id but received 'x'",
    );
    expect(detail(validateVideoRequest({ keyframes: { frame1: { type: 'image' } } }))).toBe(
      'Expected http(s) URL for keyframes.frame1.url but received nothing',
    );
    expect(detail(validateVideoRequest({ keyframes: { frame0: { type: 'video' } } }))).toBe(
      "Expected one of 'generation', 'image' for keyframes.frame0.type but received 'video'",
    );
    expect(detail(validateVideoRequest({ seed: 1 }))).toBe("Unknown field 'seed'");
    expect(detail(validateImageRequest({ sync: 'yes' }))).toBe(
      "Expected boolean for sync but received 'yes'",
    );
    expect(detail(validateImageRequest({ sync_timeout: 0 }))).toBe(
      'Expected number above 0 for sync_timeout but received 0',
    );
    expect(detail(validateImageRequest({ character_ref: { identity0: { images: ['ftp://x'] } } }))).toBe(
      "Expected http(s) URL for character_ref.identity0.images[0] but received 'ftp://x'",
    );
    expect(detail(validateReframeImageRequest({ media: { url: URL_A }, aspect_ratio: '1:1' }))).toBe(
      "Expected one of 'photon-1', 'photon-flash-1' for model but received nothing",
    );
    expect(
      detail(
        validateReframeVideoRequest({
          media: { url: URL_A },
          aspect_ratio: '1:1',
          model: 'ray-2',
          x_start: -1,
        }),
      ),
    ).toBe('Expected integer of at least 0 for x_start but received -1');
    expect(detail(validateReframeVideoRequest({ aspect_ratio: '1:1' }))).toBe(
      'Expected object for media but received nothing',
    );
    expect(detail(validateUpscaleRequest({ generation_type: 'upscale' }))).toBe(
      "Expected one of 'upscale_video' for generation_type but received 'upscale'",
    );
    expect(detail(validateAudioRequest([]))).toBe('Expected object for request body but received an array');
  });
});
