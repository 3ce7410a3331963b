/**
 * Secrets and the user's own names: a child `genpipe run` against the test's emulator keeps file names
 * shaped like an API key as they are (report.json, report.html, stdout, the log) while the known
 * secrets stay masked; a password in the base URL is not part of a file's recipe (changing it re-runs
 * nothing) and is not stored in the journal; the log names each generation; a 401 says its reason once;
 * a log file that cannot be opened ends with the usage hint.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { KEY, startTestEmulator } from '../helpers/emulator.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { type CliResult, cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
let emu: RunningEmulator;
const dirs: string[] = [];

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'genpipe-secret-names-'));
  dirs.push(d);
  return d;
}

/** The totals of a `--json` run's batch_finished line. */
function totals(r: CliResult): Record<string, number> {
  const lines = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return lines.find((e) => e.type === 'batch_finished').totals;
}

function allFiles(dir: string): string {
  const out: string[] = [];
  for (const name of ['report.json', 'report.html']) {
    const p = join(dir, name);
    if (existsSync(p)) out.push(readFileSync(p, 'utf8'));
  }
  return out.join('\n');
}

describe('key-shaped file names', () => {
  it('are kept as they are in the reports, on stdout and in the log; the known key is masked', async () => {
    const a = 'svc-api-mykey1234567890abcdef';
    const b = 'svc-api-otherkey99999999999';
    const { input, out } = promptFolder({ [`${a}.txt`]: 'a small fox', [`${b}.txt`]: 'a small owl' });
    const log = join(tempDir(), 'run.log');
    const r = await runCli(['run', input, '--out', out, '--log-file', log, '--api-key', KEY], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    const inputs = report.items.map((i: { input: string }) => i.input).sort();
    expect(inputs).toEqual([`${a}.txt`, `${b}.txt`]);
    const places = report.items.map((i: { place: string }) => i.place);
    expect(new Set(places).size).toBe(2);
    for (const p of places) expect(p).not.toContain('[redacted]');
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain(a);
    expect(html).toContain(b);
    const printed = `${r.stdout}\n${r.stderr}`;
    expect(printed).toContain(`${a}.txt`);
    const logText = readFileSync(log, 'utf8');
    expect(logText).toContain(`${a}.txt`);
    expect(logText).toContain(`${b}.txt`);
    for (const text of [allFiles(out), printed, logText]) {
      expect(text).not.toContain(KEY);
      expect(text).not.toContain('[redacted]');
    }
  }, 90_000);
});

describe('a password in the base URL', () => {
  it('is not part of the recipe (changing it re-runs nothing) and is not kept in the journal', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox', 'b.txt': 'a small owl' });
    const port = new URL(emu.url).port;
    const password = 's3cretPASS-in-url';
    const withPw = cliEnv(emu, { GENPIPE_BASE_URL: `http://alice:${password}@127.0.0.1:${port}` });
    const first = await runCli(['run', input, '--out', out, '--json'], withPw);
    expect(first.code, first.stderr).toBe(0);
    expect(totals(first).succeeded).toBe(2);
    const plain = cliEnv(emu, { GENPIPE_BASE_URL: `http://127.0.0.1:${port}/` });
    const second = await runCli(['run', input, '--out', out, '--json'], plain);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout + second.stderr).not.toContain('processed again');
    expect(totals(second).succeeded).toBe(2);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report.journal.reused).toBe(2);
    expect(report.journal.redone).toBe(0);
    const journal = readFileSync(join(out, '.genpipe', 'journal.db'));
    expect(journal.includes('alice')).toBe(false);
    expect(journal.includes(password)).toBe(false);
  }, 90_000);
});

describe('credentials given as flags', () => {
  it('a password in --base-url and the legacy token are neither stored in the journal nor printed by status --json', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const port = new URL(emu.url).port;
    const password = 'pw-in-url-7';
    const token = 'legacy-token-secret-4242';
    const r = await runCli(
      [
        'run',
        input,
        '--out',
        out,
        '--base-url',
        `http://alice:${password}@127.0.0.1:${port}`,
        '--legacy-base-url',
        `http://bob:${password}@127.0.0.1:${port}/dream-machine/v1`,
        '--legacy-token',
        token,
        '--json',
      ],
      cliEnv(emu),
    );
    expect(r.code, r.stderr).toBe(0);
    const db = join(out, '.genpipe', 'journal.db');
    const stored = [db, `${db}-wal`].filter(existsSync).map((f) => readFileSync(f).toString('latin1'));
    expect(stored.join('\n')).toContain(`127.0.0.1:${port}`);
    const status = await runCli(['status', out, '--json'], cliEnv(emu));
    expect(status.code, status.stderr).toBe(0);
    const options = JSON.parse(status.stdout).last_batch.options;
    expect(options.base_url).toBe(`http://alice@127.0.0.1:${port}`);
    expect(options.legacy_base_url).toBe(`http://bob@127.0.0.1:${port}/dream-machine/v1`);
    expect(options).not.toHaveProperty('legacy_token');
    for (const text of [...stored, status.stdout]) {
      expect(text).not.toContain(password);
      expect(text).not.toContain(token);
    }
  }, 90_000);
});

describe('the log', () => {
  it('names the generation on its submitted and done lines', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const log = join(tempDir(), 'run.log');
    const r = await runCli(['run', input, '--out', out, '--log-file', log, '--json'], cliEnv(emu));
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    const gen = report.items[0].generation_id as string;
    expect(gen).toBeTruthy();
    const submitted = readFileSync(log, 'utf8')
      .split('\n')
      .find((l) => l.includes('submitted'));
    expect(submitted).toContain(gen);
  }, 60_000);

  it('that cannot be opened is refused with the usage hint', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    const missing = join(tempDir(), 'no-such-folder', 'run.log');
    const r = await runCli(['run', input, '--out', out, '--log-file', missing], cliEnv(emu));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Run 'genpipe run --help' for usage.");
  }, 60_000);
});

describe('a refused API key', () => {
  it('says why once', async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a small fox' });
    writeFileSync(join(input, 'b.txt'), 'a small owl');
    const r = await runCli(
      ['run', input, '--out', out],
      cliEnv(emu, { GENPIPE_API_KEY: 'svc-api-wrong-key-zz' }),
    );
    expect(r.code).not.toBe(0);
    expect(r.stderr).not.toMatch(/authentication failed: authentication failed/i);
    expect(r.stderr).toMatch(/authentication failed/i);
    expect(r.stderr).not.toContain('svc-api-wrong-key-zz');
  }, 60_000);
});
