/**
 * Helpers shared by the generations tests: tiny real media, waiting for a terminal state, downloading
 * outputs, and a small HTTP server on 127.0.0.1 that serves media for url references.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { request } from 'undici';
import { runFfmpeg } from '../../src/media/index.ts';
import { call, KEY, until } from '../helpers/emulator.ts';

type Emu = { url: string };

/** A tiny solid-colour PNG. */
export function png(width = 16, height = 12, color = { r: 200, g: 40, b: 90 }): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: color } })
    .png()
    .toBuffer();
}

/** A short 64x36 H.264 MP4 (test pattern) at `fps` frames per second, as bytes. */
export async function tinyMp4(seconds = 1, fps = 24): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-test-'));
  try {
    const out = join(dir, 'clip.mp4');
    await runFfmpeg([
      '-f',
      'lavfi',
      '-i',
      `testsrc2=size=64x36:rate=${fps}:duration=${seconds}`,
      '-pix_fmt',
      'yuv420p',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      out,
    ]);
    return await readFile(out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Polls a generation until it is completed or failed; returns the Generation. */
export function terminal(emu: Emu, id: string, key = KEY, timeoutMs = 30_000) {
  return until(async () => {
    const g = await call(emu, 'GET', `/v1/generations/${id}`, { key });
    return g.body?.state === 'completed' || g.body?.state === 'failed' ? g.body : undefined;
  }, timeoutMs);
}

/** GETs a URL (no auth) and returns status, content type and bytes. */
export async function download(url: string): Promise<{ status: number; type: string; bytes: Buffer }> {
  const res = await request(url);
  const bytes = Buffer.from(await res.body.arrayBuffer());
  return { status: res.statusCode, type: String(res.headers['content-type'] ?? ''), bytes };
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A media server on 127.0.0.1 whose routes a test sets; `url(path)` builds its URLs. */
export async function mediaServer(routes: Record<string, Handler>) {
  const server: Server = createServer((req, res) => {
    res.on('error', () => undefined);
    const handler = routes[req.url ?? ''];
    if (handler) handler(req, res);
    else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no such thing');
    }
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
