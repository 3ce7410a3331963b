/**
 * The PostgreSQL store's out dir lock across real processes: a runner killed with -9 while holding it
 * frees it (its session ends with its socket), and a runner whose lock's session is ended from outside
 * stops writing (another runner may hold the out dir now).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileIdentity } from '../../src/pipeline/store/content-hash.ts';
import { openPostgresStore, type PostgresStore } from '../../src/pipeline/store/postgres/index.ts';
import { usePostgres } from '../helpers/postgres.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const STORE_MODULE = pathToFileURL(join(ROOT, 'src/pipeline/store/postgres/index.ts')).href;

/** Child: opens the store of OUT holding its lock, prints `locked`, and lives until killed. */
const HOLDER = `
const { openPostgresStore } = await import(process.env.STORE_MODULE);
globalThis.held = await openPostgresStore({ url: process.env.STORE_URL, outDir: process.env.OUT });
process.stdout.write('locked\\n');
setInterval(() => {}, 1000);
`;

const db = usePostgres();

/** Retries `attempt` until it resolves, at most `ms` (what the server does after a death is not instant). */
async function eventually<T>(attempt: () => Promise<T>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

describe('PostgreSQL store lock across processes', () => {
  let outDir: string;
  const children: ChildProcess[] = [];
  const stores: PostgresStore[] = [];
  beforeEach(() => {
    outDir = mkdtempSync(join(tmpdir(), 'genpipe-pg-lock-'));
  });
  afterEach(async () => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
    for (const s of stores.splice(0)) await s.close().catch(() => undefined);
    rmSync(outDir, { recursive: true, force: true });
  });

  it('refuses a second runner while the first lives, and lets it in once the first is killed with -9', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', HOLDER], {
      cwd: ROOT,
      env: { ...process.env, STORE_MODULE, STORE_URL: db.url(), OUT: outDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => {
      stderr += String(d);
    });
    await new Promise<void>((res, rej) => {
      child.stdout?.on('data', (d: Buffer) => String(d).includes('locked') && res());
      child.once('exit', (code) => rej(new Error(`holder exited (${code}): ${stderr}`)));
    });
    const second = await openPostgresStore({ url: db.url(), outDir, lock: false });
    stores.push(second);
    const refusal = await second.acquireLock().catch((e: unknown) => e);
    expect(refusal).toMatchObject({ code: 'journal_locked' });
    expect((refusal as Error).message).toContain(String(child.pid));
    expect(await second.lockHolder()).toMatchObject({ pid: child.pid });

    const dead = new Promise((res) => child.once('exit', res));
    child.kill('SIGKILL');
    await dead;
    await eventually(() => second.acquireLock());
    expect(await second.lockHolder()).toMatchObject({ pid: process.pid });
  });

  it('refuses writes once the session holding its lock is gone', async () => {
    const store = await openPostgresStore({ url: db.url(), outDir });
    stores.push(store);
    await store.startBatch({ inputDir: outDir });
    const identity = await fileIdentity(outDir);
    await store.saveHash('/x', identity, 'h1');

    const admin = new pg.Client({ connectionString: db.url() });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted`,
      );
      expect(rows[0]!.n).toBe(1);
    } finally {
      await admin.end();
    }
    const refused = await eventually(async () => {
      const err = await store.saveHash('/x', identity, 'h2').then(
        () => null,
        (e: unknown) => e,
      );
      if (!err) throw new Error('still written');
      return err as Error;
    });
    expect(refused.message).toContain('lost');
    expect(refused.message).not.toContain(new URL(db.url()).password);
    // Taking the lock again lets it write.
    await store.acquireLock();
    await store.saveHash('/x', identity, 'h3');
    expect(await store.cachedHash('/x', identity)).toBe('h3');
  });
});
