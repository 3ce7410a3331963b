/**
 * The journal across real processes: what a child commits survives its SIGKILL (killed by itself right
 * after a commit, and by the parent at an arbitrary moment mid-write), a second runner on the same out
 * dir is refused while the first lives and let in once it is dead, and two runners on different out
 * dirs share one journal file.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stepOf } from '../../src/pipeline/item.ts';
import { JournalLockedError, openJournal } from '../../src/pipeline/store/sqlite/index.ts';
import { CHECKOUT, otherUserCheckout, UNPRIVILEGED } from '../helpers/other-user.ts';
import { killToZombie, underNonReapingParent } from '../helpers/processes.ts';

/** Where a child finds the modules it imports, from checkout `root`. */
const modulesIn = (root: string) => ({
  JOURNAL_MODULE: pathToFileURL(join(root, 'src/pipeline/store/sqlite/index.ts')).href,
  ITEM_MODULE: pathToFileURL(join(root, 'src/pipeline/item.ts')).href,
  PATCH_MODULE: pathToFileURL(join(root, 'test/helpers/item-patch.ts')).href,
});

/**
 * Child: opens the journal of OUT (at JOURNAL when set), then runs items f<i> through a lifecycle of
 * durable writes, printing `saved <i>` after item i's last write. With KILL_AT it kills itself with
 * SIGKILL right after printing `saved <KILL_AT>`; with COUNT it stops after COUNT items and exits; with
 * WAIT_GO it prints `ready` once its journal is open and starts writing when a line comes on stdin, so
 * that the parent can start two children writing at the same time.
 */
const WRITER = `
const { openJournal } = await import(process.env.JOURNAL_MODULE);
const { newItem } = await import(process.env.ITEM_MODULE);
const { patchItem } = await import(process.env.PATCH_MODULE);
const j = openJournal({ outDir: process.env.OUT, path: process.env.JOURNAL || undefined, mountInfo: null });
j.startBatch({ inputDir: process.env.OUT });
if (process.env.WAIT_GO) { process.stdout.write('ready\\n'); await new Promise((r) => process.stdin.once('data', r)); }
const killAt = process.env.KILL_AT ? Number(process.env.KILL_AT) : -1;
const count = process.env.COUNT ? Number(process.env.COUNT) : Infinity;
for (let i = 0; i < count; i++) {
  const name = 'f' + i + '.png';
  let it = { ...newItem(name, '/in/' + name, 1, 0), state: 'planned' };
  j.plan(it, { contentHash: 'c' + i, recipeHash: 'r' });
  it = patchItem(it, { state: 'checked' }); await j.save(it);
  it = patchItem(it, { state: 'uploaded', request: {}, upload: { mode: 'inline', fileId: 'file-' + i, sha256: null } }); await j.save(it);
  it = patchItem(it, { requestId: 'req-' + i, attempts: 1 }); await j.recordIntent(it);
  it = patchItem(it, { state: 'submitted', generationId: 'gen-' + i }); await j.recordSubmitted(it);
  process.stdout.write('saved ' + i + '\\n');
  if (i === killAt) process.kill(process.pid, 'SIGKILL');
}
j.close();
`;

/** Child: holds the runner lock of OUT until killed; prints `locked <pid>` once it holds it. */
const HOLDER = `
const { openJournal } = await import(process.env.JOURNAL_MODULE);
const j = openJournal({ outDir: process.env.OUT, mountInfo: null });
// Kept reachable: a journal nothing refers to may be collected, and its lock with it.
globalThis.heldJournal = j;
process.stdout.write('locked ' + process.pid + '\\n');
setInterval(() => {}, 1000);
`;

/** Child: opens the journal of OUT at JOURNAL and prints `opened`, or the error's name and message. */
const OPENER = `
const { openJournal } = await import(process.env.JOURNAL_MODULE);
try {
  openJournal({ outDir: process.env.OUT, path: process.env.JOURNAL, mountInfo: null }).close();
  process.stdout.write('opened\\n');
} catch (err) {
  process.stdout.write(err.name + ': ' + err.message + '\\n');
}
`;

