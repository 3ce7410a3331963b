/**
 * An out dir that refuses writes — a full disk (ENOSPC), a read-only one (EROFS) — with the journal
 * elsewhere is the machine's failure, not the service's: said as such, never retried as a cut
 * transfer; the batch stops as a failing journal stops it (exit 3), with its closing summary, and
 * report.json agrees with the result.json files (or the summary says the reports could not be
 * written). The out dir is a small tmpfs mounted for the test: root only (CI runs as root).
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/index.ts';
import { adminRows, heldGenerations, hold, startTestEmulator, unhold } from '../helpers/emulator.ts';
import { spawnGenpipe } from '../pipeline/resume-helpers.ts';
import { usePromptFolders } from './prompt-folder.ts';
import { cliEnv, jsonOut, runCli } from './run-cli.ts';

const asRoot = process.getuid?.() === 0;
const promptFolder = usePromptFolders();
const mounted: string[] = [];
let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startTestEmulator({ tiny_outputs: false }); // real outputs fill the small disks
});

afterEach(() => {
  for (const dir of mounted.splice(0)) execFileSync('umount', ['-l', dir]);
});

afterAll(async () => {
  await emu?.close();
});

/** A tmpfs of `size` mounted at `dir` (made), unmounted after the test. */
function mountTmpfs(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  mounted.push(dir);
}

// biome-ignore lint/suspicious/noExplicitAny: tests read reports loosely
function readJson(path: string): any {
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** The statuses of the result.json files under `out`, counted. */
function resultStatuses(out: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const place of readdirSync(out)) {
    const path = join(out, place, 'result.json');
    if (!existsSync(path)) continue;
    const status = readJson(path).status as string;
    counts[status] = (counts[status] ?? 0) + 1;
  }
  return counts;
}

it.skipIf(!asRoot)(
  'a full out dir stops the batch as a local failure, with its summary; the next run collects the rest',
  async () => {
    const files: Record<string, string> = {};
    for (let i = 1; i <= 20; i++) files[`p${String(i).padStart(2, '0')}.txt`] = `a cat number ${i}`;
    const { input, out } = promptFolder(files);
    mountTmpfs(out, '300k');
    const journal = join(dirname(out), 'journal.db');
    const args = ['run', input, '--out', out, '--journal', journal, '--poll-interval', '1'];
    const r = await runCli(args, cliEnv(emu), 90_000);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toMatch(/stopping early: the out dir could not be written: no space left on \/\S+/);
    expect(r.stdout).not.toContain('service unreachable');
    expect(r.stderr).not.toContain('transfer cut');
    expect(r.stderr).toMatch(/genpipe: 20 files: \d+ succeeded, 0 failed, 0 skipped, \d+ not processed/);
    const succeeded = resultStatuses(out).succeeded ?? 0;
    expect(succeeded).toBeLessThan(20);
    expect(r.stderr).toContain(`${succeeded} succeeded`);
    // The reports agree with the result.json files, or the summary says why there are none.
    if (r.stderr.includes('genpipe: report not written: ')) {
      // The out-of-date reports a running rewrite left are removed (said when there were some).
      expect(r.stderr).toMatch(/report not written: no space left on \/\S+; /);
      expect(existsSync(join(out, 'report.json'))).toBe(false);
    } else {
      expect(r.stderr).toContain('genpipe: report: ');
      const report = readJson(join(out, 'report.json'));
      expect(report.stopped_early.reason).toContain('no space left on');
      expect(report.totals.succeeded).toBe(succeeded);
    }

    // Room again: the next run collects what was generated, and pays for nothing twice.
    const made = (await adminRows(emu)).length;
    execFileSync('mount', ['-o', 'remount,size=20m', out]);
    const again = await runCli(args, cliEnv(emu), 90_000);
    expect(again.code, again.stderr).toBe(0);
    expect(readJson(join(out, 'report.json')).totals.succeeded).toBe(20);
    expect(resultStatuses(out)).toEqual({ succeeded: 20 });
    expect((await adminRows(emu)).length).toBeLessThanOrEqual(made + (20 - succeeded));
  },
  200_000,
);

