/**
 * The embedded PostgreSQL of the tests and the demo: a real server from npm packages, reachable with
 * the password it was given, and gone with its folder once stopped.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/pipeline/store-postgres/embedded.ts';
import { usePostgres } from '../helpers/postgres.ts';

const file = usePostgres();
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const EMBEDDED_MODULE = pathToFileURL(join(ROOT, 'src/pipeline/store-postgres/embedded.ts')).href;

/** Child: starts a server, prints its folder, and lives until killed. */
const OWNER = `
const { startEmbeddedPostgres } = await import(process.env.EMBEDDED_MODULE);
const server = await startEmbeddedPostgres({ volatile: true });
process.stdout.write('dir ' + server.dir + '\\n');
setInterval(() => {}, 1000);
`;

/** True while process `pid` exists and is not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}

describe('embedded PostgreSQL', () => {
  it('serves the test file a database of its own', async () => {
    const client = new pg.Client({ connectionString: file.url() });
    await client.connect();
    try {
      const { rows } = await client.query<{ db: string; v: string }>(
        'SELECT current_database() AS db, current_setting($1) AS v',
        ['server_version_num'],
      );
      expect(rows[0]!.db).toMatch(/^test_/);
      expect(Number(rows[0]!.v)).toBeGreaterThanOrEqual(130000); // what BullMQ's backend needs
    } finally {
      await client.end();
    }
  });

  it('runs two servers side by side, each stopped with its folder', async () => {
    const other = await startEmbeddedPostgres({ volatile: true });
    try {
      expect(other.port).not.toBe(file.server().port);
      const client = new pg.Client({ connectionString: await other.createDatabase('side') });
      await client.connect();
      await client.end();
    } finally {
      await other.stop();
    }
    expect(existsSync(other.dir)).toBe(false);
    await expect(
      new pg.Client({ connectionString: other.url, connectionTimeoutMillis: 2_000 }).connect(),
    ).rejects.toThrow();
  });

  it('removes the server and folder an owner killed with -9 left, at the next start', async () => {
    const owner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', OWNER], {
      cwd: ROOT,
      env: { ...process.env, EMBEDDED_MODULE },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    owner.stderr?.on('data', (d: Buffer) => {
      stderr += String(d);
    });
    const dir = await new Promise<string>((res, rej) => {
      owner.stdout?.on('data', (d: Buffer) => {
        const m = /^dir (\S+)$/m.exec(String(d));
        if (m) res(m[1]!);
      });
      owner.once('exit', (code) => rej(new Error(`owner exited (${code}): ${stderr}`)));
    });
    const server = Number(readFileSync(join(dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const dead = new Promise((r) => owner.once('exit', r));
    owner.kill('SIGKILL');
    await dead;
    expect(running(server)).toBe(true); // a server outlives its owner

    const next = await startEmbeddedPostgres({ volatile: true });
    await next.stop();
    expect(existsSync(dir)).toBe(false);
    await expect.poll(() => running(server), { timeout: 20_000 }).toBe(false);
  });
});