interface Child {
  proc: ChildProcess;
  lines: string[];
  /** Resolves with the first line matching `re`. */
  waitFor(re: RegExp): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

const children: ChildProcess[] = [];

/**
 * Runs `code` in a child node. With `nonReapingParent` the child runs under a parent that never reaps
 * it (see test/helpers/processes.ts): `proc` is that parent, and a killed child stays a zombie.
 */
function runChild(
  code: string,
  env: Record<string, string>,
  opts: { nonReapingParent?: boolean; uid?: number } = {},
): Child {
  const argv = [process.execPath, '--import', 'tsx', '--input-type=module', '-e', code];
  const [command, args] = opts.nonReapingParent ? underNonReapingParent(argv) : [argv[0]!, argv.slice(1)];
  // Another user runs from a copy of the checkout it can reach (the checkout may be private).
  const root = opts.uid === undefined ? CHECKOUT : otherUserCheckout();
  const proc = spawn(command, args, {
    cwd: root,
    ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.uid } : {}),
    env: { ...process.env, ...modulesIn(root), ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(proc);
  const lines: string[] = [];
  let stderr = '';
  let buf = '';
  const waiters: Array<{ re: RegExp; resolve: (l: string) => void }> = [];
  proc.stdout?.on('data', (d: Buffer) => {
    buf += String(d);
    let nl = buf.indexOf('\n');
    while (nl >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      lines.push(line);
      for (const w of waiters.splice(0)) {
        if (w.re.test(line)) w.resolve(line);
        else waiters.push(w);
      }
      nl = buf.indexOf('\n');
    }
  });
  proc.stderr?.on('data', (d: Buffer) => {
    stderr += String(d);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((res) =>
    proc.once('exit', (c, s) => res({ code: c, signal: s, stderr })),
  );
  return {
    proc,
    lines,
    exited,
    waitFor: (re) =>
      new Promise((res, rej) => {
        const hit = lines.find((l) => re.test(l));
        if (hit) return res(hit);
        waiters.push({ re, resolve: res });
        void exited.then((e) =>
          rej(new Error(`child exited (${e.code ?? e.signal}) before ${re}: ${e.stderr}`)),
        );
      }),
  };
}

let dir: string;
let outDir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-journal-proc-'));
  outDir = join(dir, 'out');
});

afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function savedCount(lines: readonly string[]): number {
  return lines.filter((l) => l.startsWith('saved ')).length;
}

describe('durability', () => {
  it('keeps every committed write of a process that SIGKILLs itself', async () => {
    const child = runChild(WRITER, { OUT: outDir, KILL_AT: '24' });
    const exit = await child.exited;
    expect(exit.signal).toBe('SIGKILL');
    expect(savedCount(child.lines)).toBe(25);
    expect(existsSync(join(outDir, '.genpipe', 'journal.db-wal'))).toBe(true);

    const j = openJournal({ outDir, mountInfo: null }); // the dead child's lock is taken over
    try {
      expect(j.testOnlyDatabase().pragma('integrity_check', { simple: true })).toBe('ok');
      const rows = j.rows();
      expect(rows).toHaveLength(25);
      for (let i = 0; i < 25; i++) {
        const row = j.get(`f${i}.png`);
        expect(row?.phase).toBe('submitted');
        expect(stepOf(row!.item).generationId).toBe(`gen-${i}`);
        expect(stepOf(row!.item).requestId).toBe(`req-${i}`);
        expect(stepOf(row!.item).upload?.fileId).toBe(`file-${i}`);
      }
      expect((await j.batches())[0]?.status).toBe('running'); // never finished: interrupted
    } finally {
      await j.close();
    }
  });

  it('is consistent and complete up to the last commit when killed mid-write', async () => {
    const child = runChild(WRITER, { OUT: outDir });
    await child.waitFor(/^saved 30$/);
    child.proc.kill('SIGKILL');
    await child.exited;
    const printed = savedCount(child.lines);
    expect(printed).toBeGreaterThanOrEqual(31);

    const j = openJournal({ outDir, mountInfo: null });
    try {
      expect(j.testOnlyDatabase().pragma('integrity_check', { simple: true })).toBe('ok');
      for (let i = 0; i < printed; i++) {
        expect(stepOf(j.get(`f${i}.png`)!.item).generationId).toBe(`gen-${i}`);
      }
      // The item being written when the kill came is in one of its committed states, whole.
      const last = j.get(`f${printed}.png`);
      if (last) {
        expect(['local', 'uploaded', 'submitting', 'submitted']).toContain(last.phase);
        if (last.phase === 'submitting') expect(stepOf(last.item).requestId).toBe(`req-${printed}`);
      }
      expect(j.rows().length).toBeLessThanOrEqual(printed + 1);
    } finally {
      await j.close();
    }
  });
});

describe('two processes', () => {
  it('refuses a second runner on the same out dir while the first lives, and takes over once it is killed', async () => {
    const holder = runChild(HOLDER, { OUT: outDir });
    const line = await holder.waitFor(/^locked \d+$/);
    const pid = Number(line.split(' ')[1]);

    let err: unknown;
    try {
      openJournal({ outDir, mountInfo: null });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(JournalLockedError);
    expect((err as Error).message).toContain(`another genpipe (pid ${pid}`);
    expect((err as Error).message).toContain(`kill -INT ${pid}`);
    expect((err as JournalLockedError).holder?.pid).toBe(pid);

    // A reader that takes no lock may look.
    const reader = openJournal({ outDir, mountInfo: null, lock: false });
    expect(reader.rows()).toEqual([]);
    await reader.close();

    holder.proc.kill('SIGKILL');
    await holder.exited;
    const j = openJournal({ outDir, mountInfo: null });
    expect(j.testOnlyDatabase().open).toBe(true);
    await j.close();
  });

  it('lets a second runner in once the first is killed, even while it is an unreaped zombie', async () => {
    const holder = runChild(HOLDER, { OUT: outDir }, { nonReapingParent: true });
    const pid = Number((await holder.waitFor(/^locked \d+$/)).split(' ')[1]);
    expect(() => openJournal({ outDir, mountInfo: null })).toThrow(`another genpipe (pid ${pid},`);

    await killToZombie(pid);
    expect(() => process.kill(pid, 0)).not.toThrow(); // the dead runner's pid still answers
    const j = openJournal({ outDir, mountInfo: null });
    try {
      expect(j.testOnlyDatabase().open).toBe(true);
      // A third runner is refused again, naming the new holder: this process.
      const refused = runChild(HOLDER, { OUT: outDir });
      const exit = await refused.exited;
      expect(exit.code).not.toBe(0);
      expect(exit.stderr).toContain(`another genpipe (pid ${process.pid},`);
    } finally {
      await j.close();
    }
  });

  it('refuses a runner lock this user cannot write (another user made it) rather than hold nothing', async () => {
    // The runner is another user than the lock file's owner (as root: nobody; otherwise the file is
    // made read-only, which stops its owner the same way).
    const asRoot = UNPRIVILEGED !== null;
    const lock = join(outDir, '.genpipe', 'runner.lock');
    mkdirSync(dirname(lock), { recursive: true });
    writeFileSync(lock, '');
    chmodSync(lock, asRoot ? 0o644 : 0o444);
    for (const d of [dir, outDir, dirname(lock)]) chmodSync(d, 0o777);
    // SQLite would open it read-only, and a read-only connection's lock is a shared one.
    const opener = runChild(
      OPENER,
      { OUT: outDir, JOURNAL: join(dir, 'j.db') },
      UNPRIVILEGED ? { uid: UNPRIVILEGED.uid } : {},
    );
    const line = await opener.waitFor(/./);
    expect(line).toContain(`JournalFileError: cannot take the runner lock ${lock} (`);
    expect(line).toContain('must be writable');
  });

  it('lets runners on two out dirs write one journal file at the same time', async () => {
    const path = join(dir, 'shared.db');
    const outA = join(dir, 'out-a');
    const outB = join(dir, 'out-b');
    const a = runChild(WRITER, { OUT: outA, JOURNAL: path, COUNT: '150', WAIT_GO: '1' });
    const b = runChild(WRITER, { OUT: outB, JOURNAL: path, COUNT: '150', WAIT_GO: '1' });
    // Both have the journal open before either writes; then both go at once.
    await Promise.all([a.waitFor(/^ready$/), b.waitFor(/^ready$/)]);
    for (const c of [a, b]) c.proc.stdin?.end('go\n');
    const [ea, eb] = await Promise.all([a.exited, b.exited]);
    expect(ea.code, ea.stderr).toBe(0);
    expect(eb.code, eb.stderr).toBe(0);
    for (const out of [outA, outB]) {
      const j = openJournal({ outDir: out, path, mountInfo: null });
      try {
        const rows = j.rows();
        expect(rows).toHaveLength(150);
        expect(rows.every((r) => r.phase === 'submitted')).toBe(true);
      } finally {
        await j.close();
      }
    }
  });
});
