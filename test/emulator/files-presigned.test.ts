/**
 * Presigned uploads over real HTTP: the JSON request's checks, the upload envelope, PUT to the signed
 * storage URL (exact size, declared type, signature and expiry, overwrite, a cut-off body), and the
 * complete call (404, 400 without bytes, idempotent, then ingest).
 */
import { readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import { CHOICES, DETAILS, FILE_DETAILS, FILE_FAILURE_REASONS, LIMITS } from '../../src/spec/index.ts';
import { call, KEY, KEY_B, testConfig, until } from '../helpers/emulator.ts';
import { abortMidBody, putUpload, settled, tinyJpeg, tinyPng } from './files-helpers.ts';

const TTL_S = 600;
let emu: RunningEmulator;
const clock = new ManualClock();

function partFiles(): string[] {
  return readdirSync(join(emu.app.emu.dataDir, 'blobs', 'files')).filter((f) => f.endsWith('.part'));
}

async function presign(body: Record<string, unknown>, key = KEY) {
  const r = await call(emu, 'POST', '/v1/files', { json: body, key });
  expect(r.status).toBe(201);
  return r.body;
}

beforeAll(async () => {
  emu = await startEmulator({ config: testConfig({ upload_url_ttl_s: TTL_S }), clock });
});
afterAll(async () => {
  await emu.close();
});

describe('POST /v1/files application/json', () => {
  it.each([
    [[1, 2], FILE_DETAILS.bodyNotObject],
    [{ size_bytes: 10 }, FILE_DETAILS.mimeTypeRequired],
    [{ mime_type: 'png', size_bytes: 10 }, FILE_DETAILS.mimeTypeInvalid],
    [{ mime_type: 'application/pdf', size_bytes: 10 }, FILE_DETAILS.mimeTypeNotMedia],
    [{ mime_type: 'image/png' }, FILE_DETAILS.sizeRequired],
    [{ mime_type: 'image/png', size_bytes: 0 }, FILE_DETAILS.sizeInvalid],
    [{ mime_type: 'image/png', size_bytes: 1.5 }, FILE_DETAILS.sizeInvalid],
    [{ mime_type: 'image/png', size_bytes: '10' }, FILE_DETAILS.sizeInvalid],
    [{ mime_type: 'video/mp4', size_bytes: LIMITS.presignedMaxBytes + 1 }, FILE_DETAILS.sizeInvalid],
    [{ mime_type: 'image/png', size_bytes: 10, purpose: 'style' }, FILE_DETAILS.purposeInvalid],
    [{ mime_type: 'image/png', size_bytes: 10, expires_at: 'tomorrow' }, FILE_DETAILS.expiresAtInvalid],
    [
      { mime_type: 'image/png', size_bytes: 10, expires_at: '2030-02-31T00:00:00Z' },
      FILE_DETAILS.expiresAtInvalid,
    ],
    [
      { mime_type: 'image/png', size_bytes: 10, expires_at: '2001-01-01T00:00:00Z' },
      FILE_DETAILS.expiresAtPast,
    ],
    [{ mime_type: 'image/png', size_bytes: 10, filename: 7 }, FILE_DETAILS.filenameInvalid],
    [{ mime_type: 'image/png', size_bytes: 10, filename: 'x'.repeat(256) }, FILE_DETAILS.filenameTooLong],
    [{ mime_type: 'image/png', size_bytes: 10, user_id: false }, FILE_DETAILS.userIdInvalid],
  ])('rejects %j with 400', async (body, detail) => {
    const before = emu.app.emu.store.files.size;
    const r = await call(emu, 'POST', '/v1/files', { json: body });
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ detail });
    expect(emu.app.emu.store.files.size).toBe(before);
  });

  it('rejects a body that is not JSON with the common invalid-JSON detail', async () => {
    const r = await call(emu, 'POST', '/v1/files', {
      body: '{"mime_type":',
      headers: { 'content-type': 'application/json' },
    });
    expect(r.status).toBe(400);
    expect(r.body.detail).toBe(DETAILS.invalidJson);
  });

  it('accepts the largest size and answers the upload envelope', async () => {
    const expires = new Date(clock.now() + 86_400_000).toISOString();
    const body = await presign({
      mime_type: 'Video/MP4',
      size_bytes: LIMITS.presignedMaxBytes,
      purpose: 'reference',
      filename: 'clip.mp4',
      user_id: 'u-1',
      expires_at: expires,
      unknown_field: 'ignored',
    });
    expect(body.state).toBe('pending');
    expect(body.file).toMatchObject({
      id: body.id,
      mime_type: 'video/mp4',
      purpose: 'reference',
      size_bytes: LIMITS.presignedMaxBytes,
      state: 'pending',
      filename: 'clip.mp4',
      user_id: 'u-1',
      expires_at: expires,
      deleted_at: null,
      failure_reason: null,
    });
    expect(body.upload.method).toBe('PUT');
    expect(body.upload.headers).toEqual({ 'Content-Type': 'video/mp4' });
    const url = new URL(body.upload.url);
    expect(`${url.protocol}//${url.host}`).toBe(emu.url);
    expect(url.pathname).toBe(`/_storage/uploads/${body.id}`);
    expect(url.searchParams.get('size')).toBe(String(LIMITS.presignedMaxBytes));
    const exp = Date.parse(body.upload.expires_at);
    expect(exp).toBeGreaterThan(clock.now() + (TTL_S - 1) * 1000);
    expect(exp).toBeLessThanOrEqual(clock.now() + TTL_S * 1000);
  });
});