it.skipIf(!asRoot)(
  'an out dir made read-only mid-run stops the batch, and the summary says the reports could not be written',
  async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a red fox', 'held.txt': 'a held owl' });
    mountTmpfs(out, '20m');
    const journal = join(dirname(out), 'journal.db');
    const held = await hold(emu, { prompt: 'held owl' });
    const child = spawnGenpipe(
      ['run', input, '--out', out, '--journal', journal, '--json', '--poll-interval', '1'],
      cliEnv(emu),
    );
    try {
      await child.until(
        (es) => es.some((e) => e.input === 'a.txt' && e.state === 'reported'),
        'a.txt reported',
        60_000,
      );
      await heldGenerations(emu, 1);
      // A read-only bind mount over it: the run's open scratch file keeps a plain remount busy.
      execFileSync('mount', ['--bind', out, out]);
      mounted.unshift(out);
      execFileSync('mount', ['-o', 'remount,bind,ro', out]);
    } finally {
      await unhold(emu, held);
    }
    const { code } = await child.exited;
    const stderr = child.stderr();
    expect(code, stderr + JSON.stringify(child.events.filter((e) => e.input === 'held.txt'))).toBe(3);
    expect(stderr).toMatch(/the out dir could not be written: \/\S+ is on a read-only file system/);
    expect(stderr).not.toContain('transfer cut');
    expect(stderr).toContain('genpipe: 2 files: 1 succeeded, 0 failed, 0 skipped, 1 not processed');
    expect(stderr).toMatch(/genpipe: report not written: \S+ is on a read-only file system; /);
    const last = child.events.filter((e) => e.input === 'held.txt').at(-1);
    expect(last?.state).toBe('stopped');
  },
  120_000,
);

it.skipIf(!asRoot)(
  'an out dir whose write permission goes mid-run stops the batch, with its summary',
  async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a red fox', 'held.txt': 'a held owl' });
    // genpipe runs as nobody (root writes through any permission): its folders are nobody's.
    const nobody = { uid: 65534, gid: 65534 };
    const dir = dirname(out);
    chmodSync(dir, 0o755);
    const journalDir = join(dir, 'journal');
    for (const d of [out, journalDir]) {
      mkdirSync(d);
      chownSync(d, nobody.uid, nobody.gid);
    }
    const held = await hold(emu, { prompt: 'held owl' });
    const args = [
      'run',
      input,
      '--out',
      out,
      '--journal',
      join(journalDir, 'journal.db'),
      '--poll-interval',
      '1',
    ];
    const running = runCli(args, cliEnv(emu), 90_000, undefined, nobody);
    try {
      await heldGenerations(emu, 1);
      chmodSync(out, 0o555);
    } finally {
      await unhold(emu, held);
    }
    const r = await running;
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toMatch(
      /stopping early: the out dir could not be written: no permission to write \/\S+/,
    );
    expect(r.stderr).not.toContain('transfer cut');
    expect(r.stderr).toMatch(/genpipe: 2 files: \d succeeded, 0 failed, 0 skipped, \d not processed/);
    expect(r.stderr).toMatch(/genpipe: report not written: no permission to write \S+; /);
  },
  120_000,
);

/** `n` prompt files, p001.txt …, each a sentence long. */
function promptFiles(n: number, words: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 1; i <= n; i++) files[`p${String(i).padStart(3, '0')}.txt`] = `${words} ${i}`;
  return files;
}

/** The summary's counts: the files it reports, and those it says were not looked at. */
function summaryCounts(stderr: string): { reported: number; notLooked: number } {
  const reported = /genpipe: (\d+) files?: /.exec(stderr);
  const notLooked = /(\d+) more files? (?:was|were) not looked at/.exec(stderr);
  return { reported: Number(reported?.[1] ?? -1), notLooked: Number(notLooked?.[1] ?? 0) };
}

/**
 * What the summary says of the `left` files not processed when its reports could not be written: `kept`
 * at the service (the journal keeps them), `cut` a create the stop cut before its answer.
 */
