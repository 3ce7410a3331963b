/**
 * The output storage route over real HTTP: a generation record with an output blob is put into the
 * store directly, and its signed URL (from outputUrl) is downloaded whole, in ranges, resumed, tampered
 * with and let expire.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outputUrl } from '../../src/emulator/files/blobs.ts';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import type { GenerationRec } from '../../src/emulator/store.ts';
import { DETAILS, FILE_DETAILS } from '../../src/spec/index.ts';
import { testConfig } from '../helpers/emulator.ts';

const TTL_S = 120;
const clock = new ManualClock();
let emu: RunningEmulator;
let genId: string;
const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 31) % 256));

function addGeneration(outputs: GenerationRec['outputs']): string {
  const id = randomUUID();
  const store = emu.app.emu.store;
  store.generations.set(id, {
    id,
    clientId: 'a',
    surface: 'agents',
    seq: store.nextSeq(),
    type: 'video',
    model: 'ray-3.2',
    state: 'completed',
    createdAt: clock.now(),
    request: {},
    requestId: 'test',
    cost: 0,
    failure_reason: null,
    failure_code: null,
    outputs,
    finishedAt: clock.now(),
  });
  return id;
}

async function get(url: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') {
  const res = await request(url, { method, headers });
  const body = Buffer.from(await res.body.arrayBuffer());
  const h: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) h[k] = String(v);
  return { status: res.statusCode, headers: h, body };
}

beforeAll(async () => {
  emu = await startEmulator({ config: testConfig({ output_url_ttl_s: TTL_S }), clock });
  const dir = join(emu.app.emu.dataDir, 'test-outputs');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'out.mp4');
  writeFileSync(path, bytes);
  genId = addGeneration([{ type: 'video', mime: 'video/mp4', blobPath: path, layer: null }]);
});
afterAll(async () => {
  await emu.close();
});

describe('GET /_storage/outputs/:generationId/:index', () => {
  it('streams the whole object with its type and length', async () => {
    const url = outputUrl(emu.app.emu, emu.url, genId, 0);
    expect(new URL(url).pathname).toBe(`/_storage/outputs/${genId}/0`);
    const r = await get(url);
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('video/mp4');
    expect(r.headers['content-length']).toBe(String(bytes.length));
    expect(r.headers['accept-ranges']).toBe('bytes');
    expect(r.body.equals(bytes)).toBe(true);
  });

  it('answers HEAD with the length and no body', async () => {
    const r = await get(outputUrl(emu.app.emu, emu.url, genId, 0), {}, 'HEAD');
    expect(r.status).toBe(200);
    expect(r.headers['content-length']).toBe(String(bytes.length));
    expect(r.body.length).toBe(0);
  });

  it.each([
    ['bytes=10-19', 10, 19],
    ['bytes=990-', 990, 999],
    ['bytes=-5', 995, 999],
    ['bytes=900-5000', 900, 999],
    ['bytes=0-0', 0, 0],
  ])('serves %s as 206 with Content-Range', async (range, start, end) => {
    const r = await get(outputUrl(emu.app.emu, emu.url, genId, 0), { range });
    expect(r.status).toBe(206);
    expect(r.headers['content-range']).toBe(`bytes ${start}-${end}/${bytes.length}`);
    expect(r.headers['content-length']).toBe(String(end - start + 1));
    expect(r.body.equals(bytes.subarray(start, end + 1))).toBe(true);
  });

  it('ignores several ranges or a bad header and sends everything', async () => {
    for (const range of ['bytes=0-1,5-6', 'items=0-3', 'bytes=9-2']) {
      const r = await get(outputUrl(emu.app.emu, emu.url, genId, 0), { range });
      expect(r.status).toBe(200);
      expect(r.body.length).toBe(bytes.length);
    }
  });

  it('answers 416 to a range past the end', async () => {
    const r = await get(outputUrl(emu.app.emu, emu.url, genId, 0), { range: `bytes=${bytes.length}-` });
    expect(r.status).toBe(416);
    expect(r.headers['content-range']).toBe(`bytes */${bytes.length}`);
    expect(JSON.parse(r.body.toString())).toEqual({ detail: FILE_DETAILS.rangeNotSatisfiable });
  });

  it('resumes an interrupted download from where it stopped', async () => {
    const url = outputUrl(emu.app.emu, emu.url, genId, 0);
    const head = await get(url, { range: 'bytes=0-399' });
    const rest = await get(url, { range: `bytes=${head.body.length}-` });
    expect(Buffer.concat([head.body, rest.body]).equals(bytes)).toBe(true);
  });

  it('answers 403 to a tampered URL', async () => {
    const url = new URL(outputUrl(emu.app.emu, emu.url, genId, 0));
    const sig = url.searchParams.get('sig') as string;
    const badSig = new URL(url);
    badSig.searchParams.set('sig', `${sig.slice(0, -1)}${sig.endsWith('0') ? '1' : '0'}`);
    const otherIndex = new URL(url);
    otherIndex.pathname = `/_storage/outputs/${genId}/1`;
    const longer = new URL(url);
    longer.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    const noSig = new URL(url);
    noSig.searchParams.delete('sig');
    for (const u of [badSig, otherIndex, longer, noSig]) {
      const r = await get(u.toString());
      expect(r.status).toBe(403);
      expect(JSON.parse(r.body.toString())).toEqual({ detail: DETAILS.outputSignatureInvalid });
    }
  });

  it('answers 403 once the URL expired; a fresh URL works again', async () => {
    const url = outputUrl(emu.app.emu, emu.url, genId, 0);
    clock.advance((TTL_S + 1) * 1000);
    const r = await get(url);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body.toString())).toEqual({ detail: DETAILS.outputUrlExpired });
    expect((await get(outputUrl(emu.app.emu, emu.url, genId, 0))).status).toBe(200);
  });

  it('answers 404 to a validly signed URL of an unknown generation, index or missing blob', async () => {
    const missing = addGeneration([
      { type: 'image', mime: 'image/png', blobPath: join(emu.app.emu.dataDir, 'nope.png'), layer: null },
    ]);
    for (const url of [
      outputUrl(emu.app.emu, emu.url, randomUUID(), 0),
      outputUrl(emu.app.emu, emu.url, genId, 1),
      outputUrl(emu.app.emu, emu.url, missing, 0),
    ]) {
      const r = await get(url);
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body.toString())).toEqual({ detail: FILE_DETAILS.outputNotFound });
    }
  });
});
