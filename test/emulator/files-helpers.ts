/**
 * Small helpers shared by the files and storage tests: tiny real media, multipart uploads through
 * undici's FormData, presigned uploads, and a raw HTTP request that can be cut off mid-body.
 */
import { request as httpRequest } from 'node:http';
import sharp from 'sharp';
import { FormData, fetch } from 'undici';
import { type CallResult, call, KEY, until } from '../helpers/emulator.ts';

type Emu = { url: string };

/** A tiny solid-colour PNG. */
export function tinyPng(width = 4, height = 3): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 60 } } })
    .png()
    .toBuffer();
}

/** A tiny JPEG. */
export function tinyJpeg(width = 4, height = 3): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: 10, g: 90, b: 160 } } })
    .jpeg()
    .toBuffer();
}

/** A PNG of noise, large enough that cutting it short leaves a valid header but undecodable data. */
export async function truncatedPng(): Promise<Buffer> {
  const w = 64;
  const h = 64;
  const raw = Buffer.alloc(w * h * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * 7919) % 251;
  const full = await sharp(raw, { raw: { width: w, height: h, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
  return full.subarray(0, Math.floor(full.length / 2));
}

export interface InlineOptions {
  key?: string;
  filename?: string;
  /** Content-Type of the file part. */
  type?: string;
  fields?: Record<string, string>;
  /** Name of the file part (default `file`). */
  partName?: string;
}

/** POST /v1/files as multipart/form-data. */
export async function uploadInline(
  emu: Emu,
  bytes: Buffer | string,
  opts: InlineOptions = {},
): Promise<CallResult> {
  const form = new FormData();
  for (const [k, v] of Object.entries(opts.fields ?? {})) form.append(k, v);
  const part = typeof bytes === 'string' ? bytes : new Uint8Array(bytes);
  const blob = new Blob([part], { type: opts.type ?? 'application/octet-stream' });
  form.append(opts.partName ?? 'file', blob, opts.filename ?? 'upload.bin');
  const res = await fetch(`${emu.url}/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${opts.key ?? KEY}` },
    body: form,
  });
  const text = await res.text();
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    headers[k] = v;
  });
  return { status: res.status, headers, body: text ? JSON.parse(text) : null };
}

/** Polls GET /v1/files/:id until the file leaves `pending`; returns the File. */
export async function settled(emu: Emu, id: string, key = KEY) {
  return until(async () => {
    const r = await call(emu, 'GET', `/v1/files/${id}`, { key });
    return r.body.state !== 'pending' ? r.body : null;
  });
}

/** PUT bytes to a presigned upload URL (no Authorization header). */
export async function putUpload(
  url: string,
  bytes: Buffer,
  headers: Record<string, string>,
): Promise<CallResult> {
  const res = await fetch(url, { method: 'PUT', headers, body: bytes });
  const text = await res.text();
  const h: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    h[k] = v;
  });
  return { status: res.status, headers: h, body: text ? JSON.parse(text) : null };
}

/**
 * Sends a request that declares `declaredLength` bytes, writes `sent` of them, waits for `beforeCut`
 * (e.g. until the server has started writing the body to disk), then destroys the socket.
 * Resolves once the socket is closed.
 */
export function abortMidBody(
  url: string,
  method: string,
  headers: Record<string, string>,
  declaredLength: number,
  sent: Buffer,
  beforeCut: () => Promise<unknown>,
): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest(url, {
      method,
      headers: { ...headers, 'content-length': String(declaredLength) },
    });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    req.write(sent, () => {
      beforeCut().finally(() => req.destroy());
    });
  });
}

/** A multipart body built by hand, for requests sent through abortMidBody. */
export function multipartHead(boundary: string, filename: string, type: string): Buffer {
  return Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
      `Content-Type: ${type}\r\n\r\n`,
  );
}