function leftWords(left: number, kept: number, cut = 0): string {
  const files = `the ${left} file${left === 1 ? '' : 's'} not processed`;
  if (kept === 0 && cut === 0) return `for ${files}, nothing was sent to the service for them`;
  if (kept === left) return `for ${files}, the journal keeps what was generated; the next run collects it`;
  const them = (n: number) => (n === 1 ? 'it' : 'them');
  const was = (n: number) => (n === 1 ? 'was' : 'were');
  const rest = left - kept - cut;
  const parts = [
    kept > 0
      ? `${kept} ${kept === 1 ? 'is' : 'are'} at the service and the journal keeps ${them(kept)} (the next run collects ${them(kept)})`
      : '',
    cut > 0
      ? `${cut} may have reached the service, the stop cut ${cut === 1 ? 'its create' : 'their creates'} before the answer (the next run calls ${cut === 1 ? 'its' : 'their'} outcome unknown; --resubmit-unknown sends ${them(cut)} again)`
      : '',
    rest > 0 ? `${rest} ${was(rest)} not sent` : '',
  ];
  return `of ${files}, ${parts.filter((p) => p !== '').join('; ')}`;
}

/** Every file left not processed says why (the batch's stop, briefly). */
function expectEveryLeftFileSaysWhy(stdout: string): void {
  const bare = stdout.split('\n').filter((l) => /: not processed\s*$/.test(l));
  expect(bare, bare.join('\n')).toEqual([]);
}

it.skipIf(!asRoot)(
  "a full disk under the journal (in the out dir) stops the batch with exit 3, said once as the journal's",
  async () => {
    const { input, out: beside } = promptFolder(
      promptFiles(80, 'full prompt heron, a grey bird by the lake'),
    );
    const disk = join(dirname(beside), 'full');
    mountTmpfs(disk, '300k');
    const out = join(disk, 'out');
    const made = (await adminRows(emu)).length;
    const args = ['run', input, '--out', out, '--poll-interval', '1'];
    const r = await runCli(args, cliEnv(emu), 90_000);
    const journal = join(out, '.genpipe', 'journal.db');
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).not.toContain('database or disk is full');
    expect(r.stdout + r.stderr).toContain(`no space left on ${journal}`);
    // Said once: on the stopping line and in the summary's reason, no stray line after it.
    const said = r.stderr.split('\n').filter((l) => l.includes(`no space left on ${journal}`));
    expect(said, r.stderr).toHaveLength(1);
    expect(r.stderr).toMatch(/genpipe: \d+ files: 0 succeeded, 0 failed, 0 skipped, \d+ not processed/);
    expect(r.stderr).not.toContain('at least');
    const { reported, notLooked } = summaryCounts(r.stderr);
    expect(reported + notLooked).toBe(80);
    expectEveryLeftFileSaysWhy(r.stdout);
    // No file has a result.json: the summary says where what was generated is, and nothing else.
    expect(resultStatuses(out)).toEqual({});
    expect(r.stderr).not.toContain('result.json holds');
    // The journal is said to keep what was generated only when something was.
    const sent = (await adminRows(emu)).length - made;
    if (r.stderr.includes('report not written')) {
      if (sent === 0) {
        // Or a create whose intent was journaled as the stop came, which may or may not have gone.
        expect(r.stderr).toMatch(
          /nothing was sent to the service; the next run processes the files|may have reached the service/,
        );
      } else {
        // All of them at the service, or some, or a create the stop cut on the wire (the journal could
        // not take its answer): counted apart from those not sent (leftWords).
        expect(r.stderr).toMatch(
          /the journal keeps (what was generated; the next run collects it|them|it)|may have reached the service/,
        );
      }
    }
    // What status calls not yet submitted, the next run does not call resumed. A create whose intent was
    // journaled is of unknown outcome, sent or not: the full journal could not withdraw it.
    const status = jsonOut(await runCli(['status', out, '--json'], cliEnv(emu)));
    const notSent = status.by_kind.not_submitted ?? 0;
    const unknown = status.by_kind.outcome_unknown ?? 0;
    if (sent === 0) expect(notSent + unknown, JSON.stringify(status)).toBe(status.inputs);

    // Room again: the next run does the rest, each file generated once at most; one of unknown outcome
    // is left for --resubmit-unknown, never sent again on its own.
    execFileSync('mount', ['-o', 'remount,size=20m', disk]);
    const again = await runCli(args, cliEnv(emu), 120_000);
    expect(again.code, again.stderr).toBe(unknown === 0 ? 0 : 1);
    if (unknown > 0) expect(again.stderr).toContain(`${unknown} failed with an unknown submission outcome`);
    const resumed = Number(/(\d+) resumed/.exec(again.stderr)?.[1] ?? 0);
    expect(resumed, `${JSON.stringify(status)}\n${again.stdout}\n${again.stderr}`).toBeLessThanOrEqual(
      status.inputs - notSent,
    );
    if (sent === 0) {
      expect(again.stdout).not.toMatch(/: resumed/);
      expect(again.stdout).toContain('continued: the earlier run stopped before this file was finished');
    }
    expect(resultStatuses(out)).toEqual(
      unknown === 0 ? { succeeded: 80 } : { succeeded: 80 - unknown, failed: unknown },
    );
    // Never paid twice: at most one generation a file (one of unknown outcome may have none).
    const total = (await adminRows(emu)).length - made;
    expect(total).toBeLessThanOrEqual(80);
    expect(total).toBeGreaterThanOrEqual(80 - unknown);
  },
  300_000,
);