describe('PUT to the upload URL, then complete', () => {
  it('stores the exact bytes, completes once, ingests to ready, and refuses later PUTs', async () => {
    const png = await tinyPng(6, 2);
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length, filename: 'six.png' });

    const early = await call(emu, 'POST', `/v1/files/${body.id}/complete`);
    expect(early.status).toBe(400);
    expect(early.body.detail).toBe(FILE_DETAILS.notUploaded);

    const put = await putUpload(body.upload.url, png, body.upload.headers);
    expect(put.status).toBe(200);
    expect(put.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(put.headers['x-request-id']).toBeUndefined();

    // An application/json Content-Type with an empty body is fine on the body-less complete.
    const done = await call(emu, 'POST', `/v1/files/${body.id}/complete`, {
      headers: { 'content-type': 'application/json' },
    });
    expect(done.status).toBe(CHOICES.completeFileStatus);
    expect(done.body.id).toBe(body.id);
    expect(['pending', 'ready']).toContain(done.body.state);
    const file = await settled(emu, body.id);
    expect(file.state).toBe('ready');
    expect(file.size_bytes).toBe(png.length);
    expect(emu.app.emu.store.files.get(body.id)?.media).toMatchObject({ width: 6, height: 2 });

    const again = await call(emu, 'POST', `/v1/files/${body.id}/complete`);
    expect(again.status).toBe(CHOICES.completeFileStatus);
    expect(again.body.state).toBe('ready');

    const late = await putUpload(body.upload.url, png, body.upload.headers);
    expect(late.status).toBe(409);
    expect(late.body).toEqual({ detail: FILE_DETAILS.uploadAlreadyCompleted });
  });

  it('a second PUT replaces the object until complete', async () => {
    const png = await tinyPng(3, 3);
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length });
    const junk = Buffer.alloc(png.length, 0x41);
    expect((await putUpload(body.upload.url, junk, body.upload.headers)).status).toBe(200);
    expect((await putUpload(body.upload.url, png, body.upload.headers)).status).toBe(200);
    expect((await call(emu, 'POST', `/v1/files/${body.id}/complete`)).status).toBe(200);
    expect((await settled(emu, body.id)).state).toBe('ready');
  });

  it('fails ingest when the bytes are not of the declared mime_type', async () => {
    const jpg = await tinyJpeg();
    const body = await presign({ mime_type: 'image/png', size_bytes: jpg.length });
    expect((await putUpload(body.upload.url, jpg, body.upload.headers)).status).toBe(200);
    await call(emu, 'POST', `/v1/files/${body.id}/complete`);
    const file = await settled(emu, body.id);
    expect(file.state).toBe('failed');
    expect(file.failure_reason).toBe(FILE_FAILURE_REASONS.mimeMismatch('image/png', 'image/jpeg'));
  });

  it('refuses a Content-Length other than the signed size and stores nothing', async () => {
    const png = await tinyPng();
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length + 5 });
    const r = await putUpload(body.upload.url, png, body.upload.headers);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ detail: FILE_DETAILS.uploadLengthMismatch(png.length, png.length + 5) });
    const c = await call(emu, 'POST', `/v1/files/${body.id}/complete`);
    expect(c.status).toBe(400);
    expect(c.body.detail).toBe(FILE_DETAILS.notUploaded);
  });

  it('refuses a Content-Type other than the declared one', async () => {
    const png = await tinyPng();
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length });
    const r = await putUpload(body.upload.url, png, { 'Content-Type': 'image/jpeg' });
    expect(r.status).toBe(400);
    expect(r.body.detail).toBe(FILE_DETAILS.uploadTypeMismatch('image/png'));
  });

  it('answers 411 to a chunked PUT without Content-Length', async () => {
    const png = await tinyPng();
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length });
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(body.upload.url, {
        method: 'PUT',
        headers: { 'content-type': 'image/png', 'transfer-encoding': 'chunked' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(png);
    });
    expect(status).toBe(411);
  });

  it('answers 403 to a tampered URL: signature, size or expiry changed, or another file id', async () => {
    const png = await tinyPng();
    const a = await presign({ mime_type: 'image/png', size_bytes: png.length });
    const b = await presign({ mime_type: 'image/png', size_bytes: png.length });
    const h = a.upload.headers;
    const url = new URL(a.upload.url);
    const sig = url.searchParams.get('sig') as string;

    const badSig = new URL(url);
    badSig.searchParams.set('sig', `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`);
    const badSize = new URL(url);
    badSize.searchParams.set('size', String(png.length + 1));
    const badExpiry = new URL(url);
    badExpiry.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    const otherFile = new URL(url);
    otherFile.pathname = `/_storage/uploads/${b.id}`;
    for (const u of [badSig, badSize, badExpiry, otherFile]) {
      const r = await putUpload(u.toString(), png, h);
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ detail: DETAILS.uploadSignatureInvalid });
    }
    const c = await call(emu, 'POST', `/v1/files/${a.id}/complete`);
    expect(c.status).toBe(400);
  });

  it('answers 403 once the upload URL has expired', async () => {
    const png = await tinyPng();
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length });
    clock.advance((TTL_S + 1) * 1000);
    const r = await putUpload(body.upload.url, png, body.upload.headers);
    expect(r.status).toBe(403);
    expect(r.body).toEqual({ detail: DETAILS.uploadUrlExpired });
  });

  it('a PUT cut off mid-body stores nothing and the file stays without bytes', async () => {
    const size = 4000;
    const body = await presign({ mime_type: 'image/png', size_bytes: size });
    await abortMidBody(
      body.upload.url,
      'PUT',
      { 'content-type': 'image/png' },
      size,
      Buffer.alloc(1500, 9),
      () => until(async () => partFiles().length > 0),
    );
    await until(async () => partFiles().length === 0);
    const c = await call(emu, 'POST', `/v1/files/${body.id}/complete`);
    expect(c.status).toBe(400);
    expect(c.body.detail).toBe(FILE_DETAILS.notUploaded);
    expect(emu.app.emu.store.files.get(body.id)?.blobPath).toBeNull();
  });

  it('complete answers 404 for an unknown id and for another client’s file', async () => {
    const png = await tinyPng();
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length });
    await putUpload(body.upload.url, png, body.upload.headers);
    const other = await call(emu, 'POST', `/v1/files/${body.id}/complete`, { key: KEY_B });
    expect(other.status).toBe(404);
    expect(other.body).toEqual({ detail: DETAILS.fileNotFound });
    expect(emu.app.emu.store.files.get(body.id)?.ingestStarted).toBe(false);
    const unknown = await call(emu, 'POST', '/v1/files/00000000-0000-4000-8000-000000000000/complete');
    expect(unknown.status).toBe(404);
  });

  it('a deleted file refuses PUT and complete with 409', async () => {
    const png = await tinyPng();
    const body = await presign({ mime_type: 'image/png', size_bytes: png.length });
    expect((await call(emu, 'DELETE', `/v1/files/${body.id}`)).status).toBe(204);
    const put = await putUpload(body.upload.url, png, body.upload.headers);
    expect(put.status).toBe(409);
    expect(put.body.detail).toBe(FILE_DETAILS.fileDeleted);
    const c = await call(emu, 'POST', `/v1/files/${body.id}/complete`);
    expect(c.status).toBe(409);
    expect(c.body.detail).toBe(FILE_DETAILS.fileDeleted);
  });

  it('answers 503 under the ingestion-unavailable fault and stores nothing', async () => {
    const down = await startEmulator({ config: testConfig({ faults: { http_503: 1 } }) });
    try {
      const r = await call(down, 'POST', '/v1/files', { json: { mime_type: 'image/png', size_bytes: 10 } });
      expect(r.status).toBe(503);
      expect(r.body).toEqual({ detail: DETAILS.ingestionUnavailable });
      expect(down.app.emu.store.files.size).toBe(0);
    } finally {
      await down.close();
    }
  });
});
