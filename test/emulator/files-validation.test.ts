/**
 * The pure rules of src/spec/files.ts, unit-tested directly: date-times, MIME types, the presigned body
 * and the multipart fields (the HTTP tests cover the same rules end to end).
 */
import { describe, expect, it } from 'vitest';
import {
  FILE_DETAILS,
  normalizeMimeType,
  parseDateTime,
  sameMediaType,
  validateFileListQuery,
  validateInlineFileFields,
  validatePresignedFileRequest,
} from '../../src/spec/index.ts';

const NOW = Date.UTC(2030, 0, 1);

describe('parseDateTime', () => {
  it('reads RFC 3339 date-times with a zone', () => {
    expect(parseDateTime('2030-01-02T03:04:05Z')).toBe(Date.UTC(2030, 0, 2, 3, 4, 5));
    expect(parseDateTime('2030-01-02T03:04:05.250+02:00')).toBe(Date.UTC(2030, 0, 2, 1, 4, 5, 250));
  });
  it.each(['2030-01-02', '2030-01-02T03:04:05', '2030-02-30T00:00:00Z', '2030-01-02T25:00:00Z', 'soon'])(
    'rejects %s',
    (v) => {
      expect(parseDateTime(v)).toBeNull();
    },
  );
});

describe('MIME types', () => {
  it('normalizes and compares with aliases', () => {
    expect(normalizeMimeType(' Image/PNG; charset=x ')).toBe('image/png');
    expect(normalizeMimeType('png')).toBeNull();
    expect(sameMediaType('image/jpg', 'image/jpeg')).toBe(true);
    expect(sameMediaType('IMAGE/JPEG', 'image/jpeg')).toBe(true);
    expect(sameMediaType('image/png', 'image/jpeg')).toBe(false);
  });
});

describe('validatePresignedFileRequest', () => {
  it('defaults purpose to input and nulls the optional fields', () => {
    const r = validatePresignedFileRequest({ mime_type: 'image/png', size_bytes: 1 }, NOW);
    expect(r).toEqual({
      ok: true,
      value: {
        mime_type: 'image/png',
        size_bytes: 1,
        purpose: 'input',
        filename: null,
        user_id: null,
        expiresAt: null,
      },
    });
  });
  it('reports the first problem in field order', () => {
    const r = validatePresignedFileRequest({ size_bytes: -1, purpose: 'x' }, NOW);
    expect(r).toEqual({ ok: false, detail: FILE_DETAILS.mimeTypeRequired });
  });
  it('takes expires_at relative to the given now', () => {
    const body = { mime_type: 'image/png', size_bytes: 1, expires_at: '2030-01-01T00:00:00Z' };
    expect(validatePresignedFileRequest(body, NOW)).toEqual({
      ok: false,
      detail: FILE_DETAILS.expiresAtPast,
    });
    expect(validatePresignedFileRequest(body, NOW - 1).ok).toBe(true);
  });
});

describe('validateInlineFileFields and validateFileListQuery', () => {
  it('treats empty parts as absent and ignores unknown ones', () => {
    const r = validateInlineFileFields({ purpose: '', other: 'x', user_id: 'u' }, NOW);
    expect(r).toEqual({
      ok: true,
      value: { purpose: 'input', filename: null, user_id: 'u', expiresAt: null, mime_type: null },
    });
  });
  it('defaults the list query', () => {
    expect(validateFileListQuery({})).toEqual({
      ok: true,
      value: { limit: 25, cursor: null, purpose: null, state: null },
    });
  });
});
