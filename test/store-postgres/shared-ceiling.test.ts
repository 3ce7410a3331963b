/**
 * The job ceiling shared in PostgreSQL: three clients on one API key, each with its own pool (as three
 * processes would have), against an emulator whose ceiling is 3 concurrent jobs. The ceiling one
 * client learns from a "Too many concurrent jobs" 429 is the key's, and every client waits for one of
 * the key's job slots before a create, so together they pay at most a few 429s (each alone would
 * learn its own share and run into the others' jobs).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GenpipeClient } from '../../src/client/index.ts';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { postgresSharedQuota } from '../../src/pipeline/distributed/index.ts';
import { keyFingerprint } from '../../src/pipeline/store/key-fingerprint.ts';
import { openPool } from '../../src/pipeline/store/postgres/connection.ts';
import { openPostgresStore } from '../../src/pipeline/store/postgres/index.ts';
import { clientFor, KEY, startTestEmulator, stats } from '../client/client-helpers.ts';
import { usePostgres } from '../helpers/postgres.ts';

const db = usePostgres();
const SCHEMA = 'ceiling';
const CEILING = 3;
const CLIENTS = 3;
const PER_CLIENT = 4;
const JOB = { type: 'image', prompt: 'a ceiling triangle', aspect_ratio: '1:1' } as const;

let dir: string;
const pools: pg.Pool[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-shared-ceiling-'));
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

/** Each client makes its jobs `CEILING` at a time (create, then wait), as a batch would. */
async function work(client: GenpipeClient): Promise<void> {
  let left = PER_CLIENT;
  await Promise.all(
    Array.from({ length: CEILING }, async () => {
      while (left > 0) {
        left--;
        await client.generations.wait(await client.generations.create(JOB));
      }
    }),
  );
}

describe('a job ceiling shared in PostgreSQL', () => {
  it('three clients on one key with a ceiling of 3 and 1 s jobs get at most 3 concurrency 429s together', async () => {
    const emu: RunningEmulator = await startTestEmulator({
      clients: [{ id: 'a', rpm: 1000, concurrency: CEILING }],
      keys: [{ key: KEY, client: 'a' }],
      queue_ms: 0,
      processing_ms: { image: 1000, video: 1000 },
    });
    const key = { service: emu.url, keyFingerprint: keyFingerprint(KEY) };
    const clients = Array.from({ length: CLIENTS }, () =>
      clientFor(emu, { sharedQuota: postgresSharedQuota(pool(), key) }),
    );
    try {
      await Promise.all(clients.map(work));
      const s = await stats(emu);
      expect(s.responses['201']).toBe(CLIENTS * PER_CLIENT);
      expect(s.rate_limited.concurrency).toBeLessThanOrEqual(3);
      // Every client knows the key's ceiling now, whoever learned it, and none knows it too low (each
      // learning it alone took its own share of the jobs running for it: 1 of 3). A 429 only bounds the
      // ceiling from above: the key's learned one may still be above 3 when the work ends.
      const { rows } = await pools[0]!.query<{ job_ceiling: number }>(
        'SELECT job_ceiling FROM key_quotas WHERE key_fingerprint = $1',
        [key.keyFingerprint],
      );
      expect(rows[0]!.job_ceiling).toBeGreaterThanOrEqual(CEILING);
      // A client that made its last create before the key's ceiling was learned (on a loaded machine
      // one may finish first) has not heard of it: none knows it too low, and one at least knows it.
      const known = clients.map((c) => c.governor.ceiling).filter((n): n is number => n !== null);
      expect(known.length).toBeGreaterThan(0);
      for (const n of known) expect(n).toBeGreaterThanOrEqual(CEILING);
    } finally {
      for (const c of clients) await c.close();
      await emu.close();
    }
  }, 120_000);
});