it.skipIf(!asRoot)(
  'an out dir that fills mid-run leaves its files not processed, never failed, and counts what it did not look at',
  async () => {
    const { input, out } = promptFolder(promptFiles(150, 'full prompt heron, a grey bird by the lake'));
    mountTmpfs(out, '300k');
    const made = (await adminRows(emu)).length;
    const journal = join(dirname(out), 'j2.db');
    const args = ['run', input, '--out', out, '--journal', journal, '--poll-interval', '1'];
    const r = await runCli(args, cliEnv(emu), 120_000);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout + r.stderr).not.toContain('internal error');
    expect(r.stdout).toMatch(/stopping early: the out dir could not be written: no space left on \/\S+/);
    expect(r.stderr).toMatch(/genpipe: \d+ files: \d+ succeeded, 0 failed, 0 skipped, \d+ not processed/);
    expect(r.stderr).not.toContain('at least');
    const { reported, notLooked } = summaryCounts(r.stderr);
    expect(reported + notLooked).toBe(150);
    expectEveryLeftFileSaysWhy(r.stdout);
    const succeeded = resultStatuses(out).succeeded ?? 0;
    expect(r.stderr).toContain(`${succeeded} succeeded`);
    if (r.stderr.includes('report not written')) {
      expect(r.stderr).not.toContain("each file's result.json holds what it got");
      // The files left are counted apart: those with work at the service (an upload, a create sent or
      // about to be) the journal keeps; the others were not sent. Which of them a create reached at the
      // moment of the stop is a race on a loaded machine, so the words are checked against their own
      // count, and that count against the generations the emulator made.
      const left = Number(/(\d+) not processed/.exec(r.stderr)?.[1]);
      const madeHere = (await adminRows(emu)).length - made - succeeded;
      const counted = /of the (\d+) files? not processed, /.exec(r.stderr);
      const kept = Number(/(\d+) (?:is|are) at the service/.exec(r.stderr)?.[1] ?? 0);
      const cut = Number(/(\d+) may have reached the service/.exec(r.stderr)?.[1] ?? 0);
      const atService = counted ? kept : madeHere === 0 ? 0 : left;
      if (counted) expect(Number(counted[1])).toBe(left);
      expect(r.stderr).toContain(leftWords(left, atService, counted ? cut : 0));
      if (madeHere > 0) expect(atService + cut).toBeGreaterThan(0);
    }
  },
  200_000,
);

