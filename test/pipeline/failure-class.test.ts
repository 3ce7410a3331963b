/**
 * Which failures are the file's own: only what the service said about the file or its request itself
 * (a 400, 413 or 422 answer, a file it marked failed) or what its rules refuse before sending. Any
 * other answer — an id it no longer knows, a state it refuses, a signed URL that expired, an upload
 * whose answer was lost — may pass on a later run.
 */
import { describe, expect, it } from 'vitest';
import {
  errorFromResponse,
  FileFailedError,
  LostResponseError,
  LostUploadError,
  PreflightError,
} from '../../src/client/index.ts';
import { failureOfError } from '../../src/pipeline/failure-class.ts';

const answer = (status: number, detail = 'x') => errorFromResponse(status, { detail }, {});

describe('failureOfError', () => {
  it("takes only the service's word about the file or its request for the file's own", () => {
    for (const err of [
      answer(400),
      answer(413),
      answer(422),
      new FileFailedError('f', 'corrupt'),
      new PreflightError(400, 'bad'),
    ]) {
      expect(failureOfError(err).retryable, err.message).toBe(false);
    }
  });

  it('lets every other answer pass on a later run: 404, 409, a 403 of a signed URL, 5xx, a lost upload answer', () => {
    for (const err of [
      answer(404),
      answer(409),
      answer(403, 'Request has expired'),
      answer(500),
      answer(429),
      new LostUploadError('POST /v1/files', 'req-1'),
    ]) {
      expect(failureOfError(err).retryable, err.message).toBe(true);
    }
    expect(failureOfError(new LostUploadError('POST /v1/files', 'req-1')).kind).toBe('upload answer lost');
  });

  it('leaves a create whose answer was lost to the crash policy (not retried by itself)', () => {
    expect(failureOfError(new LostResponseError('POST /v1/generations', 'req-2')).retryable).toBe(false);
  });
});
