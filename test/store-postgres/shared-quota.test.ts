/**
 * Two clients on one API key, each with its own PostgreSQL pool, sharing the quota in the database
 * (postgresSharedQuota) against an emulator allowing 20 creates per 5 s: together they get no 429
 * although each alone would think it had the whole window; their running jobs are recorded as the
 * key's job slots.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GenpipeClient, SharedQuotaError } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { postgresSharedQuota } from '../../src/pipeline/distributed/index.ts';
import { loadRecipe } from '../../src/pipeline/recipe.ts';
import { startBatch } from '../../src/pipeline/runner.ts';
import { keyFingerprint } from '../../src/pipeline/store/key-fingerprint.ts';
import { openPool } from '../../src/pipeline/store/postgres/connection.ts';
import { openPostgresStore } from '../../src/pipeline/store/postgres/index.ts';
import { adminRows, clientFor, KEY, startTestEmulator, stats, until } from '../client/client-helpers.ts';
import { usePostgres } from '../helpers/postgres.ts';

const db = usePostgres();
const SCHEMA = 'shared';
const LIMIT = 20;
const WINDOW_MS = 5000;
const PER_CLIENT = 15;
const CHEAP = { type: 'image', prompt: 'a shared triangle', aspect_ratio: '1:1' } as const;

let dir: string;
const pools: pg.Pool[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-shared-quota-'));
  await (await openPostgresStore({ url: db.url(), outDir: dir, schema: SCHEMA, lock: false })).close();
});

afterAll(async () => {
  for (const p of pools) await p.end();
  rmSync(dir, { recursive: true, force: true });
});

function pool(): pg.Pool {
  const p = openPool(db.url(), SCHEMA, () => undefined);
  pools.push(p);
  return p;
}

describe('a quota shared in PostgreSQL', () => {
  it('two clients on one key send 30 creates against 20 per 5 s with no 429', async () => {
    const emu: RunningEmulator = await startTestEmulator({
      clients: [{ id: 'a', rpm: LIMIT, concurrency: 100 }],
      keys: [{ key: KEY, client: 'a' }],
      rate_window_s: WINDOW_MS / 1000,
      blocked_words: ['shared'],
    });
    const key = { service: emu.url, keyFingerprint: keyFingerprint(KEY) };
    const clients: GenpipeClient[] = [0, 1].map(() =>
      clientFor(emu, {
        rateWindowMs: WINDOW_MS,
        rateLimit: LIMIT,
        sharedQuota: postgresSharedQuota(pool(), key),
      }),
    );
    try {
      const created = await Promise.all(
        clients.flatMap((c) => Array.from({ length: PER_CLIENT }, () => c.generations.create(CHEAP))),
      );
      expect(new Set(created.map((g) => g.id)).size).toBe(2 * PER_CLIENT);
      const s = await stats(emu);
      expect(s.rate_limited.rpm).toBe(0);
      const slots = await pools[0]!.query('SELECT slot_id FROM key_job_slots WHERE key_fingerprint = $1', [
        key.keyFingerprint,
      ]);
      expect(new Set(slots.rows.map((r) => r.slot_id))).toEqual(new Set(created.map((g) => g.id)));
    } finally {
      for (const c of clients) await c.close();
      await emu.close();
    }
  });

  it('a client that went away without reading its jobs leaves their slots; another recovers those that ended', async () => {
    const emu: RunningEmulator = await startTestEmulator({
      clients: [{ id: 'a', rpm: LIMIT, concurrency: 100 }],
      keys: [{ key: KEY, client: 'a' }],
      blocked_words: ['shared'],
    });
    const key = { service: emu.url, keyFingerprint: keyFingerprint(KEY) };
    const gone = clientFor(emu, {
      rateWindowMs: 60_000,
      rateLimit: LIMIT,
      sharedQuota: postgresSharedQuota(pool(), key),
    });
    const survivor = clientFor(emu, { sharedQuota: postgresSharedQuota(pool(), key) });
    try {
      const created = await Promise.all([0, 1, 2].map(() => gone.generations.create(CHEAP)));
      await gone.close();
      const quota = postgresSharedQuota(pool(), key);
      expect(new Set(await quota.heldJobs())).toEqual(new Set(created.map((g) => g.id)));
      // The jobs end (moderation) with nobody reading them.
      await until(async () =>
        (await adminRows(emu)).every((r) => r.state === 'failed' || r.state === 'completed'),
      );
      expect(await survivor.generations.recoverSharedJobSlots()).toBe(3);
      expect(await quota.heldJobs()).toEqual([]);
    } finally {
      await survivor.close();
      await emu.close();
    }
  });

  it('a store that cannot be reached before a create: nothing is sent, and a batch stops with its files left, not failed', async () => {
    const emu: RunningEmulator = await startTestEmulator();
    // A port nothing listens on: the quota's database is away.
    const away = openPool('postgres://genpipe:pw@127.0.0.1:9/none', SCHEMA, () => undefined);
    pools.push(away);
    const key = { service: emu.url, keyFingerprint: keyFingerprint(KEY) };
    const client = clientFor(emu, { sharedQuota: postgresSharedQuota(away, key) });
    const inputDir = mkdtempSync(join(tmpdir(), 'genpipe-quota-away-'));
    try {
      await expect(client.generations.create(CHEAP)).rejects.toBeInstanceOf(SharedQuotaError);
      writeFileSync(join(inputDir, 'a.txt'), 'a fox the quota never saw');
      writeFileSync(
        join(inputDir, 'genpipe.yaml'),
        'rules:\n  - match: "*.txt"\n    input_as: prompt\n    request: { type: image, model: uni-1 }\n',
      );
      const result = await startBatch({
        inputDir,
        outDir: join(inputDir, '..', `${basename(inputDir)}-out`),
        recipe: await loadRecipe({ inputDir }),
        client,
        keepItems: true,
      }).done;
      expect(result.stop?.cause).toBe('journal');
      expect(result.report.totals).toMatchObject({ inputs: 1, failed: 0, unprocessed: 1 });
      expect((await adminRows(emu)).length).toBe(0);
    } finally {
      await client.close();
      await emu.close();
      rmSync(inputDir, { recursive: true, force: true });
      rmSync(`${inputDir}-out`, { recursive: true, force: true });
    }
  });
});