it.skipIf(!asRoot)(
  "a result.json the full out dir refuses stops the batch as the out dir's failure, never the file's",
  async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a lone heron' });
    const run = (to: string, journal: string) =>
      runCli(
        ['run', input, '--out', to, '--journal', join(dirname(out), journal), '--poll-interval', '1'],
        cliEnv(emu),
        60_000,
      );
    // The output's size, from a run into a roomy out dir.
    const roomy = join(dirname(out), 'roomy');
    mountTmpfs(roomy, '20m');
    const first = await run(roomy, 'j1.db');
    expect(first.code, first.stderr).toBe(0);
    const size = statSync(join(roomy, 'a.txt', 'output-0.png')).size;
    // Room for the output and not a page more: the download fits, its result.json does not.
    mountTmpfs(out, `${Math.ceil(size / 4096) * 4}k`);
    const r = await run(out, 'j2.db');
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toMatch(
      /stopping early: the out dir could not be written: no space left on \/\S+\/a\.txt\/result\.json/,
    );
    expect(r.stdout + r.stderr).not.toContain('internal error');
    expect(r.stderr).toContain('genpipe: 1 file: 0 succeeded, 0 failed, 0 skipped, 1 not processed');
    expect(r.stdout).toMatch(
      /a\.txt: not processed: the batch stopped early \(the out dir could not be written\)/,
    );
  },
  120_000,
);

/** The names under `dir` (its folders' too) ending `.tmp`: scratch files a write left behind. */
function scratchLeft(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((n) => n.endsWith('.tmp'));
}

it.skipIf(!asRoot)(
  'a watch that fills its out dir leaves no scratch file of a report it could not write',
  async () => {
    const { input, out } = promptFolder({});
    writeFileSync(join(input, 'noise.txt'), Buffer.from([0xff, 0xfe, 0x41])); // refused: unknown type
    // Five pages free: the file's result.json and report.json fit, report.html does not.
    mountTmpfs(out, '64k');
    writeFileSync(join(out, 'filler'), Buffer.alloc(11 * 4096 - 100));
    const journal = join(dirname(out), 'journal.db');
    const args = ['watch', input, '--out', out, '--journal', journal, '--json', '--quiet-ms', '200'];
    const child = spawnGenpipe([...args, '--rescan-ms', '300'], cliEnv(emu));
    // A running rewrite put report.json in place, and found no room for report.html.
    await child.until(() => existsSync(join(out, 'report.json')), 'report.json written', 60_000);
    child.proc.kill('SIGINT');
    await child.exited;
    const stderr = child.stderr();
    expect(stderr).toMatch(/genpipe: report not written: no space left on \/\S+/);
    expect(stderr).not.toContain('internal error');
    expect(scratchLeft(out)).toEqual([]);
  },
  120_000,
);

it.skipIf(!asRoot)(
  "a copy on a full out dir is not processed, said as another file's outputs not linked yet, never as a submitted generation or reused",
  async () => {
    const { input, out } = promptFolder({ 'a.txt': 'a copper kettle, copied onto a full disk' });
    mountTmpfs(out, '300k');
    const journal = join(dirname(out), 'journal.db');
    const args = ['run', input, '--out', out, '--journal', journal, '--poll-interval', '1'];
    const first = await runCli(args, cliEnv(emu), 90_000);
    expect(first.code, first.stderr).toBe(0);
    const made = (await adminRows(emu)).length;
    // The disk filled up, then a copy of a.txt dropped in.
    try {
      writeFileSync(join(out, 'filler.bin'), Buffer.alloc(1024 * 1024));
    } catch {
      // ENOSPC: full, as wanted
    }
    writeFileSync(join(input, 'b.txt'), 'a copper kettle, copied onto a full disk');
    const r = await runCli(args, cliEnv(emu), 90_000);
    expect([1, 3], r.stderr).toContain(r.code);
    expect((await adminRows(emu)).length).toBe(made);
    const line = r.stdout
      .split('\n')
      .filter((l) => l.includes('b.txt: '))
      .join('\n');
    expect(line).not.toContain('was submitted');
    expect(r.stderr).not.toMatch(/reused from the same content/);
    if (r.code === 3)
      expect(line).toMatch(
        /b\.txt: not processed: .*; the outputs of a\.txt \(the same content\) were not linked yet/,
      );
    else expect(line).toMatch(/no space left/);
  },
  120_000,
);
