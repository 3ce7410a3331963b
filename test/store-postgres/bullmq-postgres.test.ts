/**
 * BullMQ 6 on its PostgreSQL backend, on the embedded server: the queue distributed mode builds on.
 * Three workers in their own processes; one killed with -9 while it holds two jobs; both jobs are taken
 * up by the other workers once their lock (lockDuration) has lapsed, and every job completes once.
 * Adding a job again under its id adds nothing.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPostgresBackend, withBackend } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import { usePostgres } from '../helpers/postgres.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LOCK_MS = 5_000;
const JOBS = 6;

/**
 * Child: a worker of queue `proof` (concurrency 2). Prints `active <worker> <job>` when it starts a
 * job and `done <worker> <job>` when it ends one; a job lasts until `release` comes on stdin, except
 * for jobs it took up after another worker's death (attemptsStarted > 1), which end at once.
 */
const WORKER = `
import { createPostgresBackend, withBackend } from 'bullmq';
const { Worker } = withBackend(createPostgresBackend);
const name = process.env.WORKER_NAME;
let release;
const released = new Promise((r) => { release = r; });
process.stdin.on('data', () => release());
const worker = new Worker('proof', async (job) => {
  process.stdout.write('active ' + name + ' ' + job.id + ' ' + job.attemptsStarted + '\\n');
  if (job.attemptsStarted <= 1) await released;
  process.stdout.write('done ' + name + ' ' + job.id + '\\n');
  return name;
}, {
  connection: { connectionString: process.env.QUEUE_URL },
  concurrency: 2,
  lockDuration: ${LOCK_MS},
  stalledInterval: 1000,
});
await worker.waitUntilReady();
process.stdout.write('ready ' + name + '\\n');
`;

const db = usePostgres();

interface WorkerChild {
  name: string;
  proc: ChildProcess;
  lines: string[];
}

describe('BullMQ on PostgreSQL', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  /** Every line of every worker, as it comes, and whoever waits for what they show. */
  const seen: string[] = [];
  let waiters: Array<() => boolean> = [];
  const note = (line: string): void => {
    seen.push(line);
    waiters = waiters.filter((w) => !w());
  };
  /** Resolves once the lines seen so far hold what `test` looks for (its answer). */
  const until = <T>(test: () => T | undefined): Promise<T> =>
    new Promise((res) => {
      const check = (): boolean => {
        const found = test();
        if (found === undefined) return false;
        res(found);
        return true;
      };
      if (!check()) waiters.push(check);
    });
  const waitFor = (re: RegExp): Promise<string> => until(() => seen.find((l) => re.test(l)));

  const startWorker = (name: string, url: string): WorkerChild => {
    const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', WORKER], {
      cwd: ROOT,
      env: { ...process.env, WORKER_NAME: name, QUEUE_URL: url },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(proc);
    const lines: string[] = [];
    let buf = '';
    proc.stdout?.on('data', (d: Buffer) => {
      buf += String(d);
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines.push(line);
        note(line);
      }
    });
    return { name, proc, lines };
  };

  it('takes up the jobs of a worker killed with -9 on the others, each job done once', async () => {
    const url = await db.freshDatabase();
    const { Queue } = withBackend(createPostgresBackend);
    const queue = new Queue('proof', { connection: { connectionString: url, migrate: true } });
    try {
      await queue.waitUntilReady();
      const workers = ['w1', 'w2', 'w3'].map((n) => startWorker(n, url));
      await Promise.all(workers.map((w) => waitFor(new RegExp(`^ready ${w.name}$`))));
      for (let i = 0; i < JOBS; i++) await queue.add('job', { i }, { jobId: `job-${i}` });
      // Re-adding a job id is a no-op.
      await queue.add('job', { i: 0, again: true }, { jobId: 'job-0' });
      const total = async () => Object.values(await queue.getJobCounts()).reduce((a, b) => a + b, 0);
      expect(await total()).toBe(JOBS);

      // A worker holding two jobs is killed.
      const active = (w: WorkerChild) => w.lines.filter((l) => l.startsWith('active'));
      const victim = await until(() => workers.find((w) => active(w).length === 2));
      const held = victim.lines.filter((l) => l.startsWith('active')).map((l) => l.split(' ')[2]!);
      const dead = new Promise((r) => victim.proc.once('exit', r));
      victim.proc.kill('SIGKILL');
      await dead;
      const killedAt = Date.now();
      for (const w of workers) if (w !== victim) w.proc.stdin?.write('release\n');

      // Both of its jobs are started again elsewhere, after the lock lapsed, and done there.
      const restarted = await Promise.all(
        held.map((id) => waitFor(new RegExp(`^done (?!${victim.name})\\w+ ${id}$`))),
      );
      const tookMs = Date.now() - killedAt;
      expect(restarted).toHaveLength(2);
      expect(tookMs).toBeGreaterThanOrEqual(LOCK_MS - 1_000); // not before the dead worker's lock lapsed
      await until(() => (seen.filter((l) => l.startsWith('done ')).length >= JOBS ? true : undefined));
      for (let i = 0; i < JOBS; i++) expect((await queue.getJob(`job-${i}`))?.data).toEqual({ i });
      await expect
        .poll(() => queue.getJobCounts('completed', 'failed', 'active', 'wait'))
        .toEqual({
          completed: JOBS,
          failed: 0,
          active: 0,
          wait: 0,
        });
      expect(await total()).toBe(JOBS);
      const doneLines = seen.filter((l) => l.startsWith('done '));
      expect(new Set(doneLines.map((l) => l.split(' ')[2])).size).toBe(JOBS);
      console.log(
        `jobs of the killed worker done elsewhere ${tookMs} ms after its death (lockDuration ${LOCK_MS} ms)`,
      );
    } finally {
      await queue.close();
    }
  });
});
