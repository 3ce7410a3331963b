/**
 * `--store <url>` / GENPIPE_STORE: run, watch's journal and status in a PostgreSQL store (an embedded
 * server, test/helpers/postgres.ts) instead of the journal file, with real child processes against the
 * emulator over loopback. The URL's password appears in no output: stdout, stderr, --json, the log
 * file, report.json, report.html, status, nor the errors of a store that cannot be reached.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pgClient from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import {
  adminRows,
  call,
  closedPort,
  hold,
  KEY,
  KEY_B,
  startTestEmulator,
  unhold,
} from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const pg = usePostgres();
const promptFolder = usePromptFolders();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});
afterAll(async () => {
  killChildren();
  await emu?.close();
});

const password = () => decodeURIComponent(new URL(pg.url()).password);

/** Every text a run left: its outputs, and its report and log files when present. */
function everything(out: string, ...texts: string[]): string {
  const files = [join(out, 'report.json'), join(out, 'report.html'), join(dirname(out), 'run.log')].filter(
    existsSync,
  );
  return [...texts, ...files.map((f) => readFileSync(f, 'utf8'))].join('\n');
}

describe('genpipe run --store <postgres url>', () => {
  it('runs a folder with its journal in the store; status --store reads it; the password shows nowhere', async () => {
    expect(password().length).toBeGreaterThan(10);
    const { input, out } = promptFolder({ 'a.txt': 'a store fox', 'b.txt': 'a store owl' });
    const log = join(dirname(out), 'run.log');
    // The service URL carries a password too: it is stored nowhere either.
    const baseUrl = new URL(emu.url);
    baseUrl.username = 'alice';
    baseUrl.password = 'base-url-pw-5';
    const run = await runCli(
      [
        'run',
        input,
        '--out',
        out,
        '--store',
        pg.url(),
        '--json',
        '--log-file',
        log,
        '--base-url',
        baseUrl.href,
      ],
      cliEnv(emu),
      60_000,
    );
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.totals).toMatchObject({ inputs: 2, succeeded: 2 });
    expect(report.journal.file).toMatch(
      /^postgres:\/\/genpipe:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/test_\d+_\d+ \(schema genpipe\)$/,
    );
    expect(existsSync(join(out, '.genpipe', 'journal.db'))).toBe(false);

    // A second run finds both done in the store.
    const again = await runCli(['run', input, '--out', out, '--store', pg.url()], cliEnv(emu), 60_000);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(
      /enqueued 2 files in the store's queue: 0 new, 2 already queued or done \(store postgres:\/\/genpipe:(\*\*\*|\[redacted\])@127/,
    );

    const status = await runCli(['status', out, '--store', pg.url()], cliEnv(emu));
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(
      /journal postgres:\/\/genpipe:(\*\*\*|\[redacted\])@127\.0\.0\.1:\d+\/test_\d+_\d+ \(schema genpipe\)$/m,
    );
    // The run and each worker session of the out dir record a batch of their own.
    expect(status.stdout).toMatch(/last batch: #\d+ of \d+, finished/);
    expect(status.stdout).toContain('inputs in the journal: 2');
    expect(status.stdout).toMatch(/^ +2 done$/m);
    const json = await runCli(['status', out, '--store', pg.url(), '--json'], cliEnv(emu));
    expect(JSON.parse(json.stdout)).toMatchObject({ inputs: 2, by_kind: { done: 2 } });
    const client = new pgClient.Client({ connectionString: pg.url() });
    await client.connect();
    const stored = await client.query('SELECT options FROM genpipe.batches').finally(() => client.end());
    const storedText = JSON.stringify(stored.rows);
    expect(storedText).toContain('alice@127.0.0.1');
    expect(storedText).not.toContain('base-url-pw-5');
    expect(storedText).not.toContain(password());

    const all = everything(
      out,
      run.stdout,
      run.stderr,
      again.stdout,
      again.stderr,
      status.stdout,
      json.stdout,
    );
    expect(all).toMatch(/genpipe:(\*\*\*|\[redacted\])@/);
    expect(all).not.toContain(password());
    expect(all).not.toContain('base-url-pw-5');
  }, 120_000);

  it('takes the store from GENPIPE_STORE, for run and status alike', async () => {
    const { input, out } = promptFolder({ 'c.txt': 'an env fox' });
    const env = cliEnv(emu, { GENPIPE_STORE: pg.url() });
    const run = await runCli(['run', input, '--out', out], env, 60_000);
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(join(out, '.genpipe', 'journal.db'))).toBe(false);
    const status = await runCli(['status', out], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^ +1 done$/m);
    expect(everything(out, run.stdout, run.stderr, status.stdout)).not.toContain(password());
  }, 90_000);

  it('genpipe watch keeps its journal in the store too', async () => {
    const { input, out } = promptFolder({ 'w.txt': 'a watched fox' });
    const env = cliEnv(emu, { GENPIPE_STORE: pg.url() });
    const watch = spawnGenpipe(['watch', input, '--out', out, '--json', '--quiet-ms', '200'], env);
    await watch.until(
      (ev) => ev.some((e) => e.type === 'item_state' && e.state === 'reported' && e.input === 'w.txt'),
      'w.txt reported',
    );
    watch.proc.kill('SIGTERM');
    expect((await watch.exited).code, watch.stderr()).toBe(0);
    expect(existsSync(join(out, '.genpipe', 'journal.db'))).toBe(false);
    const status = await runCli(['status', out], env);
    expect(status.code, status.stderr).toBe(0);
    // The watch and its own worker's session of the out dir each record a batch.
    expect(status.stdout).toMatch(/last batch: #\d+ of \d+, (stopped|finished)/);
    expect(status.stdout).toMatch(/^ +1 done$/m);
    expect(everything(out, watch.stdout(), watch.stderr(), status.stdout)).not.toContain(password());
  }, 90_000);

  it('after kill -9 mid-batch, a re-run with the same store collects what was paid for, creating nothing twice', async () => {
    const { input, out } = promptFolder({
      'k1.txt': 'a kill fox',
      'k2.txt': 'a kill owl',
      'k3.txt': 'a kill cat',
    });
    const env = cliEnv(emu, { GENPIPE_API_KEY: KEY_B, GENPIPE_STORE: pg.url() });
    const held = await hold(emu, { client: 'b' });
    // Run alone (--no-distribute): the out dir's lock is this mode's own.
    const first = spawnGenpipe(['run', input, '--out', out, '--json', '--no-distribute'], env);
    await first.until(
      (ev) => ev.filter((e) => e.type === 'item_state' && e.state === 'submitted').length === 3,
      'three submitted events',
    );
    // While it holds the out dir, a second runner with the same store is refused, naming it.
    const second0 = await runCli(['run', input, '--out', out, '--no-distribute'], env, 30_000);
    expect(second0.code, second0.stderr).toBe(2);
    expect(second0.stderr).toContain(`pid ${first.proc.pid}`);
    first.proc.kill('SIGKILL');
    await first.exited;
    await unhold(emu, held);
    expect(await adminRows(emu, 'b')).toHaveLength(3);

    const status = await runCli(['status', out], env);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/interrupted \(its runner, pid \d+, is gone\)/);
    expect(status.stdout).toMatch(/^ +3 at the service$/m);

    const second = await runCli(['run', input, '--out', out, '--no-distribute'], env, 60_000);
    expect(second.code, second.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.totals).toMatchObject({ inputs: 3, succeeded: 3 });
    const gens = await adminRows(emu, 'b');
    expect(gens).toHaveLength(3);
    expect(report.items.map((i: { generation_id: string }) => i.generation_id).sort()).toEqual(
      gens.map((g) => g.id).sort(),
    );
    expect(everything(out, first.stdout(), first.stderr(), status.stdout, second.stderr)).not.toContain(
      password(),
    );
  }, 120_000);

  it('two runs on one key with one store share its request window: 30 creates against 20 per 5 s, at most one 429', async () => {
    const limited = await startTestEmulator({
      clients: [{ id: 'a', rpm: 20, concurrency: 100 }],
      keys: [{ key: KEY, client: 'a' }],
      rate_window_s: 5,
    });
    try {
      const folders = [0, 1].map((n) =>
        promptFolder(
          Object.fromEntries(
            Array.from({ length: 15 }, (_, i) => [`s${n}-${i}.txt`, `a shared fox ${n} ${i}`]),
          ),
        ),
      );
      const env = cliEnv(limited, { GENPIPE_STORE: pg.url() });
      const runs = await Promise.all(
        folders.map(({ input, out }) => runCli(['run', input, '--out', out, '--json'], env, 120_000)),
      );
      for (const r of runs) expect(r.code, r.stderr).toBe(0);
      for (const { out } of folders) {
        expect(JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')).totals).toMatchObject({
          inputs: 15,
          succeeded: 15,
        });
      }
      const stats = (await call(limited, 'GET', '/_emulator/stats', { key: null })).body;
      expect(stats.rate_limited.rpm).toBeLessThanOrEqual(1);
      // The key is in the store only as its fingerprint.
      const rows = JSON.stringify((await adminRowsOf(pg.url())).map((r) => Object.values(r)));
      expect(rows).not.toContain(KEY);
    } finally {
      await limited.close();
    }
  }, 180_000);

  it('refuses --store with --journal, a URL of another scheme, and --dry-run, with exit 2', async () => {
    const { input, out } = promptFolder({ 'd.txt': 'a refused fox' });
    const both = await runCli(
      ['run', input, '--out', out, '--store', pg.url(), '--journal', join(out, 'j.db')],
      cliEnv(emu),
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--journal and --store both say where the journal is: give one/);
    const mysql = await runCli(
      ['run', input, '--out', out, '--store', 'mysql://u:hushhush-9@db/x'],
      cliEnv(emu),
    );
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toContain('not a store URL genpipe knows; use a postgres:// or postgresql:// URL');
    expect(mysql.stderr).not.toContain('hushhush-9');
    // A password with : and / not percent-encoded breaks the URL: the refusal says how to write it.
    const unencoded = await runCli(
      ['run', input, '--out', out, '--store', 'postgres://genpipe:hush:9/x@127.0.0.1:1/db'],
      cliEnv(emu),
    );
    expect(unencoded.code).toBe(2);
    expect(unencoded.stderr).toMatch(/must be percent-encoded \(@ as %40/);
    expect(unencoded.stderr).not.toContain('hush:9');
    const dry = await runCli(
      ['run', input, '--out', out, '--dry-run'],
      cliEnv(emu, { GENPIPE_STORE: pg.url() }),
    );
    expect(dry.code).toBe(2);
    expect(dry.stderr).toMatch(/--dry-run does not read a PostgreSQL store yet/);
    expect([both, mysql, dry].map((r) => r.stdout + r.stderr).join('\n')).not.toContain(password());
  }, 60_000);

  it('a store that cannot be reached or refuses the password: exit 3, the URL named with its password hidden', async () => {
    const { input, out } = promptFolder({ 'e.txt': 'an unreachable fox' });
    const port = await closedPort();
    const unreachable = `postgres://genpipe:closed-port-secret-77@127.0.0.1:${port}/db`;
    const r1 = await runCli(['run', input, '--out', out, '--store', unreachable, '--json'], cliEnv(emu));
    expect(r1.code).toBe(3);
    expect(r1.stderr).toContain(
      `cannot connect to the store at postgres://genpipe:[redacted]@127.0.0.1:${port}/db: `,
    );
    expect(r1.stderr).toContain('ECONNREFUSED');
    const wrong = new URL(pg.url());
    wrong.password = 'wrong-password-secret-88';
    const r2 = await runCli(['run', input, '--out', out, '--store', wrong.toString()], cliEnv(emu));
    expect(r2.code).toBe(3);
    expect(r2.stderr).toMatch(
      /cannot connect to the store at postgres:\/\/genpipe:\[redacted\]@127\.0\.0\.1:\d+\/test_\d+_\d+: .*password/,
    );
    const r3 = await runCli(['status', out, '--store', unreachable], cliEnv(emu));
    expect(r3.code).toBe(3);
    const all = [r1, r2, r3].map((r) => r.stdout + r.stderr).join('\n');
    for (const secret of ['closed-port-secret-77', 'wrong-password-secret-88', password()]) {
      expect(all).not.toContain(secret);
    }
  }, 60_000);
});

/** Every row of the store's quota tables. */
async function adminRowsOf(url: string): Promise<Record<string, unknown>[]> {
  const client = new pgClient.Client({ connectionString: url });
  await client.connect();
  try {
    const out: Record<string, unknown>[] = [];
    for (const table of ['key_quotas', 'key_requests', 'key_job_slots']) {
      out.push(...(await client.query(`SELECT * FROM genpipe.${table}`)).rows);
    }
    return out;
  } finally {
    await client.end();
  }
}
