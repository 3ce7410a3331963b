/**
 * Reading files over real HTTP: GET one, the keyset-paginated list (ties in created_at, filters, bad
 * queries, tampered cursors), soft delete, expiry by expires_at, and isolation between clients.
 * A manual clock makes ties and expiry exact without sleeping.
 */
import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock, type RunningEmulator, startEmulator } from '../../src/emulator/index.ts';
import { DETAILS, FILE_DETAILS } from '../../src/spec/index.ts';
import { call, KEY, KEY_B, testConfig } from '../helpers/emulator.ts';
import { settled, tinyPng, uploadInline } from './files-helpers.ts';

let emu: RunningEmulator;
let clock: ManualClock;

beforeEach(async () => {
  clock = new ManualClock(Date.UTC(2030, 0, 1));
  emu = await startEmulator({ config: testConfig(), clock });
});
afterEach(async () => {
  await emu.close();
});

async function presign(extra: Record<string, unknown> = {}, key = KEY): Promise<string> {
  const r = await call(emu, 'POST', '/v1/files', {
    json: { mime_type: 'image/png', size_bytes: 10, ...extra },
    key,
  });
  expect(r.status).toBe(201);
  return r.body.id;
}

async function list(query = '', key = KEY) {
  return call(emu, 'GET', `/v1/files${query}`, { key });
}

/** Walks every page with the given page size; returns the ids in order and the page sizes. */
async function walk(limit: number, extra = '') {
  const ids: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  for (let guard = 0; guard < 100; guard++) {
    const q: string = `?limit=${limit}${extra}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const r = await list(q);
    expect(r.status).toBe(200);
    ids.push(...r.body.data.map((f: { id: string }) => f.id));
    sizes.push(r.body.data.length);
    if (!r.body.has_more) {
      expect(r.body.next_cursor).toBeNull();
      return { ids, sizes };
    }
    expect(typeof r.body.next_cursor).toBe('string');
    cursor = r.body.next_cursor;
  }
  throw new Error('too many pages');
}

describe('GET /v1/files pagination', () => {
  it('pages newest first across equal created_at values without gaps or repeats', async () => {
    const created: string[] = [];
    for (let i = 0; i < 4; i++) created.push(await presign());
    clock.advance(1000);
    for (let i = 0; i < 3; i++) created.push(await presign());
    const { ids, sizes } = await walk(3);
    expect(sizes).toEqual([3, 3, 1]);
    expect(ids).toEqual([...created].reverse());
    const all = await list('?limit=100');
    expect(all.body.has_more).toBe(false);
    expect(all.body.data.map((f: { id: string }) => f.id)).toEqual(ids);
  });

  it('a file created between pages does not shift later pages', async () => {
    const created: string[] = [];
    for (let i = 0; i < 4; i++) created.push(await presign());
    const first = await list('?limit=2');
    await presign();
    const second = await list(`?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.data.map((f: { id: string }) => f.id)).toEqual([created[1], created[0]]);
    expect(second.body.has_more).toBe(false);
  });

  it('defaults to 25 per page', async () => {
    for (let i = 0; i < 26; i++) await presign();
    const r = await list();
    expect(r.body.data).toHaveLength(25);
    expect(r.body.has_more).toBe(true);
  });

  it.each([
    ['?limit=0', FILE_DETAILS.limitInvalid],
    ['?limit=101', FILE_DETAILS.limitInvalid],
    ['?limit=abc', FILE_DETAILS.limitInvalid],
    ['?limit=2.5', FILE_DETAILS.limitInvalid],
    ['?limit=-1', FILE_DETAILS.limitInvalid],
    ['?limit=', FILE_DETAILS.limitInvalid],
    ['?limit=1&limit=2', FILE_DETAILS.fieldRepeated('limit')],
    ['?purpose=style', FILE_DETAILS.purposeInvalid],
    ['?state=gone', FILE_DETAILS.stateInvalid],
    ['?cursor=', FILE_DETAILS.cursorInvalid],
    ['?cursor=not-a-cursor', FILE_DETAILS.cursorInvalid],
  ])('answers 400 to %s', async (q, detail) => {
    const r = await list(q);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ detail });
  });

  it('accepts limits 1 and 100', async () => {
    await presign();
    expect((await list('?limit=1')).status).toBe(200);
    expect((await list('?limit=100')).status).toBe(200);
  });

  it('rejects a cursor with any character changed, and one taken from another client', async () => {
    for (let i = 0; i < 3; i++) await presign();
    const cursor: string = (await list('?limit=1')).body.next_cursor;
    expect((await list(`?limit=1&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200);
    for (let i = 0; i < cursor.length; i++) {
      const c = cursor[i] === 'A' ? 'B' : 'A';
      const bad = cursor.slice(0, i) + c + cursor.slice(i + 1);
      const r = await list(`?limit=1&cursor=${encodeURIComponent(bad)}`);
      expect(r.status, `position ${i}`).toBe(400);
    }
    const other = await list(`?limit=1&cursor=${encodeURIComponent(cursor)}`, KEY_B);
    expect(other.status).toBe(400);
    expect(other.body.detail).toBe(FILE_DETAILS.cursorInvalid);
  });
});

describe('GET /v1/files filters', () => {
  it('filters by purpose and by state; deleted files only show with state=deleted', async () => {
    const input1 = await presign({ purpose: 'input' });
    const ref1 = await presign({ purpose: 'reference' });
    const ref2 = await presign({ purpose: 'reference' });
    const gone = await presign({ purpose: 'reference' });
    const png = await tinyPng();
    const ready = (await uploadInline(emu, png, { fields: { purpose: 'input' } })).body.id;
    expect((await settled(emu, ready)).state).toBe('ready');
    const failed = (await uploadInline(emu, 'plain text')).body.id;
    expect((await settled(emu, failed)).state).toBe('failed');
    expect((await call(emu, 'DELETE', `/v1/files/${gone}`)).status).toBe(204);

    const ids = async (q: string) => (await list(q)).body.data.map((f: { id: string }) => f.id);
    expect(await ids('?purpose=reference')).toEqual([ref2, ref1]);
    expect(await ids('?purpose=reference&state=deleted')).toEqual([gone]);
    expect(await ids('?state=pending')).toEqual([ref2, ref1, input1]);
    expect(await ids('?state=ready')).toEqual([ready]);
    expect(await ids('?state=failed')).toEqual([failed]);
    expect(await ids('?state=deleted')).toEqual([gone]);
    expect(await ids('')).toEqual([failed, ready, ref2, ref1, input1]);
    const { ids: paged } = await walk(2, '&purpose=input');
    expect(paged).toEqual([failed, ready, input1]);
  });
});

describe('GET and DELETE /v1/files/:id', () => {
  it('soft-deletes: 204 without a body, then the file reads as deleted with deleted_at; twice is 204', async () => {
    const png = await tinyPng();
    const id = (await uploadInline(emu, png)).body.id;
    expect((await settled(emu, id)).state).toBe('ready');
    const blob = emu.app.emu.store.files.get(id)?.blobPath as string;
    expect(existsSync(blob)).toBe(true);
    clock.advance(5000);
    const del = await call(emu, 'DELETE', `/v1/files/${id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeNull();
    expect(del.headers['x-api-version']).toBeTruthy();
    const got = await call(emu, 'GET', `/v1/files/${id}`);
    expect(got.status).toBe(200);
    expect(got.body.state).toBe('deleted');
    expect(got.body.deleted_at).toBe(new Date(clock.now()).toISOString());
    clock.advance(1000);
    expect((await call(emu, 'DELETE', `/v1/files/${id}`)).status).toBe(204);
    expect((await call(emu, 'GET', `/v1/files/${id}`)).body.deleted_at).toBe(got.body.deleted_at);
    await expect.poll(() => existsSync(blob)).toBe(false);
  });

  it('answers 404 for an unknown id', async () => {
    for (const method of ['GET', 'DELETE']) {
      const r = await call(emu, method, '/v1/files/00000000-0000-4000-8000-000000000000');
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ detail: DETAILS.fileNotFound });
    }
  });

  it('past expires_at a file reads as deleted at expires_at, its bytes are removed, and it leaves the list', async () => {
    const expiresAt = new Date(clock.now() + 60_000).toISOString();
    const r = await uploadInline(emu, await tinyPng(), { fields: { expires_at: expiresAt } });
    const id = r.body.id;
    expect((await settled(emu, id)).state).toBe('ready');
    const blob = emu.app.emu.store.files.get(id)?.blobPath as string;
    expect(existsSync(blob)).toBe(true);
    clock.advance(59_000);
    expect((await call(emu, 'GET', `/v1/files/${id}`)).body.state).toBe('ready');
    clock.advance(1_000);
    const got = await call(emu, 'GET', `/v1/files/${id}`);
    expect(got.body.state).toBe('deleted');
    expect(got.body.deleted_at).toBe(expiresAt);
    expect(got.body.expires_at).toBe(expiresAt);
    expect(emu.app.emu.store.files.get(id)?.blobPath).toBeNull();
    await expect.poll(() => existsSync(blob)).toBe(false);
    expect((await list()).body.data).toEqual([]);
    expect((await list('?state=deleted')).body.data.map((f: { id: string }) => f.id)).toEqual([id]);
  });
});

