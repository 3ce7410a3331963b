/**
 * Inline (multipart) uploads over real HTTP: the response shape, ingest to ready or failed from the real
 * bytes, the inline cap (413, nothing left behind), multipart problems, and a client that disconnects
 * mid-body (no file, no crash).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FormData, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { ffmpegPath } from '../../src/media/index.ts';
import {
  API_VERSION,
  CHOICES,
  FILE_DETAILS,
  FILE_FAILURE_REASONS,
  inlineTooLargeDetail,
} from '../../src/spec/index.ts';
import { call, KEY, startTestEmulator, until } from '../helpers/emulator.ts';
import {
  abortMidBody,
  multipartHead,
  settled,
  tinyJpeg,
  tinyPng,
  truncatedPng,
  uploadInline,
} from './files-helpers.ts';

const CAP = 4096;
let emu: RunningEmulator;
/** An emulator with a roomier cap, for media larger than CAP. */
let big: RunningEmulator;

function filesDir(): string {
  return join(emu.app.emu.dataDir, 'blobs', 'files');
}

beforeAll(async () => {
  emu = await startTestEmulator({ inline_upload_max_bytes: CAP, blocked_words: ['forbidden'] });
  big = await startTestEmulator({ inline_upload_max_bytes: 1024 * 1024 });
});
afterAll(async () => {
  await emu.close();
  await big.close();
});

