import { describe, expect, it } from 'vitest';
import {
  compareAspectRatios,
  describeValue,
  expectedDetail,
  fetchFailedDetail,
  fetchProxyUnavailableDetail,
  fileNotFoundDetail,
  fileNotReadyDetail,
  fileWrongKindDetail,
  generationRefNotCompletedDetail,
  generationRefWrongKindDetail,
  IMAGE_ASPECT_RATIOS,
  invalidBase64Detail,
  MEDIA_REF_FAILURE_STATUS,
  notAnImageDetail,
  notAVideoDetail,
  sourceVideoTooLongDetail,
  VIDEO_ASPECT_RATIOS,
} from '../../src/spec/index.ts';

const ID = '00000000-0000-4000-8000-000000000001';

describe('the sharp-style builder', () => {
  it('renders each kind of received value', () => {
    expect([undefined, null, 0, false, 'x', [], {}].map(describeValue)).toEqual([
      'nothing',
      'null',
      '0',
      'false',
      "'x'",
      'an array',
      'an object',
    ]);
  });

  it('cuts long strings after 40 characters, counting code points', () => {
    expect(describeValue('a'.repeat(40))).toBe(`'${'a'.repeat(40)}'`);
    expect(describeValue('🦊'.repeat(41))).toBe(`'${'🦊'.repeat(40)}…'`);
  });

  it('names what, where and what was received', () => {
    expect(expectedDetail('boolean', 'video.hdr', 'yes')).toBe(
      "Expected boolean for video.hdr but received 'yes'",
    );
  });
});

describe('media-reference details', () => {
  it('gives the interface texts for 422 and 502 failures', () => {
    expect(invalidBase64Detail('image_ref[1]')).toBe('image_ref[1]: invalid base64 data');
    expect(fetchFailedDetail('source')).toBe('source: failed to fetch URL');
    expect(fetchFailedDetail('source', 404)).toBe('source: failed to fetch URL (HTTP 404)');
    expect(notAnImageDetail('video.end_frame')).toBe('video.end_frame: content-type is not an image');
    expect(notAVideoDetail('source')).toBe('source: content-type is not a video');
    expect(fetchProxyUnavailableDetail('image_ref[0]')).toBe('image_ref[0]: fetch proxy unavailable');
    expect(MEDIA_REF_FAILURE_STATUS.fetchProxyUnavailable).toBe(502);
    expect(MEDIA_REF_FAILURE_STATUS.imageTooLarge).toBe(413);
    expect(MEDIA_REF_FAILURE_STATUS.fileNotFound).toBe(422);
  });

  it('gives clear texts for file and generation references', () => {
    expect(fileNotFoundDetail('source', ID)).toBe(`source: file '${ID}' not found`);
    expect(fileNotReadyDetail('source', ID, 'pending')).toMatch(
      /^source: file '.+' is not ready \(state 'pending'\)/,
    );
    expect(fileNotReadyDetail('source', ID, 'deleted')).toMatch(/is not ready \(state 'deleted'\)/);
    expect(fileWrongKindDetail('image_ref[0]', ID, 'video', 'image')).toBe(
      `image_ref[0]: file '${ID}' holds a video, but this position takes an image`,
    );
    expect(generationRefNotCompletedDetail('video.start_frame', ID, 'processing')).toBe(
      `video.start_frame: generation '${ID}' is not completed (state 'processing')`,
    );
    expect(generationRefWrongKindDetail('source', ID, 'image', 'video')).toBe(
      `source: generation '${ID}' is of type 'image', but this position needs a video output`,
    );
  });

  it('rounds a too-long duration up so it never reads as the limit', () => {
    expect(sourceVideoTooLongDetail('source', 30.0001, 30, 'video_edit', false)).toBe(
      "source: video is 30.01s long but must be at most 30s for type 'video_edit'",
    );
  });
});

describe('aspect ratio order', () => {
  it('sorts as plain strings, so 16:9 comes before 1:1', () => {
    expect([...IMAGE_ASPECT_RATIOS].reverse().sort(compareAspectRatios)).toEqual([
      '16:9',
      '1:1',
      '1:2',
      '1:3',
      '2:1',
      '2:3',
      '3:1',
      '3:2',
      '9:16',
    ]);
    expect([...VIDEO_ASPECT_RATIOS].sort(compareAspectRatios)).toEqual([
      '16:9',
      '1:1',
      '21:9',
      '3:4',
      '4:3',
      '9:16',
    ]);
  });
});
