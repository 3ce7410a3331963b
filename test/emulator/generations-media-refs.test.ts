/**
 * Media references of POST /v1/generations over real HTTP: data (base64), file_id, generation_id, and
 * url fetched from a tiny server on 127.0.0.1 (allowed) or another host (not allowed); plus the
 * fetch module's own byte cap and redirect rules.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorContext } from '../../src/emulator/context.ts';
import { FetchMediaError, fetchToFile } from '../../src/emulator/fetch-media.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import {
  fileNotReadyDetail,
  fileWrongKindDetail,
  generationRefWrongKindDetail,
  imageTooManyPixelsDetail,
} from '../../src/spec/index.ts';
import { call, hold, KEY_B, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { claimedSizeBytes } from '../media/claimed-size.ts';
import { settled, uploadInline } from './files-helpers.ts';
import { mediaServer, png, terminal, tinyMp4 } from './generations-helpers.ts';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

let emu: RunningEmulator;
let server: Awaited<ReturnType<typeof mediaServer>>;
let pngBytes: Buffer;

beforeAll(async () => {
  pngBytes = await png(24, 24);
  server = await mediaServer({
    '/ok.png': (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(pngBytes.length) });
      res.end(pngBytes);
    },
    '/untyped': (_req, res) => {
      res.writeHead(200);
      res.end(pngBytes);
    },
    '/page.html': (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    },
    '/lies.png': (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end('this is text, not a picture');
    },
    '/boom': (_req, res) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('oops');
    },
    '/huge.png': (_req, res) => {
      // Declares 60 MB; the fetch must give up on the header alone.
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(60 * 1024 * 1024) });
      res.write(pngBytes);
    },
    '/stream': (_req, res) => {
      res.writeHead(200, { 'content-type': 'image/png' });
      for (let i = 0; i < 10; i++) res.write(Buffer.alloc(1000, 1));
      res.end();
    },
    '/hop': (_req, res) => {
      res.writeHead(302, { location: '/ok.png' });
      res.end();
    },
    '/away': (_req, res) => {
      res.writeHead(302, { location: 'http://example.com/ok.png' });
      res.end();
    },
  });
  emu = await startTestEmulator({ fetch_allow_hosts: ['127.0.0.1'] });
});
afterAll(async () => {
  await emu.close();
  await server.close();
});

function imageWithRef(ref: Record<string, unknown>) {
  return { type: 'image', prompt: 'a reference', aspect_ratio: '1:1', image_ref: [ref] };
}

async function create(json: unknown, key?: string) {
  return call(emu, 'POST', '/v1/generations', { json, key });
}

describe('url references', () => {
  it('fetches media from an allowed host and completes', async () => {
    for (const path of ['/ok.png', '/untyped', '/hop']) {
      const r = await create({ type: 'image_edit', prompt: 'tint', source: { url: server.url(path) } });
      expect(r.status, path).toBe(201);
      expect((await terminal(emu, r.body.id)).state).toBe('completed');
    }
  });

  it('maps fetch failures to the interface details', async () => {
    const cases: Array<[string, number, string]> = [
      [server.url('/missing.png'), 422, 'image_ref[0]: failed to fetch URL (HTTP 404)'],
      [server.url('/boom'), 422, 'image_ref[0]: failed to fetch URL (HTTP 500)'],
      [server.url('/page.html'), 422, 'image_ref[0]: content-type is not an image'],
      [server.url('/lies.png'), 422, 'image_ref[0]: content-type is not an image'],
      [server.url('/huge.png'), 413, 'image_ref[0]: image exceeds 50 MB limit'],
      ['http://example.com/cat.png', 422, 'image_ref[0]: failed to fetch URL'],
      ['http://localhost:1/cat.png', 422, 'image_ref[0]: failed to fetch URL'],
      [server.url('/away'), 422, 'image_ref[0]: failed to fetch URL'],
      ['http://127.0.0.1:1/cat.png', 422, 'image_ref[0]: failed to fetch URL'],
    ];
    for (const [url, status, detail] of cases) {
      const r = await create(imageWithRef({ url }));
      expect({ url, status: r.status, body: r.body }).toEqual({ url, status, body: { detail } });
      expect(r.headers['x-ratelimit-limit']).toBeUndefined();
    }
  });

  it('answers 502 when the fetch proxy is down', async () => {
    await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { fetch_proxy_down: 1 } });
    try {
      const r = await create(imageWithRef({ url: server.url('/ok.png') }));
      expect(r.status).toBe(502);
      expect(r.body).toEqual({ detail: 'image_ref[0]: fetch proxy unavailable' });
      // data references need no proxy.
      const d = await create(imageWithRef({ data: pngBytes.toString('base64'), media_type: 'image/png' }));
      expect(d.status).toBe(201);
    } finally {
      await call(emu, 'PUT', '/_emulator/faults', { key: null, json: {} });
    }
  });
});

describe('fetchToFile', () => {
  const ctx = { config: { fetch_allow_hosts: ['127.0.0.1'] } } as unknown as EmulatorContext;
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'genpipe-fetch-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('streams to the file and stops at the byte cap, leaving no partial file', async () => {
    const ok = await fetchToFile(ctx, server.url('/stream'), join(dir, 'a'), {
      maxBytes: 10_000,
      accept: 'image',
    });
    expect(ok.bytes).toBe(10_000);
    expect(statSync(join(dir, 'a')).size).toBe(10_000);
    const err = await fetchToFile(ctx, server.url('/stream'), join(dir, 'b'), {
      maxBytes: 2_500,
      accept: 'image',
    }).catch((e) => e);
    expect(err).toBeInstanceOf(FetchMediaError);
    expect(err.kind).toBe('too_large');
    expect(() => statSync(join(dir, 'b'))).toThrow();
  });

  it('rejects other schemes and hosts before any connection, and checks each redirect hop', async () => {
    for (const url of ['ftp://127.0.0.1/x', 'http://10.0.0.1/x', 'file:///etc/passwd', 'nonsense']) {
      const err = await fetchToFile(ctx, url, join(dir, 'c'), { maxBytes: 10, accept: 'media' }).catch(
        (e) => e,
      );
      expect(err.kind, url).toBe('not_allowed');
    }
    const hop = await fetchToFile(ctx, server.url('/away'), join(dir, 'd'), {
      maxBytes: 10,
      accept: 'media',
    }).catch((e) => e);
    expect(hop.kind).toBe('not_allowed');
    const video = await fetchToFile(ctx, server.url('/ok.png'), join(dir, 'e'), {
      maxBytes: 1000,
      accept: 'video',
    }).catch((e) => e);
    expect(video.kind).toBe('not_media');
  });
});

describe('data references', () => {
  it('decodes base64 to a file and completes; rejects bad base64 and non-image bytes', async () => {
    const ok = await create(imageWithRef({ data: pngBytes.toString('base64'), media_type: 'image/png' }));
    expect(ok.status).toBe(201);
    expect(ok.body.state).toBe('queued');
    expect((await terminal(emu, ok.body.id)).state).toBe('completed');
    // The record keeps no media bytes.
    const rec = emu.app.emu.store.generations.get(ok.body.id)!;
    expect(JSON.stringify(rec.request)).not.toContain(pngBytes.toString('base64').slice(0, 40));

    const bad = await create(imageWithRef({ data: 'abc$', media_type: 'image/png' }));
    expect(bad.status).toBe(422);
    expect(bad.body).toEqual({ detail: 'image_ref[0]: invalid base64 data' });
    const text = await create(
      imageWithRef({ data: Buffer.from('plain words').toString('base64'), media_type: 'image/png' }),
    );
    expect(text.status).toBe(422);
    expect(text.body).toEqual({ detail: 'image_ref[0]: content-type is not an image' });
    const notVideo = await create({
      type: 'video_edit',
      prompt: 'x',
      source: { data: pngBytes.toString('base64'), media_type: 'video/mp4' },
    });
    expect(notVideo.status).toBe(422);
    expect(notVideo.body).toEqual({ detail: 'source: content-type is not a video' });
  });

  it('accepts an image whose header is damaged and fails it as corrupt_input', async () => {
    // A JPEG start-of-image marker, then nothing a decoder can use.
    const broken = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(64, 7)]);
    const r = await create({
      type: 'image_edit',
      prompt: 'fix',
      source: { data: broken.toString('base64'), media_type: 'image/jpeg' },
    });
    expect(r.status).toBe(201);
    const g = await terminal(emu, r.body.id);
    expect(g).toMatchObject({ state: 'failed', failure_code: 'corrupt_input', output: [] });
    expect(g.failure_reason).toMatch(/^source: image could not be decoded/);
  });
});

describe('images whose header claims more pixels than any decoder takes', () => {
  it('answers 413 with the pixel text for inline data, from the header, not corrupt_input', async () => {
    const vast = await claimedSizeBytes('webp-vp8x', 60000, 60000);
    const r = await create(imageWithRef({ data: vast.toString('base64'), media_type: 'image/webp' }));
    expect({ status: r.status, body: r.body }).toEqual({
      status: 413,
      body: { detail: imageTooManyPixelsDetail('image_ref[0]', 60000, 60000) },
    });
  });

  it('keeps an uploaded one ready with its header size; a generation using it fails as image_too_large', async () => {
    const up = await uploadInline(emu, await claimedSizeBytes('png', 60000, 60000), {
      type: 'image/png',
      filename: 'vast.png',
    });
    const file = await settled(emu, up.body.id);
    expect(file).toMatchObject({ state: 'ready', failure_reason: null });
    const r = await create(imageWithRef({ file_id: file.id }));
    expect(r.status).toBe(201);
    const failed = await terminal(emu, r.body.id);
    expect(failed).toMatchObject({ state: 'failed', failure_code: 'image_too_large', output: [] });
    expect(failed.failure_reason).toBe(imageTooManyPixelsDetail('image_ref[0]', 60000, 60000));
  });
});

describe('file_id references', () => {
  it('uses a ready file of the caller; another client sees it as unknown; deleted files are refused', async () => {
    const up = await uploadInline(emu, pngBytes, { type: 'image/png', filename: 'p.png' });
    expect(up.status).toBe(201);
    const file = await settled(emu, up.body.id);
    expect(file.state).toBe('ready');

    const ok = await create({ type: 'image_edit', prompt: 'warm', source: { file_id: file.id } });
    expect(ok.status).toBe(201);
    expect((await terminal(emu, ok.body.id)).state).toBe('completed');

    const theirs = await create({ type: 'image_edit', prompt: 'warm', source: { file_id: file.id } }, KEY_B);
    const unknown = await create(
      { type: 'image_edit', prompt: 'warm', source: { file_id: UNKNOWN_ID } },
      KEY_B,
    );
    expect(theirs.status).toBe(422);
    expect(theirs.body).toEqual({ detail: `source: file '${file.id}' not found` });
    expect(unknown.body).toEqual({ detail: `source: file '${UNKNOWN_ID}' not found` });

    const mp4 = await uploadInline(emu, await tinyMp4(1), { type: 'video/mp4', filename: 'v.mp4' });
    const video = await settled(emu, mp4.body.id);
    expect(video.state).toBe('ready');
    const wrongKind = await create(imageWithRef({ file_id: video.id }));
    expect(wrongKind.status).toBe(422);
    expect(wrongKind.body.detail).toBe(fileWrongKindDetail('image_ref[0]', video.id, 'video', 'image'));
    const reframe = await create({
      type: 'video_reframe',
      aspect_ratio: '1:1',
      source: { file_id: video.id },
    });
    expect(reframe.status).toBe(201);
    expect((await terminal(emu, reframe.body.id)).state).toBe('completed');

    // No 413 for file_id (no bytes travel with the request): an oversized image fails as image_too_large.
    const wideUp = await uploadInline(emu, await png(8001, 1), { type: 'image/png', filename: 'wide.png' });
    const wide = await settled(emu, wideUp.body.id);
    expect(wide.state).toBe('ready');
    const tooBig = await create(imageWithRef({ file_id: wide.id }));
    expect(tooBig.status).toBe(201);
    const failed = await terminal(emu, tooBig.body.id);
    expect(failed).toMatchObject({ state: 'failed', failure_code: 'image_too_large', output: [] });
    expect(failed.failure_reason).toBe(imageTooManyPixelsDetail('image_ref[0]', 8001, 1));

    expect((await call(emu, 'DELETE', `/v1/files/${file.id}`)).status).toBe(204);
    const gone = await create({ type: 'image_edit', prompt: 'warm', source: { file_id: file.id } });
    expect(gone.status).toBe(422);
    expect(gone.body.detail).toBe(fileNotReadyDetail('source', file.id, 'deleted'));
  });
});

describe('generation_id references', () => {
  it('chains off a completed generation of the caller, of the right kind', async () => {
    // Held queued until the test has tried to use it: not usable yet.
    const seed = await hold(emu, { state: 'queued', prompt: '^a seed image$' });
    const image = await create({ type: 'image', prompt: 'a seed image', aspect_ratio: '1:1' });
    const queued = await create({
      type: 'image_edit',
      prompt: 'x',
      source: { generation_id: image.body.id },
    });
    await unhold(emu, seed);
    expect(queued.status).toBe(422);
    expect(queued.body.detail).toMatch(
      new RegExp(`^source: generation '${image.body.id}' is not completed \\(state '(queued|processing)'\\)`),
    );
    expect((await terminal(emu, image.body.id)).state).toBe('completed');

    const edit = await create({ type: 'image_edit', prompt: 'x', source: { generation_id: image.body.id } });
    expect(edit.status).toBe(201);
    expect((await terminal(emu, edit.body.id)).state).toBe('completed');

    const theirs = await create(
      { type: 'image_edit', prompt: 'x', source: { generation_id: image.body.id } },
      KEY_B,
    );
    const unknown = await create(
      { type: 'image_edit', prompt: 'x', source: { generation_id: UNKNOWN_ID } },
      KEY_B,
    );
    expect(theirs.status).toBe(422);
    expect(theirs.body).toEqual({ detail: `source: generation '${image.body.id}' not found` });
    expect(unknown.body).toEqual({ detail: `source: generation '${UNKNOWN_ID}' not found` });

    const wrongKind = await create({
      type: 'video_edit',
      prompt: 'x',
      source: { generation_id: image.body.id },
    });
    expect(wrongKind.status).toBe(422);
    expect(wrongKind.body.detail).toBe(
      generationRefWrongKindDetail('source', image.body.id, 'image', 'video'),
    );
    const extendFromImage = await create({
      type: 'video',
      prompt: 'x',
      video: { resolution: '360p', start_frame: { generation_id: image.body.id } },
    });
    expect(extendFromImage.status).toBe(422);
    expect(extendFromImage.body.detail).toBe(
      generationRefWrongKindDetail('video.start_frame', image.body.id, 'image', 'video'),
    );
  });
});
