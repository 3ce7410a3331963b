/**
 * Legacy callbacks over real HTTP: a tiny receiver on loopback records what the emulator POSTs when a
 * modify generation becomes dreaming, completed or failed — order, headers, signature, retries, and
 * that a hanging receiver never holds up the generation.
 */
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { ffmpegPath } from '../../src/media/index.ts';
import { LEGACY_CHOICES, LEGACY_FAILURE_REASONS } from '../../src/spec/index.ts';
import { call, KEY, startTestEmulator, until } from '../helpers/emulator.ts';

const MODIFY = '/dream-machine/v1/generations/video/modify';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  raw: string;
  // biome-ignore lint/suspicious/noExplicitAny: the Generation JSON is read loosely
  body: any;
}

let dir: string;
let sourceUrl: string;
let hookBase: string;
let servers: Server[] = [];
let emu: RunningEmulator;
const received: Received[] = [];
/** Paths whose first request is answered 500. */
const failedOnce = new Set<string>();
/** Deliveries to /hang… that are still open (the receiver never answers them), and every attempt. */
let hanging = 0;
const hangAttempts: string[] = [];

function listen(server: Server): Promise<number> {
  servers.push(server);
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

function receivedAt(path: string): Received[] {
  return received.filter((r) => r.path === path);
}

async function create(
  callbackPath: string,
  mediaUrl = sourceUrl,
): Promise<{ id: string; requestId: string }> {
  const r = await call(emu, 'POST', MODIFY, {
    json: {
      generation_type: 'modify_video',
      media: { url: mediaUrl },
      model: 'ray-2',
      mode: 'adhere_1',
      callback_url: `${hookBase}${callbackPath}`,
    },
  });
  expect(r.status).toBe(201);
  return { id: r.body.id, requestId: r.headers['x-request-id']! };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-legacy-cb-'));
  const sourcePath = join(dir, 'source.mp4');
  await promisify(execFile)(ffmpegPath(), [
    ...['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc=duration=1:size=640x360:rate=24'],
    ...['-pix_fmt', 'yuv420p', '-c:v', 'libx264', '-preset', 'ultrafast', sourcePath],
  ]);
  const source = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'video/mp4', 'content-length': statSync(sourcePath).size });
    createReadStream(sourcePath).pipe(res);
  });
  sourceUrl = `http://127.0.0.1:${await listen(source)}/source.mp4`;

  const hooks = createServer((req, res) => {
    const path = req.url ?? '';
    if (path.startsWith('/hang')) {
      // Never answers; counts the deliveries still waiting for an answer.
      hanging++;
      hangAttempts.push(`${path} ${req.headers['x-callback-attempt']}`);
      res.on('close', () => hanging--);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      received.push({ path, headers: req.headers, raw, body: JSON.parse(raw) });
      const fail = path.startsWith('/always-500') || (path.startsWith('/flaky') && !failedOnce.has(path));
      if (path.startsWith('/flaky')) failedOnce.add(path);
      res.writeHead(fail ? 500 : 204).end();
    });
  });
  hookBase = `http://127.0.0.1:${await listen(hooks)}`;
  // A delivery waits a minute for an answer: longer than any generation here takes.
  emu = await startTestEmulator({ callback_attempts: 2, callback_timeout_ms: 60_000 });
});

afterAll(async () => {
  await emu?.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
  servers = [];
  rmSync(dir, { recursive: true, force: true });
});

describe('legacy callbacks', () => {
  it('POSTs dreaming then completed, signed with the API key', async () => {
    const { id, requestId } = await create('/ok');
    const got = await until(async () => (receivedAt('/ok').length >= 2 ? receivedAt('/ok') : null));
    expect(got.map((r) => r.body.state)).toEqual(['dreaming', 'completed']);
    for (const r of got) {
      expect(r.body.id).toBe(id);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['user-agent']).toBe(LEGACY_CHOICES.callback.userAgent);
      expect(r.headers['x-callback-attempt']).toBe('1');
      expect(r.headers['x-request-id']).toBe(requestId);
      const sig = String(r.headers['x-callback-signature']);
      const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig);
      expect(m).not.toBeNull();
      const expected = createHmac('sha256', KEY).update(`${m![1]}.${r.raw}`).digest('hex');
      expect(m![2]).toBe(expected);
    }
    expect(got[0]!.body.assets).toBeNull();
    expect(got[1]!.body.assets.video).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(got[1]!.body.request.callback_url).toBe(`${hookBase}/ok`);
    // The final GET agrees with the last callback.
    const g = await call(emu, 'GET', `/dream-machine/v1/generations/${id}`);
    expect(g.body.state).toBe('completed');
  });

  it('retries a delivery the receiver failed, keeping the order', async () => {
    await create('/flaky');
    const got = await until(async () => (receivedAt('/flaky').length >= 3 ? receivedAt('/flaky') : null));
    expect(got.map((r) => [r.body.state, r.headers['x-callback-attempt']])).toEqual([
      ['dreaming', '1'],
      ['dreaming', '2'],
      ['completed', '1'],
    ]);
    // The retry carries the same payload.
    expect(got[1]!.raw).toBe(got[0]!.raw);
  });

  it('gives up after callback_attempts and still delivers the next state', async () => {
    const { id } = await create('/always-500');
    const got = await until(async () =>
      receivedAt('/always-500').length >= 4 ? receivedAt('/always-500') : null,
    );
    expect(got.map((r) => [r.body.state, r.headers['x-callback-attempt']])).toEqual([
      ['dreaming', '1'],
      ['dreaming', '2'],
      ['completed', '1'],
      ['completed', '2'],
    ]);
    const g = await call(emu, 'GET', `/dream-machine/v1/generations/${id}`);
    expect(g.body.state).toBe('completed');
  });

  it('POSTs dreaming then failed when the source cannot be fetched', async () => {
    await create('/fail', sourceUrl.replace(/:\d+\//, ':1/'));
    const got = await until(async () => (receivedAt('/fail').length >= 2 ? receivedAt('/fail') : null));
    expect(got.map((r) => r.body.state)).toEqual(['dreaming', 'failed']);
    expect(got[1]!.body.failure_reason).toBe(LEGACY_FAILURE_REASONS.fetchFailed('media.url'));
  });

  it('does not let a hanging receiver hold up the generation', async () => {
    const { id } = await create('/hang');
    // The lifecycle never waits for a delivery: the generation completes while its dreaming callback
    // is still waiting for an answer (the emulator would wait a minute for it).
    const done = await until(async () => {
      const g = await call(emu, 'GET', `/dream-machine/v1/generations/${id}`);
      return g.body.state === 'completed' ? g : null;
    });
    expect(hanging).toBe(1);
    expect(done.body.assets.video).toBeTypeOf('string');
  });

  it('gives up on a delivery after callback_timeout_ms and tries again', async () => {
    const quick = await startTestEmulator({ callback_attempts: 2, callback_timeout_ms: 200 });
    try {
      const r = await call(quick, 'POST', MODIFY, {
        json: {
          generation_type: 'modify_video',
          media: { url: sourceUrl },
          model: 'ray-2',
          mode: 'adhere_1',
          callback_url: `${hookBase}/hang-quick`,
        },
      });
      expect(r.status).toBe(201);
      await until(async () => hangAttempts.filter((a) => a.startsWith('/hang-quick ')).length >= 2);
      expect(hangAttempts.filter((a) => a.startsWith('/hang-quick ')).slice(0, 2)).toEqual([
        '/hang-quick 1',
        '/hang-quick 2',
      ]);
    } finally {
      await quick.close();
    }
  });
});
