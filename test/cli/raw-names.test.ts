/**
 * Files whose names are not valid UTF-8 (Latin-1 names from an old share: `caf\xe9.txt`, or a file in
 * such a folder) cannot be opened by a string path: each is a failed file with a reason naming it
 * escaped, in `run`, its dry run, `watch` and its dry run — counted in the summary and the exit code,
 * listed in report.json with a result.json — never a file that silently vanishes. Names are made with
 * Buffer paths; `genpipe` runs as a child process against the test's emulator.
 */
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { startTestEmulator } from '../helpers/emulator.ts';
import { usePostgres } from '../helpers/postgres.ts';
import { type ChildEvent, spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { type CliResult, cliEnv, runCli } from './run-cli.ts';

const promptFolder = usePromptFolders();
const pg = usePostgres();
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator();
});

afterAll(async () => {
  await emu?.close();
});

const FILE = "caf$'\\xe9'.txt";
const FILE_REASON = `file name is not valid UTF-8: ${FILE}; rename it`;
const IN_FOLDER = "d$'\\xe8'/x.txt";
const FOLDER_REASON = "folder name is not valid UTF-8: d$'\\xe8'; rename it";

/** A prompt folder with `ok.txt`, `caf<0xe9>.txt` and `d<0xe8>/x.txt` (Latin-1 names). */
function latin1Folder(): { input: string; out: string } {
  const { input, out } = promptFolder({ 'ok.txt': 'a small cat' });
  const bytes = (...parts: Array<string | number>) =>
    Buffer.concat(parts.map((p) => (typeof p === 'number' ? Buffer.from([p]) : Buffer.from(p))));
  writeFileSync(bytes(input, '/caf', 0xe9, '.txt'), 'a cafe at dawn');
  mkdirSync(bytes(input, '/d', 0xe8));
  writeFileSync(bytes(input, '/d', 0xe8, '/x.txt'), 'a fish');
  return { input, out };
}

// biome-ignore lint/suspicious/noExplicitAny: tests read reports loosely
function readJson(path: string): any {
  return JSON.parse(readFileSync(path, 'utf8'));
}

it('genpipe run fails each such file naming it, counts it and exits 1; a re-run says the same', async () => {
  const { input, out } = latin1Folder();
  for (const attempt of [1, 2]) {
    const r = await runCli(['run', input, '--out', out, '--poll-interval', '1'], cliEnv(emu), 60_000);
    expect(r.code, `run ${attempt}: ${r.stderr}${r.stdout}`).toBe(1);
    expect(r.stdout).toContain(`${FILE}: failed at sniff: ${FILE_REASON}`);
    expect(r.stdout).toContain(`${IN_FOLDER}: failed at sniff: ${FOLDER_REASON}`);
    expect(r.stderr).toContain('genpipe: 3 files: 1 succeeded, 2 failed, 0 skipped');
  }
  const report = readJson(join(out, 'report.json'));
  expect(report.totals).toMatchObject({ inputs: 3, succeeded: 1, failed: 2 });
  // biome-ignore lint/suspicious/noExplicitAny: tests read reports loosely
  const byInput = new Map<string, any>(report.items.map((i: { input: string }) => [i.input, i]));
  expect(byInput.get(FILE)).toMatchObject({ status: 'failed', stage: 'sniff', reason: FILE_REASON });
  expect(byInput.get(IN_FOLDER)).toMatchObject({ status: 'failed', reason: FOLDER_REASON });
  const result = readJson(join(out, byInput.get(FILE).result));
  expect(result).toMatchObject({ input: FILE, status: 'failed', reason: FILE_REASON });
}, 150_000);

it('genpipe run --dry-run says each such file would fail, and why', async () => {
  const { input, out } = latin1Folder();
  const r = await runCli(['run', input, '--out', out, '--dry-run'], cliEnv(emu), 60_000);
  expect(r.code, r.stderr).toBe(1);
  expect(r.stdout).toContain(`${FILE}: would fail at sniff: ${FILE_REASON}`);
  expect(r.stdout).toContain(`${IN_FOLDER}: would fail at sniff: ${FOLDER_REASON}`);
  expect(r.stderr).toContain('dry run: 3 files: 1 would be sent, 2 would fail');
}, 60_000);

/** The last item_state of `input` is failed with `reason`. */
function failedWith(input: string, reason: string): (es: ChildEvent[]) => boolean {
  return (es) => es.some((e) => e.input === input && e.state === 'failed' && e.reason === reason);
}

