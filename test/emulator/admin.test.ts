/**
 * The emulator's admin endpoints: generations of both surfaces, stats, switching faults at runtime, and
 * holds that keep generations queued or processing until the caller lets them go.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { isLoopback } from '../../src/emulator/routes/admin.ts';
import {
  adminRows,
  call,
  type HoldRule,
  heldGenerations,
  KEY,
  KEY_B,
  startTestEmulator,
  unhold,
  until,
} from '../helpers/emulator.ts';
import { settled, tinyPng, uploadInline } from './files-helpers.ts';

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
    let reads = 0;
    await until(async () => {
      reads++;
      return (await call(emu, 'GET', `/v1/generations/${a.body.id}`)).body.state === 'failed';
    });

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
      legacy_type: null,
      model: 'uni-1',
      state: 'failed',
      created_at: a.body.created_at,
      request_id: 'admin-req-1',
      failure_code: 'content_moderated',
      held: null,
      started_at: expect.stringMatching(/^\d{4}-.*Z$/),
      finished_at: expect.stringMatching(/^\d{4}-.*Z$/),
      reads,
    });
    const times = ['created_at', 'started_at', 'finished_at'].map((k) => Date.parse(rows[ia]![k] as string));
    expect([...times].sort((x, y) => x - y)).toEqual(times);
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

describe('GET /_emulator/costs and the files of /_emulator/stats', () => {
  it('answers the configured cost of each generation type', async () => {
    const r = await call(emu, 'GET', '/_emulator/costs', { key: null });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ image: 1, image_edit: 1, video: 10, video_edit: 10, video_reframe: 10 });
    const priced = await startTestEmulator({ costs: { video: 25 } });
    try {
      expect((await call(priced, 'GET', '/_emulator/costs', { key: null })).body).toMatchObject({
        image: 1,
        video: 25,
      });
    } finally {
      await priced.close();
    }
  });

  it('counts the files of every client by state', async () => {
    const before = (await call(emu, 'GET', '/_emulator/stats', { key: null })).body.files;
    expect(Object.keys(before).sort()).toEqual(['deleted', 'failed', 'pending', 'ready']);
    const up = await uploadInline(emu, await tinyPng(), {
      type: 'image/png',
      filename: 'a.png',
      fields: { purpose: 'input' },
    });
    expect(up.status).toBe(201);
    await settled(emu, up.body.id);
    const after = (await call(emu, 'GET', '/_emulator/stats', { key: null })).body.files;
    expect(after.ready).toBe(before.ready + 1);
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

describe('holds', () => {
  const create = async (prompt: string, key = KEY) => {
    const r = await call(emu, 'POST', '/v1/generations', { json: { ...IMAGE, prompt }, key });
    expect(r.status).toBe(201);
    return r.body.id as string;
  };
  const stateOf = async (id: string, key = KEY) =>
    (await call(emu, 'GET', `/v1/generations/${id}`, { key })).body.state as string;
  const terminal = (id: string, key = KEY) =>
    until(async () => {
      const s = await stateOf(id, key);
      return s === 'completed' || s === 'failed' ? s : null;
    });
  const addHold = (rule: HoldRule) => call(emu, 'POST', '/_emulator/holds', { key: null, json: rule });

  it('keeps generations whose prompt matches processing until the hold is removed', async () => {
    const added = await addHold({ prompt: 'held (pear|plum)$' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({
      state: 'processing',
      client: null,
      type: null,
      prompt: 'held (pear|plum)$',
      request_id: null,
      held: [],
    });
    const pear = await create('a held pear');
    const free = await create('a held pear, sliced');
    expect(await terminal(free)).toBe('completed');
    const [row] = await heldGenerations(emu, 1);
    expect(row).toMatchObject({ id: pear, state: 'processing', held: 'processing' });
    expect(await stateOf(pear)).toBe('processing');
    const listed = await call(emu, 'GET', '/_emulator/holds', { key: null });
    expect(listed.body.data).toEqual([{ ...added.body, held: [pear] }]);

    const gone = await call(emu, 'DELETE', `/_emulator/holds/${added.body.id}`, { key: null });
    expect(gone.status).toBe(204);
    expect(await terminal(pear)).toBe('completed');
    expect((await adminRows(emu)).find((r) => r.id === pear)?.held).toBeNull();
  });

  it('keeps a client’s generations queued, holding their job slots; one can be released on its own', async () => {
    const id = (await addHold({ state: 'queued', client: 'b' })).body.id as string;
    const first = await create('queued one', KEY_B);
    const second = await create('queued two', KEY_B);
    const other = await create('not held');
    const held = await heldGenerations(emu, 2, 'b');
    expect(held.map((r) => [r.id, r.state, r.held])).toEqual([
      [first, 'queued', 'queued'],
      [second, 'queued', 'queued'],
    ]);
    expect(await terminal(other)).toBe('completed');
    expect(emu.app.emu.store.clients.get('b')!.activeJobs.size).toBe(2);

    const r = await call(emu, 'POST', `/_emulator/generations/${first}/release`, { key: null });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: first, held: null });
    expect(await terminal(first, KEY_B)).toBe('completed');
    expect(await stateOf(second, KEY_B)).toBe('queued');
    const again = await call(emu, 'POST', `/_emulator/generations/${first}/release`, { key: null });
    expect([again.status, again.body.detail]).toEqual([409, `Generation ${first} is not held`]);
    const unknown = await call(emu, 'POST', '/_emulator/generations/nope/release', { key: null });
    expect([unknown.status, unknown.body.detail]).toEqual([404, 'Generation not found']);

    await unhold(emu, id);
    expect(await terminal(second, KEY_B)).toBe('completed');
    expect(emu.app.emu.store.clients.get('b')!.activeJobs.size).toBe(0);
  });

  it('holds by type and request id; a generation two holds match waits for both; DELETE lets all go', async () => {
    await addHold({ type: 'image', request_id: 'hold-by-request-id' });
    const r = await call(emu, 'POST', '/v1/generations', {
      json: IMAGE,
      headers: { 'x-request-id': 'hold-by-request-id' },
    });
    const [row] = await heldGenerations(emu, 1);
    expect(row).toMatchObject({ id: r.body.id, request_id: 'hold-by-request-id', held: 'processing' });
    // Two rules match: one of them going is not enough.
    const second = await addHold({ client: 'a' });
    await unhold(emu, second.body.id);
    expect((await adminRows(emu)).find((x) => x.id === r.body.id)?.held).toBe('processing');
    await unhold(emu);
    expect((await call(emu, 'GET', '/_emulator/holds', { key: null })).body.data).toEqual([]);
    expect(await terminal(r.body.id)).toBe('completed');
  });

  it('refuses bad holds naming the key', async () => {
    const cases: Array<[unknown, string]> = [
      [{ state: 'completed' }, 'Expected queued or processing for state but received "completed"'],
      [{ client: 'zed' }, "Unknown client 'zed'"],
      [
        { type: 'sound' },
        'Expected one of image, image_edit, video, video_edit, video_reframe for type but received "sound"',
      ],
      [{ prompt: '(' }, 'Expected a regular expression for prompt but received "("'],
      [{ prompt: '' }, 'Expected a non-empty string for prompt but received ""'],
      [{ colour: 'red' }, "Unknown hold key 'colour'"],
      [[1], 'Expected a JSON object for the hold'],
    ];
    for (const [json, detail] of cases) {
      const r = await call(emu, 'POST', '/_emulator/holds', { key: null, json });
      expect([r.status, r.body.detail]).toEqual([400, detail]);
    }
    const missing = await call(emu, 'DELETE', '/_emulator/holds/hold-999', { key: null });
    expect([missing.status, missing.body.detail]).toEqual([404, 'Hold not found']);
    expect((await call(emu, 'GET', '/_emulator/holds', { key: null })).body.data).toEqual([]);
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
