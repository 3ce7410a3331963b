/**
 * A loopback HTTP server of test media for the legacy SDK tests: a 1 s 640x360 video and a 320x240
 * PNG, made once with ffmpeg, and helpers to download and probe what the emulator answers.
 */
import { execFile } from 'node:child_process';
import { createReadStream, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { request as undiciRequest } from 'undici';
import { ffmpegPath, probeVideo, type VideoProbe } from '../../src/media/index.ts';

export interface MediaSource {
  dir: string;
  videoUrl: string;
  imageUrl: string;
  close(): Promise<void>;
}

export async function startMediaSource(): Promise<MediaSource> {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-sdk-test-'));
  const video = join(dir, 'source.mp4');
  const image = join(dir, 'source.png');
  await promisify(execFile)(ffmpegPath(), [
    ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=1:size=640x360:rate=24'],
    ...['-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', video],
  ]);
  await sharp({ create: { width: 320, height: 240, channels: 3, background: '#3366cc' } })
    .png()
    .toFile(image);
  const server: Server = createServer((req, res) => {
    const file = req.url === '/source.mp4' ? video : req.url === '/source.png' ? image : null;
    if (!file) return void res.writeHead(404).end();
    const type = file === video ? 'video/mp4' : 'image/png';
    res.writeHead(200, { 'content-type': type, 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
  return {
    dir,
    videoUrl: `http://127.0.0.1:${port}/source.mp4`,
    imageUrl: `http://127.0.0.1:${port}/source.png`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

/** Downloads `url` into `dir`; returns the path and its Content-Type. */
export async function download(
  url: string,
  dir: string,
  name: string,
): Promise<{ path: string; type: string }> {
  const res = await undiciRequest(url);
  if (res.statusCode !== 200) throw new Error(`GET ${url} answered ${res.statusCode}`);
  const path = join(dir, name);
  writeFileSync(path, Buffer.from(await res.body.arrayBuffer()));
  return { path, type: String(res.headers['content-type']) };
}

export async function probeDownload(
  url: string,
  dir: string,
  name: string,
): Promise<VideoProbe & { type: string }> {
  const { path, type } = await download(url, dir, name);
  return { ...(await probeVideo(path)), type };
}
