/** The emulator's admin endpoints: generations of both surfaces, stats, and switching faults at runtime. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { isLoopback } from '../../src/emulator/routes/admin.ts';
import { call, KEY_B, startTestEmulator, until } from '../helpers/emulator.ts';

const IMAGE = { type: 'image', prompt: 'a blue circle', aspect_ratio: '1:1' };

let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startTestEmulator({ blocked_words: ['forbidden'] });
});
afterAll(async () => {
  await emu.close();
});

describe('GET /_emulator/generations', () => {
  it('lists every generation with client, surface, request id and failure code, oldest first', async () => {
    const a = await call(emu, 'POST', '/v1/generations', {
      json: { ...IMAGE, prompt: 'something forbidden' },
      headers: { 'x-request-id': 'admin-req-1' },
    });
    const b = await call(emu, 'POST', '/v1/generations', { json: IMAGE, key: KEY_B });
    expect([a.status, b.status]).toEqual([201, 201]);
    await until(async () => (await call(emu, 'GET', `/v1/generations/${a.body.id}`)).body.state === 'failed');

    const res = await call(emu, 'GET', '/_emulator/generations', { key: null });
    expect(res.status).toBe(200);
    // Not an agents response: no auth, no version header.
    expect(res.headers['x-api-version']).toBeUndefined();
    const rows = res.body.data as Array<Record<string, unknown>>;
    const ia = rows.findIndex((r) => r.id === a.body.id);
    const ib = rows.findIndex((r) => r.id === b.body.id);
    expect(ia).toBeGreaterThanOrEqual(0);
    expect(ib).toBeGreaterThan(ia);
    expect(rows[ia]).toEqual({
      id: a.body.id,
      client_id: 'a',
      surface: 'agents',
      type: 'image',
      model: 'uni-1',
      state: 'failed',
      created_at: a.body.created_at,
      request_id: 'admin-req-1',
      failure_code: 'content_moderated',
    });
    expect(rows[ib]).toMatchObject({ client_id: 'b', request_id: b.headers['x-request-id'] });
  });
});

describe('GET /_emulator/stats', () => {
  it('counts responses by status, 429s by kind, resets and generations by state', async () => {
    const before = (await call(emu, 'GET', '/_emulator/stats', { key: null })).body;
    await call(emu, 'POST', '/v1/generations', { json: { ...IMAGE, model: 'nope' } });
    await call(emu, 'GET', '/v1/generations/00000000-0000-4000-8000-000000000000');
    const after = (await call(emu, 'GET', '/_emulator/stats', { key: null })).body;
    expect(after.responses['400']).toBe((before.responses['400'] ?? 0) + 1);
    expect(after.responses['404']).toBe((before.responses['404'] ?? 0) + 1);
    expect(after.rate_limited).toEqual({ rpm: 0, concurrency: 0, abuse: 0 });
    expect(after.resets).toBe(0);
    const gens = (await call(emu, 'GET', '/_emulator/generations', { key: null })).body.data as Array<{
      surface: string;
      state: string;
    }>;
    const agents = gens.filter((g) => g.surface === 'agents');
    const total = Object.values(after.generations.agents as Record<string, number>).reduce(
      (x, y) => x + y,
      0,
    );
    expect(total).toBe(agents.length);
    expect(after.generations.agents.failed).toBe(agents.filter((g) => g.state === 'failed').length);
    expect(Object.keys(after.generations.legacy).sort()).toEqual([
      'completed',
      'dreaming',
      'failed',
      'queued',
    ]);
  });
});

describe('PUT /_emulator/faults', () => {
  it('replaces the faults of the running emulator, and rejects bad ones naming the key', async () => {
    const on = await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { http_503: 1 } });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ http_503: 1, http_502: 0, failure_codes: {} });
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(503);
    expect((await call(emu, 'GET', '/_emulator/faults', { key: null })).body.http_503).toBe(1);

    const bad = await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { http_503: 2 } });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toBe('Expected a number between 0 and 1 for faults.http_503 but received 2');
    const unknown = await call(emu, 'PUT', '/_emulator/faults', { key: null, json: { explode: 1 } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toBe("Unknown fault 'explode'");
    // A rejected PUT leaves the faults as they were.
    expect((await call(emu, 'GET', '/_emulator/faults', { key: null })).body.http_503).toBe(1);

    const off = await call(emu, 'PUT', '/_emulator/faults', { key: null, json: {} });
    expect(off.body.http_503).toBe(0);
    expect((await call(emu, 'POST', '/v1/generations', { json: IMAGE })).status).toBe(201);
  });
});

describe('loopback only', () => {
  it('recognises loopback peers', () => {
    expect(isLoopback('127.0.0.1')).toBe(true);
    expect(isLoopback('127.8.9.10')).toBe(true);
    expect(isLoopback('::1')).toBe(true);
    expect(isLoopback('::ffff:127.0.0.1')).toBe(true);
    expect(isLoopback('10.0.0.7')).toBe(false);
    expect(isLoopback('::ffff:192.168.1.2')).toBe(false);
    expect(isLoopback('fe80::1')).toBe(false);
    expect(isLoopback(undefined)).toBe(false);
  });
});