describe('isolation between clients', () => {
  it('a client never sees, lists, deletes or completes another client’s file', async () => {
    const a = await presign({}, KEY);
    const b = await presign({}, KEY_B);
    expect((await list('', KEY)).body.data.map((f: { id: string }) => f.id)).toEqual([a]);
    expect((await list('', KEY_B)).body.data.map((f: { id: string }) => f.id)).toEqual([b]);
    expect((await list('?state=pending', KEY_B)).body.data.map((f: { id: string }) => f.id)).toEqual([b]);
    for (const [method, path] of [
      ['GET', `/v1/files/${a}`],
      ['DELETE', `/v1/files/${a}`],
      ['POST', `/v1/files/${a}/complete`],
    ] as const) {
      const r = await call(emu, method, path, { key: KEY_B });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ detail: DETAILS.fileNotFound });
    }
    expect((await call(emu, 'GET', `/v1/files/${a}`)).body.state).toBe('pending');
  });

  it('every files route needs a valid key', async () => {
    for (const [method, path] of [
      ['GET', '/v1/files'],
      ['GET', '/v1/files/x'],
      ['DELETE', '/v1/files/x'],
      ['POST', '/v1/files/x/complete'],
      ['POST', '/v1/files'],
    ] as const) {
      const r = await call(emu, method, path, { key: null });
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ detail: 'Missing or invalid API key' });
    }
  });
});
