/**
 * The files resource against the emulator: inline and presigned uploads streamed from disk with their
 * sha256, the auto mode's threshold, the inline → presigned fallback on 413, the presigned flow with a
 * stream of the wrong size, listing every page with filters, delete, and flat memory while uploading.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type GenpipeClient,
  SizeMismatchError,
  type TransferInfo,
  type UploadResult,
} from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { clientFor, startTestEmulator, stats, writePng } from './client-helpers.ts';

let dir: string;
let emu: RunningEmulator;
let client: GenpipeClient;
let png: string;
let pngSha: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'genpipe-client-files-'));
  emu = await startTestEmulator({ inline_upload_max_bytes: 2000 });
  client = clientFor(emu);
  png = await writePng(join(dir, 'photo.png'), 400, 300);
  pngSha = createHash('sha256')
    .update(await readFile(png))
    .digest('hex');
});

afterAll(async () => {
  await client.close();
  await emu.close();
  await rm(dir, { recursive: true, force: true });
});

describe('upload', () => {
  it('inline: streams the file, hashes it, and waits until ready', async () => {
    const small = await writePng(join(dir, 'small.png'), 8, 8);
    const progress: number[] = [];
    const r = await client.files.upload(small, {
      mode: 'inline',
      purpose: 'reference',
      userId: 'user-7',
      expiresAt: new Date(Date.now() + 3_600_000),
      onProgress: (p) => progress.push(p.bytesSent),
      waitUntilReady: true,
    });
    const bytes = await readFile(small);
    expect(r.mode).toBe('inline');
    expect(r.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(r.bytes).toBe(bytes.length);
    expect(progress.at(-1)).toBe(bytes.length);
    expect(r.file).toMatchObject({
      state: 'ready',
      purpose: 'reference',
      filename: 'small.png',
      user_id: 'user-7',
      mime_type: 'image/png',
      size_bytes: bytes.length,
    });
    expect(r.file.expires_at).toBeTruthy();
  });

  it('presigned: PUT with the exact length and the upload headers, complete, ready', async () => {
    const r = await client.files.upload(png, {
      mode: 'presigned',
      filename: 'renamed.png',
      waitUntilReady: true,
    });
    expect(r.mode).toBe('presigned');
    expect(r.sha256).toBe(pngSha);
    expect(r.file).toMatchObject({ state: 'ready', filename: 'renamed.png', mime_type: 'image/png' });
    expect(r.file.size_bytes).toBe(r.bytes);
  });

  it('auto picks presigned above the client’s inline threshold, without a 413', async () => {
    const c = clientFor(emu, { inlineUploadMaxBytes: 1000 });
    const before = (await stats(emu)).responses['413'] ?? 0;
    const r = await c.files.upload(png);
    expect(r.mode).toBe('presigned');
    expect((await stats(emu)).responses['413'] ?? 0).toBe(before);
    await c.close();
  });

  it('auto falls back to presigned when the inline upload gets 413', async () => {
    // The client's threshold (20 MiB) is above the emulator's cap (2000 bytes): inline is tried first.
    const logs: string[] = [];
    const c = clientFor(emu, { hooks: { log: (m) => logs.push(m) } });
    const before = (await stats(emu)).responses['413'] ?? 0;
    const r = await c.files.upload(png, { waitUntilReady: true });
    expect(r.mode).toBe('presigned');
    expect(r.sha256).toBe(pngSha);
    expect(r.file.state).toBe('ready');
    expect((await stats(emu)).responses['413']).toBe(before + 1);
    expect(logs.some((l) => l.includes('413'))).toBe(true);
    await c.close();
  });

  it('tells onTransfer of each file uploaded once, with its bytes, also after the fallback to presigned', async () => {
    const heard: TransferInfo[] = [];
    const c = clientFor(emu, { hooks: { onTransfer: (t) => heard.push(t) } });
    const r = await c.files.upload(png, { waitUntilReady: true });
    expect(r.mode).toBe('presigned');
    expect(heard).toEqual([{ direction: 'upload', bytes: (await stat(png)).size }]);
    await c.close();
  });

  it('a stream of the announced size goes presigned', async () => {
    const bytes = await readFile(png);
    const r = await client.files.upload(createReadStream(png), { size: bytes.length, waitUntilReady: true });
    expect(r.mode).toBe('presigned');
    expect(r.sha256).toBe(pngSha);
    expect(r.file.mime_type).toBe('image/png'); // sniffed from the stream's head
  });

  it('a stream of unknown size goes inline, chunked', async () => {
    const small = await writePng(join(dir, 'chunked.png'), 10, 10);
    const bytes = await readFile(small);
    const r = await client.files.upload(createReadStream(small, { highWaterMark: 64 }), {
      filename: 'chunked.png',
      waitUntilReady: true,
    });
    expect(r.mode).toBe('inline');
    expect(r.bytes).toBe(bytes.length);
    expect(r.file).toMatchObject({ state: 'ready', size_bytes: bytes.length, filename: 'chunked.png' });
  });

  it('presigned with a wrong size: the upload is abandoned, never completed', async () => {
    const bytes = await readFile(png);
    const tooMany = client.files.upload(Readable.from([bytes]), {
      mode: 'presigned',
      size: bytes.length - 10,
    });
    await expect(tooMany).rejects.toBeInstanceOf(SizeMismatchError);
    const tooFew = client.files.upload(Readable.from([bytes]), {
      mode: 'presigned',
      size: bytes.length + 10,
    });
    const err = (await tooFew.catch((e) => e)) as SizeMismatchError;
    expect(err).toBeInstanceOf(SizeMismatchError);
    expect(err).toMatchObject({ expectedBytes: bytes.length + 10, actualBytes: bytes.length });
    // Both records stay pending with their announced sizes: no bytes were stored, nothing completed.
    const pending = [];
    for await (const f of client.files.list({ state: 'pending' })) pending.push(f.size_bytes);
    expect(pending.sort()).toEqual([bytes.length - 10, bytes.length + 10].sort());
  });
});

describe('get, list, delete', () => {
  it('lists every page with filters, and delete hides a file from the default list', async () => {
    const c = await startTestEmulator();
    const lc = clientFor(c);
    try {
      const made: UploadResult[] = [];
      for (let i = 0; i < 5; i++) {
        const p = await writePng(join(dir, `list-${i}.png`), 4 + i, 4);
        made.push(await lc.files.upload(p, { purpose: i % 2 === 0 ? 'input' : 'reference' }));
      }
      const all = [];
      for await (const f of lc.files.list({ limit: 2 })) all.push(f.id);
      expect(all).toEqual(made.map((m) => m.file.id).reverse()); // newest first, over 3 pages
      const refs = [];
      for await (const f of lc.files.list({ purpose: 'reference', limit: 1 })) refs.push(f.id);
      expect(refs).toEqual([made[3]?.file.id, made[1]?.file.id]);
      const victim = made[0]?.file.id as string;
      await lc.files.delete(victim);
      await lc.files.delete(victim); // idempotent
      expect((await lc.files.get(victim)).state).toBe('deleted');
      const left = [];
      for await (const f of lc.files.list()) left.push(f.id);
      expect(left).not.toContain(victim);
      const deleted = [];
      for await (const f of lc.files.list({ state: 'deleted' })) deleted.push(f.id);
      expect(deleted).toEqual([victim]);
    } finally {
      await lc.close();
      await c.close();
    }
  });
});

describe('streaming, not buffering', () => {
  /**
   * A stand-in for the service whose upload sinks read slowly: it answers POST /v1/files (both modes)
   * and the complete call, and counts the bytes it has read. The emulator shares this process, so its
   * own buffers would blur a memory reading; the gap between the bytes the client has produced and
   * the bytes the server has read shows directly whether the client holds the file.
   */
  async function slowService(): Promise<{ url: string; received: () => number; close: () => Promise<void> }> {
    let received = 0;
    const file = (id: string, size: number) => ({
      id,
      created_at: new Date().toISOString(),
      mime_type: 'image/png',
      purpose: 'input',
      size_bytes: size,
      state: 'pending',
      deleted_at: null,
      expires_at: null,
      failure_reason: null,
      filename: null,
      user_id: null,
    });
    const server = createServer((req, res) => {
      const json = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const drainSlowly = (done: () => void) => {
        req.on('data', (chunk: Buffer) => {
          received += chunk.length;
          req.pause();
          setTimeout(() => req.resume(), 1);
        });
        req.on('end', done);
      };
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      if (
        req.method === 'POST' &&
        req.url === '/v1/files' &&
        req.headers['content-type'] === 'application/json'
      ) {
        let text = '';
        req.on('data', (c) => {
          text += c;
        });
        req.on('end', () => {
          const size = JSON.parse(text).size_bytes as number;
          json(201, {
            id: 'f1',
            file: file('f1', size),
            state: 'pending',
            upload: {
              expires_at: new Date().toISOString(),
              method: 'PUT',
              url: `${base}/put/f1`,
              headers: {},
            },
          });
        });
      } else if (req.method === 'POST' && req.url === '/v1/files') {
        drainSlowly(() =>
          json(201, { id: 'f2', file: file('f2', received), state: 'pending', upload: null }),
        );
      } else if (req.method === 'PUT') {
        drainSlowly(() => res.writeHead(200).end());
      } else if (req.method === 'POST' && req.url === '/v1/files/f1/complete') {
        json(200, file('f1', received));
      } else json(404, { detail: 'Not found' });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      received: () => received,
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  }

  it('a 32 MiB file is never more than a few MiB ahead of the server, presigned and inline', async () => {
    const path = join(dir, 'big.bin');
    await writeFile(path, Buffer.from('not really media'));
    await truncate(path, 32 * 1024 * 1024);
    const sha = createHash('sha256')
      .update(await readFile(path))
      .digest('hex');
    for (const mode of ['presigned', 'inline'] as const) {
      const service = await slowService();
      const c = clientFor(service, { inlineUploadMaxBytes: 64 * 1024 * 1024 });
      let ahead = 0;
      try {
        const r = await c.files.upload(path, {
          mode,
          mimeType: 'image/png',
          onProgress: (p) => {
            ahead = Math.max(ahead, p.bytesSent - service.received());
          },
        });
        expect(r.bytes).toBe(32 * 1024 * 1024);
        expect(r.sha256).toBe(sha); // hashed on a worker thread at this size
        expect(service.received()).toBeGreaterThanOrEqual(32 * 1024 * 1024);
      } finally {
        await c.close();
        await service.close();
      }
      // A buffered file would run the whole 32 MiB ahead; socket buffers allow a few MiB.
      expect(ahead, mode).toBeLessThan(12 * 1024 * 1024);
    }
  });
});
