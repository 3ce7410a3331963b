/**
 * The job slots of a process killed with -9 are not held forever: a child process on a shared quota
 * creates jobs up to the key's ceiling of 3 (learning it from the 429 of a fourth), and is killed while
 * its jobs run. A client on the same key recovers the slots of the jobs that ended — when it starts,
 * and when it finds the key's slots full for longer than its recoverAfterMs — by asking the service
 * about each.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { postgresSharedQuota } from '../../src/pipeline/distributed/index.ts';
import { keyFingerprint } from '../../src/pipeline/store/key-fingerprint.ts';
import { openPool } from '../../src/pipeline/store/postgres/connection.ts';
import { openPostgresStore } from '../../src/pipeline/store/postgres/index.ts';
import { clientFor, KEY, stats } from '../client/client-helpers.ts';
import { adminRows, hold, startTestEmulator, unhold, until } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCHEMA = 'recovery';
const CEILING = 3;
const JOB = { type: 'image', prompt: 'a recovered triangle', aspect_ratio: '1:1' } as const;

/** Creates CEILING + 1 jobs on the shared quota, then waits (the test kills it). */
const CHILD = `
import { createClient } from '${ROOT}/src/client/index.ts';
import { openPool } from '${ROOT}/src/pipeline/store/postgres/connection.ts';
import { postgresSharedQuota } from '${ROOT}/src/pipeline/distributed/shared-quota-pg.ts';
const pool = openPool(process.env.STORE_URL, '${SCHEMA}', () => undefined);
const client = createClient({
  apiKey: process.env.API_KEY,
  baseUrl: process.env.BASE_URL,
  sharedQuota: postgresSharedQuota(pool, { service: process.env.BASE_URL, keyFingerprint: process.env.KEY_FP }),
});
for (let i = 0; i < ${CEILING + 1}; i++) {
  client.generations.create(${JSON.stringify(JOB)}).then((g) => process.stdout.write('created ' + g.id + '\\n'));
}
setInterval(() => undefined, 1000);
`;

const db = usePostgres();
let dir: string;
const pools: pg.Pool[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-shared-recovery-'));
  await (await openPostgresStore({ url: db.url(), outDir: dir, schema: SCHEMA, lock: false })).close();
});
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
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

/**
 * A fresh emulator (ceiling 3, every job held processing) and a child that filled the key's slots and
 * learned its ceiling, killed with -9.
 */
async function deadHolder(): Promise<{
  emu: RunningEmulator;
  key: { service: string; keyFingerprint: string };
}> {
  const emu = await startTestEmulator({
    clients: [{ id: 'a', rpm: 1000, concurrency: CEILING }],
    keys: [{ key: KEY, client: 'a' }],
    queue_ms: 0,
  });
  await hold(emu, { state: 'processing' });
  const key = { service: emu.url, keyFingerprint: keyFingerprint(`${KEY}-${emu.url}`) };
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CHILD], {
    cwd: ROOT,
    env: { ...process.env, STORE_URL: db.url(), API_KEY: KEY, BASE_URL: emu.url, KEY_FP: key.keyFingerprint },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const p = pool();
  // Three jobs hold the key's slots and the fourth create taught the ceiling.
  await until(async () => {
    const { rows } = await p.query<{ jobs: number; ceiling: number | null }>(
      `SELECT (SELECT count(*)::int FROM key_job_slots WHERE key_fingerprint = $1 AND NOT pending) AS jobs,
              (SELECT job_ceiling FROM key_quotas WHERE key_fingerprint = $1) AS ceiling`,
      [key.keyFingerprint],
    );
    return rows[0]?.jobs === CEILING && rows[0]?.ceiling === CEILING;
  }, 60_000);
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  return { emu, key };
}

const allEnded = (emu: RunningEmulator) => async () =>
  (await adminRows(emu)).every((r) => r.state === 'completed' || r.state === 'failed');

describe('the job slots of a process killed with -9', () => {
  it('are freed when a client on the key starts, once their jobs ended', async () => {
    const { emu, key } = await deadHolder();
    const quota = postgresSharedQuota(pool(), key);
    const client = clientFor(emu, { sharedQuota: quota });
    try {
      expect(await quota.heldJobs()).toHaveLength(CEILING);
      await unhold(emu);
      await until(allEnded(emu));
      const created = await client.generations.create(JOB);
      expect(await quota.heldJobs()).toEqual([created.id]);
      expect((await stats(emu)).rate_limited.concurrency).toBe(1);
    } finally {
      await client.close();
      await emu.close();
    }
  }, 90_000);

  it('are freed when the key has been full longer than recoverAfterMs and their jobs have ended', async () => {
    const { emu, key } = await deadHolder();
    const quota = postgresSharedQuota(pool(), key, { recoverAfterMs: 300, pollMs: 50 });
    const client = clientFor(emu, { sharedQuota: quota });
    try {
      const deadJobs = await quota.heldJobs();
      const readsBefore = (await stats(emu)).responses['200'] ?? 0;
      const creating = client.generations.create(JOB);
      // The client's first recovery asked about the three jobs while they still ran: none freed.
      await until(async () => ((await stats(emu)).responses['200'] ?? 0) >= readsBefore + CEILING);
      expect(await quota.heldJobs()).toHaveLength(CEILING);
      await unhold(emu);
      await creating;
      // A recovery frees the slots of the jobs that had ended when it asked: all three, or (on a loaded
      // machine, the jobs ending one by one) one or two, room enough for the create. The creates that
      // find the key full again free the rest (and, as the emulator ends the new jobs quickly, may free
      // the new jobs' slots too): no dead slot is held for good.
      const deadHeld = async () => (await quota.heldJobs()).filter((id) => deadJobs.includes(id));
      for (let i = 0; i < CEILING && (await deadHeld()).length > 0; i++) await client.generations.create(JOB);
      expect(await deadHeld()).toEqual([]);
      expect((await stats(emu)).rate_limited.concurrency).toBe(1);
    } finally {
      await client.close();
      await emu.close();
    }
  }, 90_000);
});