it('genpipe watch fails each such file once, naming it, and counts it', async () => {
  const { input, out } = latin1Folder();
  const child = spawnGenpipe(
    ['watch', input, '--out', out, '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
    cliEnv(emu),
  );
  await child.until(failedWith(FILE, FILE_REASON), 'caf\\xe9.txt failed', 60_000);
  await child.until(failedWith(IN_FOLDER, FOLDER_REASON), 'd\\xe8/x.txt failed', 60_000);
  await child.until(
    (es) => es.some((e) => e.input === 'ok.txt' && e.state === 'reported'),
    'ok.txt reported',
    60_000,
  );
  // Rescans go on finding it while a later file settles: it is handed over once.
  writeFileSync(join(input, 'later.txt'), 'a late owl');
  await child.until(
    (es) => es.some((e) => e.input === 'later.txt' && e.state === 'reported'),
    'later.txt reported',
    60_000,
  );
  child.proc.kill('SIGTERM');
  await child.exited;
  const failures = child.events.filter((e) => e.input === FILE && e.state === 'failed');
  expect(failures).toHaveLength(1);
  expect(child.stderr()).toContain('4 files: 2 succeeded, 2 failed, 0 skipped');
}, 90_000);

it('genpipe watch --dry-run says each such file would fail, and why', async () => {
  const { input, out } = latin1Folder();
  const child = spawnGenpipe(
    ['watch', input, '--out', out, '--dry-run', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
    cliEnv(emu),
  );
  const told = (name: string) => (es: ChildEvent[]) =>
    es.some((e) => e.type === 'dry_run_item' && e.input === name);
  await child.until(told(FILE), 'the dry run of caf\\xe9.txt');
  await child.until(told(IN_FOLDER), 'the dry run of d\\xe8/x.txt');
  child.proc.kill('SIGTERM');
  await child.exited;
  const item = child.events.find((e) => e.type === 'dry_run_item' && e.input === FILE);
  expect(item).toMatchObject({ outcome: 'fail', reason: FILE_REASON });
}, 60_000);

it('genpipe run --store (distributed) fails each such file naming it, gives it no job, and exits 1', async () => {
  const url = await pg.freshDatabase();
  const { input, out } = latin1Folder();
  const r = await runCli(['run', input, '--out', out, '--store', url], cliEnv(emu), 120_000);
  expect(r.code, r.stderr + r.stdout).toBe(1);
  expect(r.stderr).toMatch(/enqueued 1 file in the store's queue/);
  expect(r.stdout).toContain(`${FILE}: failed at sniff: ${FILE_REASON}`);
  expect(r.stderr).toContain('genpipe: 3 files: 1 succeeded, 2 failed, 0 skipped');
  const report = readJson(join(out, 'report.json'));
  expect(report.items.find((i: { input: string }) => i.input === FILE)).toMatchObject({
    status: 'failed',
    reason: FILE_REASON,
  });
}, 150_000);

it('genpipe run tells such a file from files whose names print as its escaped name: each its own place and result', async () => {
  // A file literally named `caf\xe9.txt` (as the Latin-1 name's bytes read) and `caf%5Cxe9.txt`, the
  // place a literal `caf\xe9.txt` is given, here the name of a third file.
  const { input, out } = promptFolder({ 'caf\\xe9.txt': 'a cafe', 'caf%5Cxe9.txt': 'a bar' });
  writeFileSync(Buffer.concat([Buffer.from(`${input}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]), 'x');
  const r = await runCli(['run', input, '--out', out, '--poll-interval', '1'], cliEnv(emu), 60_000);
  expect(r.code, r.stderr + r.stdout).toBe(1);
  expect(r.stdout).toContain(`${FILE}: failed at sniff: ${FILE_REASON}`);
  expect(r.stderr).toContain('genpipe: 3 files: 2 succeeded, 1 failed, 0 skipped');
  const report = readJson(join(out, 'report.json'));
  expect(report.totals).toMatchObject({ inputs: 3, succeeded: 2, failed: 1 });
  const places = report.items.map((i: { place: string }) => i.place);
  expect(new Set(places).size).toBe(3);
  const failed = report.items.find((i: { status: string }) => i.status === 'failed');
  expect(failed).toMatchObject({ input: FILE, reason: FILE_REASON });
  expect(readJson(join(out, failed.result))).toMatchObject({ status: 'failed', reason: FILE_REASON });
}, 150_000);

it('genpipe run prints such a name unlike the valid name its bytes look like, which keeps its own folder', async () => {
  // A file literally named `caf\xe9.txt` (a backslash, an x, an e and a 9) beside the Latin-1 `caf<E9>.txt`.
  const { input, out } = promptFolder({ 'caf\\xe9.txt': 'a cafe' });
  writeFileSync(Buffer.concat([Buffer.from(`${input}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]), 'x');
  const r = await runCli(['run', input, '--out', out, '--poll-interval', '1'], cliEnv(emu), 60_000);
  expect(r.code, r.stderr + r.stdout).toBe(1);
  expect(r.stdout).toContain(`${FILE}: failed at sniff: ${FILE_REASON}`);
  expect(r.stdout).toContain('caf\\xe9.txt: reported');
  expect(r.stdout).not.toContain('caf\\xe9.txt: failed');
  const report = readJson(join(out, 'report.json'));
  const inputs = report.items.map((i: { input: string }) => i.input);
  expect(new Set(inputs).size).toBe(2);
  expect(inputs.sort()).toEqual([FILE, 'caf\\xe9.txt'].sort());
  const real = report.items.find((i: { input: string }) => i.input === 'caf\\xe9.txt');
  expect(real).toMatchObject({ status: 'succeeded', place: 'caf%5Cxe9.txt' });
  const raw = report.items.find((i: { input: string }) => i.input === FILE);
  expect(raw).toMatchObject({ status: 'failed', place: '.not-utf8/caf%E9.txt' });
  expect(readJson(join(out, raw.result))).toMatchObject({ input: FILE, status: 'failed' });
  const html = readFileSync(join(out, 'report.html'), 'utf8');
  expect(html).toContain(JSON.stringify(FILE).slice(1, -1));
}, 150_000);

/** `genpipe <args>` run by a shell in `cwd` (see runCli), against the test's emulator. */
function shellCli(args: string, cwd: string): Promise<CliResult> {
  return runCli(args, cliEnv(emu), 30_000, undefined, { cwd });
}

it('genpipe files upload, generate --source, run and watch name such a path, and a symbolic link loop as one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'genpipe-raw-args-'));
  try {
    writeFileSync(Buffer.from(`${dir}/caf\xe9.png`, 'latin1'), 'not looked at');
    mkdirSync(Buffer.from(`${dir}/d\xe8`, 'latin1'));
    writeFileSync(Buffer.from(`${dir}/d\xe8/x.png`, 'latin1'), 'not looked at');
    symlinkSync('loop2', join(dir, 'loop1'));
    symlinkSync('loop1', join(dir, 'loop2'));
    const stats = async () => {
      const { files, generations } = await (await fetch(`${emu.url}/_emulator/stats`)).json();
      return JSON.stringify({ files, generations });
    };
    const before = await stats();
    const up = await shellCli(`files upload "$(printf 'caf\\351.png')"`, dir);
    expect(up.code, up.stderr).toBe(1);
    expect(up.stderr).toContain("files upload: file name is not valid UTF-8: caf$'\\xe9'.png; rename it");
    const inFolder = await shellCli(`files upload "$(printf 'd\\350/x.png')"`, dir);
    expect(inFolder.code, inFolder.stderr).toBe(1);
    expect(inFolder.stderr).toContain("files upload: folder name is not valid UTF-8: d$'\\xe8'; rename it");
    const source = await shellCli(
      `generate --type image_edit --prompt x --source "$(printf 'caf\\351.png')"`,
      dir,
    );
    expect(source.code, source.stderr).toBe(1);
    expect(source.stderr).toContain("--source: file name is not valid UTF-8: caf$'\\xe9'.png; rename it");
    expect(await stats()).toBe(before); // nothing uploaded or sent
    const loop = await shellCli('files upload loop1', dir);
    expect(loop.code, loop.stderr).toBe(2);
    expect(loop.stderr).toContain("files upload: 'loop1' is a symbolic link loop");
    const loopSource = await shellCli('generate --type image_edit --prompt x --source loop1', dir);
    expect(loopSource.stderr).toContain("--source: 'loop1' is a symbolic link loop");
    // The input dir of run and watch, the same.
    mkdirSync(Buffer.from(`${dir}/in\xe9`, 'latin1'));
    const run = await shellCli(`run "$(printf 'in\\351')" --out out`, dir);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(
      /input dir: the path holds a byte sequence that is not valid UTF-8 \(or U\+FFFD\).*: folder name is not valid UTF-8: \S*in\$'\\xe9'; rename it/,
    );
    const watchLoop = await shellCli('watch loop1 --out out', dir);
    expect(watchLoop.code, watchLoop.stderr).toBe(2);
    expect(watchLoop.stderr).toMatch(/input dir '\S*loop1' is a symbolic link loop/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

it('genpipe watch --on-done move files such a file in failed/ under its own bytes, and its look-alike in processed/', async () => {
  const { input, out } = promptFolder({ 'caf\\xe9.txt': 'a cafe' });
  writeFileSync(Buffer.concat([Buffer.from(`${input}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]), 'x');
  const child = spawnGenpipe(
    ['watch', input, '--out', out, '--on-done', 'move', '--json', '--quiet-ms', '200', '--rescan-ms', '300'],
    cliEnv(emu),
  );
  await child.until(failedWith(FILE, FILE_REASON), 'caf\\xe9.txt failed', 60_000);
  await child.until(
    (es) => es.some((e) => e.input === 'caf\\xe9.txt' && e.state === 'reported'),
    'the look-alike reported',
    60_000,
  );
  child.proc.kill('SIGTERM');
  await child.exited;
  const beside = join(input, '..');
  const failedRaw = Buffer.concat([
    Buffer.from(`${beside}/failed/caf`),
    Buffer.from([0xe9]),
    Buffer.from('.txt'),
  ]);
  expect(readFileSync(failedRaw, 'utf8')).toBe('x');
  expect(readFileSync(join(beside, 'processed', 'caf\\xe9.txt'), 'utf8')).toBe('a cafe');
  expect(readdirSync(input)).toEqual(['genpipe.yaml']);
}, 90_000);
