/**
 * `--log-file`: a child `genpipe run --json` against the test's emulator writes every stage with an ISO
 * time, the options (secrets masked) and the client's retry notes to the log file as it goes, so that a
 * SIGKILL leaves everything up to the moment it came; a re-run appends behind a separator naming it; a
 * log file that cannot be opened is a usage error before anything runs.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { call, hold, KEY, startTestEmulator, testConfig, unhold, until } from '../helpers/emulator.ts';
import { killChildren, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;
const dirs: string[] = [];

/** A password in a URL option the run records but never uses. */
const PASSWORD = 'hunter2-store-pw';
const STORE_LIKE_URL = `http://bob:${PASSWORD}@127.0.0.1:9/legacy`;

beforeAll(async () => {
  // One job at a time for the client: the second create is answered 429 and retried (a note).
  const base = testConfig();
  const clients = (base.clients as Array<Record<string, unknown>>).map((c) => ({ ...c, concurrency: 1 }));
  emu = await startTestEmulator({ clients });
});

afterEach(async () => {
  killChildren();
  await unhold(emu);
});

afterAll(async () => {
  killChildren();
  await emu?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'genpipe-log-file-'));
  dirs.push(d);
  return d;
}

// biome-ignore lint/suspicious/noExplicitAny: admin views are read loosely
async function admin(path: string): Promise<any> {
  return (await call(emu, 'GET', path, { key: null })).body;
}

const ISO = String.raw`\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\]`;

describe('--log-file', () => {
  it('holds every line up to a SIGKILL, and a re-run appends behind its own separator', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small a fox', 'b.txt': 'a small b fox' });
    const log = join(tempDir(), 'run.log');
    await hold(emu); // the first job stays processing: the child polls it, the second create waits
    const args = [
      ...['run', input, '--out', out, '--json', '--concurrency', '2', '--log-file', log],
      ...['--api-key', KEY, '--legacy-base-url', STORE_LIKE_URL],
    ];
    const child = spawnGenpipe(args, cliEnv(emu));
    await child.until((es) => es.some((e) => e.state === 'submitted'), 'a submitted file');
    const submitted = child.events.find((e) => e.state === 'submitted')!.input!;
    // The second create met the concurrency limit (the client logs its retry then); reads of the held
    // job that came after that answer show the child's event loop went on past the turn of the note.
    await until(async () => ((await admin('/_emulator/stats')).rate_limited.concurrency ?? 0) >= 1);
    const readsThen = (await admin('/_emulator/generations')).data[0].reads as number;
    await until(async () => (await admin('/_emulator/generations')).data[0].reads >= readsThen + 2);
    child.proc.kill('SIGKILL');
    expect((await child.exited).signal).toBe('SIGKILL');

    const killed = readFileSync(log, 'utf8');
    const lines = killed.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^==== genpipe \d+\.\d+\.\d+ run, started \S+Z, pid \d+ ====$/);
    expect(lines[1]).toMatch(new RegExp(`^${ISO} options: \\{"command":"run"`));
    // The flags by the names status --json gives them (snake_case), the URL without its password.
    expect(lines[1]).toContain('"legacy_base_url":"http://bob@127.0.0.1:9/legacy"');
    expect(killed).toMatch(new RegExp(`${ISO} run: `));
    // Every stage, as -v gives it, although stdout showed --json.
    for (const state of ['discovered', 'sniffed', 'planned', 'checked', 'submitted']) {
      expect(killed).toMatch(new RegExp(`${ISO} ${submitted.replace('.', '\\.')}: ${state}`));
    }
    expect(killed).toMatch(new RegExp(`${ISO} note: retrying POST /v1/generations .*after 429`));
    expect(killed).not.toContain('finished:');

    // The re-run finishes the batch and appends (the create killed on its way may be sent again).
    await unhold(emu);
    const again = spawnGenpipe([...args, '--resubmit-unknown'], cliEnv(emu));
    expect((await again.exited).code, again.stderr()).toBe(0);
    const all = readFileSync(log, 'utf8');
    expect(all.startsWith(killed)).toBe(true);
    const separators = all.split('\n').filter((l) => l.startsWith('==== genpipe '));
    expect(separators).toHaveLength(2);
    expect(separators[0]).not.toBe(separators[1]); // each names its own run (start time, pid)
    expect(all).toMatch(new RegExp(`${ISO} finished: 2 inputs, 2 succeeded, 0 failed`));
    expect(all).toMatch(new RegExp(`${ISO} genpipe: 2 files: 2 succeeded, 0 failed, 0 skipped`));
    expect(all).toContain('http://bob@127.0.0.1:9/legacy'); // recorded without its password
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain(KEY);
  }, 120_000);

  it('refuses a log file that cannot be opened before anything runs', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small a fox' });
    const missing = join(tempDir(), 'no-such-folder', 'run.log');
    const r = await runCli(['run', input, '--out', out, '--log-file', missing], cliEnv(emu));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `--log-file '${missing}' cannot be opened for appending: its folder does not exist`,
    );
    expect(existsSync(out)).toBe(false);

    const folder = tempDir();
    const json = await runCli(['watch', input, '--out', out, '--json', '--log-file', folder], cliEnv(emu));
    expect(json.code).toBe(2);
    const error = JSON.parse(json.stderr.trim()).error;
    expect(error.code).toBe('GENPIPE_USAGE');
    expect(error.message).toContain('it is a folder');
    expect(existsSync(out)).toBe(false);
  }, 60_000);
});