describe('POST /v1/files multipart', () => {
  it('answers 201 with a pending File and upload null, then ingests a PNG to ready', async () => {
    const png = await tinyPng(5, 3);
    const r = await uploadInline(emu, png, {
      filename: 'red.png',
      type: 'image/png',
      fields: { purpose: 'reference', user_id: 'end-user-7' },
    });
    expect(r.status).toBe(CHOICES.createFileStatus);
    expect(r.headers['x-api-version']).toBe(API_VERSION);
    expect(r.headers['x-request-id']).toBeTruthy();
    expect(r.body.upload).toBeNull();
    expect(r.body.id).toBe(r.body.file.id);
    expect(r.body.state).toBe('pending');
    expect(Object.keys(r.body.file)).toEqual([
      'id',
      'created_at',
      'mime_type',
      'purpose',
      'size_bytes',
      'state',
      'deleted_at',
      'expires_at',
      'failure_reason',
      'filename',
      'user_id',
    ]);
    expect(r.body.file).toMatchObject({
      mime_type: 'image/png',
      purpose: 'reference',
      size_bytes: png.length,
      state: 'pending',
      deleted_at: null,
      expires_at: null,
      failure_reason: null,
      filename: 'red.png',
      user_id: 'end-user-7',
    });
    expect(r.body.file.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Date(r.body.file.created_at).toISOString()).toBe(r.body.file.created_at);

    const file = await settled(emu, r.body.id);
    expect(file.state).toBe('ready');
    expect(file.failure_reason).toBeNull();
    const rec = emu.app.emu.store.files.get(r.body.id);
    expect(rec?.media).toEqual({ kind: 'image', mime: 'image/png', width: 5, height: 3 });
  });

  it('ingests a short video to ready with its frame size and duration', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'genpipe-files-test-'));
    try {
      const path = join(dir, 'clip.mp4');
      await promisify(execFile)(ffmpegPath(), [
        '-v',
        'error',
        '-f',
        'lavfi',
        '-i',
        'testsrc=size=64x36:rate=12:duration=1',
        '-pix_fmt',
        'yuv420p',
        '-c:v',
        'libx264',
        '-preset',
        'ultrafast',
        '-y',
        path,
      ]);
      const r = await uploadInline(big, readFileSync(path), { filename: 'clip.mp4', type: 'video/mp4' });
      expect(r.status).toBe(201);
      const file = await settled(big, r.body.id);
      expect(file.state).toBe('ready');
      expect(file.mime_type).toBe('video/mp4');
      const media = big.app.emu.store.files.get(r.body.id)?.media;
      expect(media).toMatchObject({ kind: 'video', mime: 'video/mp4', width: 64, height: 36 });
      expect(media?.durationSeconds).toBeGreaterThan(0.9);
      expect(media?.durationSeconds).toBeLessThan(1.2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('defaults purpose to input and takes mime_type from the sniffed bytes, not the part header', async () => {
    const jpg = await tinyJpeg();
    const r = await uploadInline(emu, jpg, { filename: 'photo.png', type: 'image/png' });
    expect(r.status).toBe(201);
    expect(r.body.file.purpose).toBe('input');
    const file = await settled(emu, r.body.id);
    expect(file.state).toBe('ready');
    expect(file.mime_type).toBe('image/jpeg');
  });

  it('fails a file whose declared mime_type field disagrees with the bytes', async () => {
    const jpg = await tinyJpeg();
    const r = await uploadInline(emu, jpg, { fields: { mime_type: 'image/png' } });
    expect(r.status).toBe(201);
    expect(r.body.file.mime_type).toBe('image/png');
    const file = await settled(emu, r.body.id);
    expect(file.state).toBe('failed');
    expect(file.failure_reason).toBe(FILE_FAILURE_REASONS.mimeMismatch('image/png', 'image/jpeg'));
    // mime_type tells the type of the stored bytes once it is known.
    expect(file.mime_type).toBe('image/jpeg');
  });

  it('accepts a declared alias of the real type (image/jpg for JPEG bytes)', async () => {
    const r = await uploadInline(emu, await tinyJpeg(), { fields: { mime_type: 'image/jpg' } });
    const file = await settled(emu, r.body.id);
    expect(file.state).toBe('ready');
    expect(file.mime_type).toBe('image/jpeg');
  });

  it('fails a text file as not media', async () => {
    const r = await uploadInline(emu, 'just some words, not an image\n', {
      filename: 'notes.txt',
      type: 'text/plain',
    });
    expect(r.status).toBe(201);
    const file = await settled(emu, r.body.id);
    expect(file.state).toBe('failed');
    expect(file.failure_reason).toBe(FILE_FAILURE_REASONS.notMedia);
  });

  it('fails a truncated PNG as undecodable with a human-readable reason', async () => {
    const bytes = await truncatedPng();
    const r = await uploadInline(big, bytes, { filename: 'cut.png', type: 'image/png' });
    expect(r.status).toBe(201);
    const file = await settled(big, r.body.id);
    expect(file.state).toBe('failed');
    expect(file.failure_reason).toMatch(/^Image could not be decoded/);
    expect(file.mime_type).toBe('image/png');
  });

  it('fails a file whose filename holds a blocked word (moderation)', async () => {
    const r = await uploadInline(emu, await tinyPng(), { filename: 'a Forbidden picture.png' });
    const file = await settled(emu, r.body.id);
    expect(file.state).toBe('failed');
    expect(file.failure_reason).toBe(FILE_FAILURE_REASONS.moderated);
  });

  it('a filename field overrides the part filename; expires_at is echoed', async () => {
    const expires = new Date(Date.now() + 3_600_000).toISOString();
    const r = await uploadInline(emu, await tinyPng(), {
      filename: 'part.png',
      fields: { filename: 'field.png', expires_at: expires },
    });
    expect(r.status).toBe(201);
    expect(r.body.file.filename).toBe('field.png');
    expect(r.body.file.expires_at).toBe(expires);
  });

  it('accepts a file of exactly the cap and answers 413 one byte over, storing nothing', async () => {
    const before = emu.app.emu.store.files.size;
    const exact = Buffer.alloc(CAP, 1);
    const ok = await uploadInline(emu, exact);
    expect(ok.status).toBe(201);
    expect(ok.body.file.size_bytes).toBe(CAP);

    const over = await uploadInline(emu, Buffer.alloc(CAP + 1, 1));
    expect(over.status).toBe(413);
    expect(over.body).toEqual({ detail: inlineTooLargeDetail(CAP) });
    expect(emu.app.emu.store.files.size).toBe(before + 1);
    expect(readdirSync(filesDir()).filter((f) => f.endsWith('.part'))).toEqual([]);
    // The connection and the server are fine afterwards.
    expect((await call(emu, 'GET', '/v1/files?limit=1')).status).toBe(200);
  });

  it('answers 413 from a declared Content-Length far over the cap without reading the body', async () => {
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${emu.url}/v1/files`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'multipart/form-data; boundary=xyz',
          'content-length': String(50 * 1024 * 1024),
        },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write(multipartHead('xyz', 'big.bin', 'application/octet-stream'));
    });
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body)).toEqual({ detail: inlineTooLargeDetail(CAP) });
  });

  it('rejects a body without a part named file, a repeated field and a bad purpose with 400', async () => {
    const noFile = await uploadInline(emu, await tinyPng(), { partName: 'image' });
    expect(noFile.status).toBe(400);
    expect(noFile.body.detail).toBe(FILE_DETAILS.multipartNoFile);

    const badPurpose = await uploadInline(emu, await tinyPng(), { fields: { purpose: 'style' } });
    expect(badPurpose.status).toBe(400);
    expect(badPurpose.body.detail).toBe(FILE_DETAILS.purposeInvalid);

    const past = await uploadInline(emu, await tinyPng(), { fields: { expires_at: '2001-01-01T00:00:00Z' } });
    expect(past.status).toBe(400);
    expect(past.body.detail).toBe(FILE_DETAILS.expiresAtPast);

    const notMediaType = await uploadInline(emu, await tinyPng(), { fields: { mime_type: 'text/plain' } });
    expect(notMediaType.status).toBe(400);
    expect(notMediaType.body.detail).toBe(FILE_DETAILS.mimeTypeNotMedia);
    expect(readdirSync(filesDir()).filter((f) => f.endsWith('.part'))).toEqual([]);
  });

  it('rejects two file parts, an over-long field, a repeated field and a cut multipart body with 400', async () => {
    const png = await tinyPng();
    const post = async (form: FormData) => {
      const res = await fetch(`${emu.url}/v1/files`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}` },
        body: form,
      });
      return { status: res.status, body: await res.json() };
    };
    const two = new FormData();
    two.append('file', new Blob([new Uint8Array(png)]), 'a.png');
    two.append('file', new Blob([new Uint8Array(png)]), 'b.png');
    expect(await post(two)).toEqual({ status: 400, body: { detail: FILE_DETAILS.multipartExtraFile } });
    const long = new FormData();
    long.append('filename', 'x'.repeat(20_000));
    long.append('file', new Blob([new Uint8Array(png)]), 'a.png');
    expect(await post(long)).toEqual({ status: 400, body: { detail: FILE_DETAILS.multipartFieldTooLong } });
    const twice = new FormData();
    twice.append('file', new Blob([new Uint8Array(png)]), 'a.png');
    twice.append('purpose', 'input');
    twice.append('purpose', 'reference');
    expect(await post(twice)).toEqual({
      status: 400,
      body: { detail: FILE_DETAILS.fieldRepeated('purpose') },
    });
    const cut = Buffer.concat([multipartHead('b0', 'a.png', 'image/png'), png]);
    const r = await call(emu, 'POST', '/v1/files', {
      body: cut,
      headers: { 'content-type': 'multipart/form-data; boundary=b0' },
    });
    expect(r.status).toBe(400);
    expect(r.body.detail).toBe(FILE_DETAILS.multipartMalformed);
    expect(readdirSync(filesDir()).filter((f) => f.endsWith('.part'))).toEqual([]);
  });

  it('answers 415 for a body that is neither multipart nor JSON', async () => {
    const r = await call(emu, 'POST', '/v1/files', {
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect(r.status).toBe(415);
    expect(r.body.detail).toBe(FILE_DETAILS.unsupportedContentType);
  });

  it('answers 401 without a key and stores nothing', async () => {
    const before = emu.app.emu.store.files.size;
    const r = await uploadInline(emu, await tinyPng(), { key: 'nope' });
    expect(r.status).toBe(401);
    expect(r.body.detail).toBe('Missing or invalid API key');
    expect(emu.app.emu.store.files.size).toBe(before);
  });

  it('an upload cut off mid-body never becomes a file and leaves no partial bytes', async () => {
    const before = emu.app.emu.store.files.size;
    const boundary = 'cutcutcut';
    const head = multipartHead(boundary, 'cut.png', 'image/png');
    await abortMidBody(
      `${emu.url}/v1/files`,
      'POST',
      { authorization: `Bearer ${KEY}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      head.length + 3000,
      Buffer.concat([head, Buffer.alloc(1000, 7)]),
      // Cut only once the server is streaming the part to disk.
      () => until(async () => readdirSync(filesDir()).some((f) => f.endsWith('.part'))),
    );
    await until(async () => readdirSync(filesDir()).every((f) => !f.endsWith('.part')));
    expect(emu.app.emu.store.files.size).toBe(before);
    // The process is alive and still serving.
    const r = await uploadInline(emu, await tinyPng());
    expect(r.status).toBe(201);
  });
});
