/** Bad input never hurts the emulator: every malformed request gets a clear `{detail}` and it keeps serving. */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { DETAILS } from '../../src/spec/index.ts';
import { call, KEY, startTestEmulator } from '../helpers/emulator.ts';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator({ json_body_max_bytes: 64 * 1024 });
});
afterAll(async () => {
  await emu.close();
});

async function stillServes(): Promise<void> {
  const r = await call(emu, 'POST', '/v1/generations', { json: { type: 'image', prompt: 'still alive' } });
  expect(r.status).toBe(201);
}

/** Sends raw bytes on a socket and resolves with whatever the server answered before closing. */
function raw(text: string, endAfter = true): Promise<string> {
  const { port } = new URL(emu.url);
  return new Promise((resolve) => {
    const sock = connect(Number(port), '127.0.0.1');
    let got = '';
    sock.on('data', (d) => {
      got += String(d);
    });
    sock.on('close', () => resolve(got));
    sock.on('error', () => resolve(got));
    sock.write(text, () => {
      if (endAfter) setTimeout(() => sock.end(), 50);
      else setTimeout(() => sock.destroy(), 50);
    });
  });
}

describe('bad input', () => {
  it('answers 413 with a detail for a JSON body over json_body_max_bytes', async () => {
    const r = await call(emu, 'POST', '/v1/generations', {
      json: { type: 'image', prompt: 'x'.repeat(100 * 1024) },
    });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ detail: 'Request body too large' });
    expect(r.headers['x-request-id']).toBeTruthy();
    expect(r.headers['x-api-version']).toBe('2026-04-01');
    await stillServes();
  });

  it('answers 400 for wrong JSON types and for a JSON array body', async () => {
    const wrong = await call(emu, 'POST', '/v1/generations', { json: { type: 'image', prompt: 42 } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toContain('prompt');
    const arr = await call(emu, 'POST', '/v1/generations', { json: [1, 2, 3] });
    expect(arr.status).toBe(400);
    expect(typeof arr.body.detail).toBe('string');
    await stillServes();
  });

  it('answers a clear 4xx for an unsupported content type on create', async () => {
    const r = await call(emu, 'POST', '/v1/generations', {
      body: 'type=image',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(typeof r.body.detail).toBe('string');
    await stillServes();
  });

  it('survives a JSON body cut off mid-way (client disconnects)', async () => {
    const body = JSON.stringify({ type: 'image', prompt: 'x'.repeat(5000) });
    await raw(
      `POST /v1/generations HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 100)}`,
      false,
    );
    await stillServes();
  });

  it('answers 400 to a request that is not HTTP, and keeps serving', async () => {
    const answer = await raw('this is not http\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    await stillServes();
  });

  it('answers 404 with a detail and the universal headers for an unknown /v1 route', async () => {
    const r = await call(emu, 'GET', '/v1/nothing-here');
    expect(r.status).toBe(404);
    expect(typeof r.body.detail).toBe('string');
    expect(r.headers['x-api-version']).toBe('2026-04-01');
  });

  it('never answers 5xx to any of the above', async () => {
    const stats = await call(emu, 'GET', '/_emulator/stats', { key: null });
    const codes = Object.keys(stats.body.responses ?? {});
    expect(codes.length).toBeGreaterThan(0);
    expect(codes.filter((c) => c.startsWith('5'))).toEqual([]);
  });
});

describe('a body-less request that says application/json (as the lumaai SDK sends every non-GET)', () => {
  const json = { 'content-type': 'application/json' };
  const id = '3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e';

  it.each([
    ['DELETE', `/v1/generations/${id}`, DETAILS.routeNotFound],
    ['DELETE', `/v1/files/${id}`, DETAILS.fileNotFound],
    ['POST', `/v1/files/${id}/complete`, DETAILS.fileNotFound],
    ['DELETE', '/v1/nothing-here', DETAILS.routeNotFound],
    ['DELETE', `/dream-machine/v1/generations/${id}`, DETAILS.generationNotFound],
    ['GET', `/dream-machine/v1/generations/${id}`, DETAILS.generationNotFound],
  ])('%s %s gets the route’s own answer, not an invalid-JSON 400', async (method, path, detail) => {
    const r = await call(emu, method, path, { headers: json, body: '' });
    expect(r.body).toEqual({ detail });
    expect(r.status).toBe(404);
  });

  it('a create with no body is refused for what it lacks, not as invalid JSON', async () => {
    const r = await call(emu, 'POST', '/v1/generations', { headers: json, body: '' });
    expect(r.status).toBe(400);
    expect(r.body.detail).not.toBe(DETAILS.invalidJson);
  });
});
