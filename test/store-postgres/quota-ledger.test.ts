/**
 * The quota shared by every worker of an API key, in PostgreSQL: callers on several connections at
 * once are never granted more than the window allows or more job slots than the ceiling, a denied
 * caller learns exactly when a slot frees (by the database's clock), and a granted request slot is
 * recorded together with the create's intent.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.ts';
import {
  type QuotaKey,
  releaseJobSlot,
  type SlotAnswer,
  storeSharedQuota,
  takeJobSlot,
  takeRequestSlot,
  takeRequestSlotFor,
} from '../../src/pipeline/distributed/index.ts';
import { newItem } from '../../src/pipeline/item.ts';
import { keyFingerprint } from '../../src/pipeline/store/key-fingerprint.ts';
import type { Queryable } from '../../src/pipeline/store/postgres/connection.ts';
import { clientConfig } from '../../src/pipeline/store/postgres/connection.ts';
import { openPostgresStore } from '../../src/pipeline/store/postgres/index.ts';
import { KEY, startTestEmulator } from '../helpers/emulator.ts';
import { patchItem } from '../helpers/item-patch.ts';
import { usePostgres } from '../helpers/postgres.ts';

const db = usePostgres();
const SCHEMA = 'ledger';
const CALLERS = 6;
const WINDOW = { windowMs: 60_000, limit: 4 };

let dir: string;
let clients: pg.Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-ledger-'));
  // Opening a store makes the schema.
  await (await openPostgresStore({ url: db.url(), outDir: dir, schema: SCHEMA, lock: false })).close();
  clients = await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      const c = new pg.Client(clientConfig(db.url(), SCHEMA));
      await c.connect();
      return c;
    }),
  );
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end()));
  rmSync(dir, { recursive: true, force: true });
});

async function inTx<T>(c: pg.Client, fn: (q: Queryable) => Promise<T>): Promise<T> {
  await c.query('BEGIN');
  try {
    const out = await fn(c);
    await c.query('COMMIT');
    return out;
  } catch (err) {
    await c.query('ROLLBACK');
    throw err;
  }
}

const keyNamed = (name: string): QuotaKey => ({
  service: 'http://svc.test',
  keyFingerprint: keyFingerprint(name),
});

describe('shared request window', () => {
  it('grants no more than the limit to callers on several connections at once', async () => {
    const key = keyNamed('sk-window');
    const answers = (
      await Promise.all(
        clients.map(async (c, n) => {
          const mine: SlotAnswer[] = [];
          for (let i = 0; i < 5; i++) {
            mine.push(await inTx(c, (q) => takeRequestSlot(q, key, WINDOW, `req-${n}-${i}`)));
          }
          return mine;
        }),
      )
    ).flat();
    expect(answers.filter((a) => a.granted)).toHaveLength(WINDOW.limit);
    for (const a of answers) {
      if (!a.granted) expect(a.retryInMs).toBeGreaterThan(0);
      if (!a.granted) expect(a.retryInMs).toBeLessThanOrEqual(WINDOW.windowMs);
    }
    const { rows } = await clients[0]!.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM key_requests WHERE key_fingerprint = $1',
      [key.keyFingerprint],
    );
    expect(rows[0]!.n).toBe(WINDOW.limit);
  });

  it('says when the oldest request leaves the window, by the database clock, and grants then', async () => {
    const key = keyNamed('sk-exact');
    const c = clients[0]!;
    for (let i = 0; i < WINDOW.limit; i++) {
      expect(await inTx(c, (q) => takeRequestSlot(q, key, WINDOW, `r${i}`))).toMatchObject({ granted: true });
    }
    // The first request was sent 59 s ago: a slot frees within a second.
    await c.query(
      `UPDATE key_requests SET sent_at = clock_timestamp() - interval '59000 ms' WHERE key_fingerprint = $1 AND request_id = 'r0'`,
      [key.keyFingerprint],
    );
    const denied = await inTx(c, (q) => takeRequestSlot(q, key, WINDOW, 'r4'));
    expect(denied.granted).toBe(false);
    expect(!denied.granted && denied.retryInMs).toBeGreaterThan(0);
    expect(!denied.granted && denied.retryInMs).toBeLessThanOrEqual(1_000);
    // The margin for the way to the service keeps it counted a little longer.
    const withMargin = await inTx(c, (q) => takeRequestSlot(q, key, { ...WINDOW, marginMs: 5_000 }, 'r4'));
    expect(!withMargin.granted && withMargin.retryInMs).toBeGreaterThan(4_000);
    // Once it is out of the window, the next one is granted.
    await c.query(
      `UPDATE key_requests SET sent_at = clock_timestamp() - interval '60001 ms' WHERE key_fingerprint = $1 AND request_id = 'r0'`,
      [key.keyFingerprint],
    );
    expect(await inTx(c, (q) => takeRequestSlot(q, key, WINDOW, 'r4'))).toMatchObject({ granted: true });
  });
  it("paces every process by the tightest window bounds any of them learned; bounds that exclude the key's start again", async () => {
    const key = keyNamed('sk-bounds');
    const c = clients[0]!;
    const loose = { windowMs: 5_900, loMs: 4_100, limit: 1 };
    const tight = { windowMs: 5_200, loMs: 4_700, limit: 1 };
    expect(await inTx(c, (q) => takeRequestSlot(q, key, loose, 'b0'))).toMatchObject({
      granted: true,
      window: { loMs: 4_100, hiMs: 5_900 },
    });
    // A second process learned tighter bounds: the key is paced by their intersection from now on.
    const second = await inTx(clients[1]!, (q) => takeRequestSlot(q, key, tight, 'b1'));
    expect(second).toMatchObject({ granted: false, window: { loMs: 4_700, hiMs: 5_200 } });
    // The loose process too: its request waits for the tight window, not its own 5.9 s.
    const first = await inTx(c, (q) => takeRequestSlot(q, key, loose, 'b2'));
    expect(first.granted).toBe(false);
    expect(first.window).toEqual({ loMs: 4_700, hiMs: 5_200 });
    expect(!first.granted && first.retryInMs).toBeLessThanOrEqual(5_200);
    expect(!first.granted && first.retryInMs).toBeGreaterThan(4_000);
    // A window that grew (a 429 taught one process bounds above the key's): its bounds start again.
    const grown = { windowMs: 9_000, loMs: 5_200, limit: 1 };
    expect(await inTx(c, (q) => takeRequestSlot(q, key, grown, 'b3'))).toMatchObject({
      window: { loMs: 5_200, hiMs: 9_000 },
    });
    // A window given, not learned (no lower bound), is paced by as it is and leaves the key's alone.
    const given = await inTx(c, (q) => takeRequestSlot(q, key, { windowMs: 1, limit: 1 }, 'b4'));
    expect(given).toMatchObject({ granted: true });
    expect(given.window).toBeUndefined();
  });
});

describe('shared job slots', () => {
  it('grants no more slots than the ceiling at once, a slot held once, and one given back to the next', async () => {
    const key = keyNamed('sk-jobs');
    const answers = await Promise.all(
      clients.map((c, n) => inTx(c, (q) => takeJobSlot(q, key, 3, `job-${n}`))),
    );
    const granted = answers.flatMap((a, n) => (a.granted ? [n] : []));
    expect(granted).toHaveLength(3);
    const c = clients[0]!;
    const holder = `job-${granted[0]}`;
    expect(await inTx(c, (q) => takeJobSlot(q, key, 3, holder))).toEqual({ granted: true, held: 3 });
    const refused = answers.findIndex((a) => !a.granted);
    expect(await inTx(c, (q) => takeJobSlot(q, key, 3, `job-${refused}`))).toEqual({
      granted: false,
      held: 3,
    });
    expect(await inTx(c, (q) => releaseJobSlot(q, key, holder))).toBe(true);
    expect(await inTx(c, (q) => releaseJobSlot(q, key, holder))).toBe(false);
    expect(await inTx(c, (q) => takeJobSlot(q, key, 3, `job-${refused}`))).toEqual({
      granted: true,
      held: 3,
    });
  });
});

describe('a request slot with the intent of its create', () => {
  it('records the intent when granted, and nothing when not', async () => {
    const inDir = join(dir, 'in');
    const outDir = join(dir, 'out');
    mkdirSync(inDir, { recursive: true });
    mkdirSync(outDir, { recursive: true });
    const store = await openPostgresStore({ url: db.url(), outDir, schema: SCHEMA });
    try {
      await store.startBatch({ inputDir: inDir, service: 'http://svc.test' });
      const ready = async (name: string) => {
        writeFileSync(join(inDir, name), name);
        const planned = patchItem(newItem(name, join(inDir, name), name.length, 1), {
          state: 'planned',
          rule: { index: 0, match: '*' },
          inputAs: 'source',
          request: { type: 'image_edit', prompt: 'p', source: { file_id: '$input' } },
        });
        const { item } = await store.admit(planned, { references: {} });
        const up = patchItem(item, {
          state: 'uploaded',
          upload: { mode: 'inline', fileId: `file-${name}`, sha256: null },
        });
        await store.save(up);
        return patchItem(up, { requestId: `req-${name}`, attempts: 1 });
      };
      const key = keyNamed('sk-intent');
      const one = { windowMs: 60_000, limit: 1 };
      expect(await takeRequestSlotFor(store, key, one, await ready('a.png'))).toMatchObject({
        granted: true,
      });
      expect(await takeRequestSlotFor(store, key, one, await ready('b.png'))).toMatchObject({
        granted: false,
      });
      expect(await store.get('a.png')).toMatchObject({ phase: 'submitting', outcomeUnknown: true });
      expect(await store.get('b.png')).toMatchObject({ phase: 'uploaded', outcomeUnknown: false });
    } finally {
      await store.close();
    }
  });
  it("a client on the store's shared quota records the create's intent in the transaction of its request slot", async () => {
    const inDir = join(dir, 'in2');
    const outDir = join(dir, 'out2');
    mkdirSync(inDir, { recursive: true });
    mkdirSync(outDir, { recursive: true });
    const emu = await startTestEmulator();
    const store = await openPostgresStore({ url: db.url(), outDir, schema: SCHEMA });
    const client = createClient({
      apiKey: KEY,
      baseUrl: emu.url,
      rateWindowMs: 60_000,
      rateLimit: 10,
      sharedQuota: storeSharedQuota(store, { service: emu.url, keyFingerprint: keyFingerprint(KEY) }),
    });
    try {
      await store.startBatch({ inputDir: inDir, service: emu.url });
      writeFileSync(join(inDir, 'c.txt'), 'c');
      const planned = patchItem(newItem('c.txt', join(inDir, 'c.txt'), 1, 1), {
        state: 'planned',
        rule: { index: 0, match: '*' },
        inputAs: 'prompt',
        request: { type: 'image', prompt: 'an intent fox' },
      });
      const { item } = await store.admit(planned, { references: {} });
      const up = patchItem(item, { state: 'uploaded' });
      await store.save(up);
      const intent = patchItem(up, { requestId: 'req-intent-c', attempts: 1 });
      // The process "dies" right after the slot: nothing of the caller's own runs, nothing is sent.
      const died = new Error('died after the slot');
      await expect(
        client.generations.create(
          { type: 'image', prompt: 'an intent fox' },
          { requestId: 'req-intent-c', intent, beforeSend: () => Promise.reject(died) },
        ),
      ).rejects.toBe(died);
      expect(await store.get('c.txt')).toMatchObject({ phase: 'submitting', outcomeUnknown: true });
      const { rows } = await clients[0]!.query<{ request_id: string }>(
        'SELECT request_id FROM key_requests WHERE key_fingerprint = $1',
        [keyFingerprint(KEY)],
      );
      expect(rows.map((r) => r.request_id)).toEqual(['req-intent-c']);
    } finally {
      await client.close();
      await store.close();
      await emu.close();
    }
  });
});
