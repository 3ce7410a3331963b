/**
 * The journal in one process: where it lives and how it is set up, what a re-run does with each file
 * (skip, resume, redo, --force, the crash policy both ways), outputs checked on disk, content hashes,
 * shared references, and the refusal of a network filesystem.
 */
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Item, newItem, stepOf, withStep } from '../../src/pipeline/item.ts';
import {
  defaultJournalPath,
  formerServiceIdentities,
  JOURNAL_TEXTS,
  type Journal,
  JournalFileError,
  JournalLockedError,
  journalRunHooks,
  NetworkFilesystemError,
  openJournal,
  serviceIdentity,
} from '../../src/pipeline/store/sqlite/index.ts';
import { statusKind } from '../../src/pipeline/store/status-summary.ts';
import { flatView, patchItem, withFlatItem } from '../helpers/item-patch.ts';

let dir: string;
let inDir: string;
let outDir: string;
const open: Journal[] = [];

function journal(opts: Partial<Parameters<typeof openJournal>[0]> = {}): Journal {
  const j = openJournal({ outDir, mountInfo: null, ...opts });
  open.push(j);
  return j;
}

async function session(opts: Partial<Parameters<typeof openJournal>[0]> = {}): Promise<Journal> {
  const j = journal(opts);
  await j.startBatch({ inputDir: inDir, service: 'http://svc.test', options: { concurrency: 2 } });
  return j;
}

async function reopen(j: Journal): Promise<Journal> {
  await j.close();
  return session();
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-journal-'));
  inDir = join(dir, 'in');
  outDir = join(dir, 'out');
  mkdirSync(inDir);
});

afterEach(async () => {
  for (const j of open.splice(0)) await j.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A planned item for `name` in the input dir (the file is written with `bytes`: by default its own, so no two files share content). */
function planned(name: string, bytes = `hello from ${name}`): Item {
  const abs = join(inDir, name);
  writeFileSync(abs, bytes);
  return patchItem(newItem(name, abs, Buffer.byteLength(bytes), 1), {
    state: 'planned',
    rule: { index: 0, match: '*' },
    inputAs: 'source',
    request: { type: 'image_edit', prompt: 'watercolor', source: { file_id: '$input' } },
  });
}

/** Runs an item to `reported` through the journal, writing one output file; returns the final item. */
async function finish(j: Journal, start: Item, outputBytes = 'PNGDATA'): Promise<Item> {
  let it: Item = { ...start, state: 'checked' };
  await j.save(it);
  it = patchItem(it, {
    state: 'uploaded',
    upload: { mode: 'inline', fileId: `file-${it.input}`, sha256: null },
  });
  await j.save(it);
  it = patchItem(it, { requestId: `req-${it.input}`, attempts: 1 });
  await j.save(it);
  it = patchItem(it, { state: 'submitted', generationId: `gen-${it.input}` });
  await j.save(it);
  it = patchItem(it, {
    state: 'completed',
    generation: { state: 'completed', failure_code: null, failure_reason: null },
  });
  await j.save(it);
  const place = it.place ?? it.input;
  const out = `${place}/output-0.png`;
  mkdirSync(join(outDir, place), { recursive: true });
  writeFileSync(join(outDir, out), outputBytes);
  it = patchItem(it, { state: 'downloaded', outputs: [out] });
  await j.save(it);
  writeFileSync(join(outDir, place, 'result.json'), '{}');
  it = { ...it, state: 'reported' };
  await j.save(it);
  return it;
}

describe('opening', () => {
  it('lives in <out>/.genpipe/journal.db in WAL mode, its commits synced by the journal itself', async () => {
    const j = journal();
    expect(j.path).toBe(join(outDir, '.genpipe', 'journal.db'));
    expect(existsSync(j.path)).toBe(true);
    expect(j.testOnlyDatabase().pragma('journal_mode', { simple: true })).toBe('wal');
    // NORMAL (1): a commit does not fsync on the event loop; the journal syncs the WAL itself (wal-sync.ts).
    expect(j.testOnlyDatabase().pragma('synchronous', { simple: true })).toBe(1);
    expect(j.testOnlyDatabase().pragma('user_version', { simple: true })).toBe(4);
    // SQLite's own 2 MB page cache, not better-sqlite3's 16 MB, which a batch's memory grew into.
    expect(j.testOnlyDatabase().pragma('cache_size', { simple: true })).toBe(-2000);
    const tables = j
      .testOnlyDatabase()
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((r) => (r as { name: string }).name);
    expect(tables).toEqual([
      'batches',
      'content_hashes',
      'items',
      'job_durations',
      'quota_states',
      'runner_locks',
      'shared_references',
    ]);
  });

  it('takes another place with path (--journal)', async () => {
    const path = join(dir, 'elsewhere', 'j.db');
    const j = journal({ path });
    expect(j.path).toBe(path);
    expect(existsSync(path)).toBe(true);
    expect(existsSync(join(outDir, '.genpipe', 'journal.db'))).toBe(false);
  });

  it('refuses a network filesystem with a message that says why and where else', async () => {
    const mountInfo = [
      '27 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
      `40 27 0:50 / ${dir} rw,relatime - nfs4 fileserver:/export rw,vers=4.2`,
    ].join('\n');
    let err: unknown;
    try {
      journal({ mountInfo });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(NetworkFilesystemError);
    const message = (err as Error).message;
    expect(message).toContain('network filesystem (nfs4');
    expect(message).toContain('WAL');
    expect(message).toContain('--journal PATH');
    expect(existsSync(join(outDir, '.genpipe'))).toBe(false);
    // The same out dir with the journal on a local disk is fine.
    const local = journal({
      mountInfo,
      path: join(tmpdir(), `genpipe-local-${process.pid}-${Date.now()}.db`),
    });
    expect(local.testOnlyDatabase().pragma('journal_mode', { simple: true })).toBe('wal');
    await local.close();
    rmSync(local.path, { force: true });
    rmSync(`${local.path}-wal`, { force: true });
    rmSync(`${local.path}-shm`, { force: true });
  });

  it('refuses a second runner on the same out dir, and lets it in once the first closed', async () => {
    const first = journal();
    expect(() => journal()).toThrow(JournalLockedError);
    expect(() => journal()).toThrow(`already working on the out dir ${outDir}`);
    await first.close();
    const second = journal();
    expect(second.testOnlyDatabase().open).toBe(true);
  });

  it('holds the out dir through <out>/.genpipe/runner.lock, which stays empty and blocks nothing once closed', async () => {
    const first = journal();
    const lock = join(outDir, '.genpipe', 'runner.lock');
    expect(readdirSync(join(outDir, '.genpipe')).sort()).toEqual([
      'journal.db',
      'journal.db-shm',
      'journal.db-wal',
      'runner.lock',
    ]);
    expect(statSync(lock).size).toBe(0);
    // A reader takes no lock, and leaves the holder's alone.
    const reader = journal({ lock: false });
    await reader.close();
    expect(() => journal()).toThrow(JournalLockedError);
    // A holder in another container (another host name) is named with its host.
    first.testOnlyDatabase().prepare("UPDATE runner_locks SET host = 'other-box'").run();
    expect(() => journal()).toThrow(`another genpipe (pid ${process.pid} on host other-box, running since `);
    await first.close();
    expect(existsSync(lock)).toBe(true); // left behind, and it holds nothing
    await journal().close();
    expect(statSync(lock).size).toBe(0);
  });

  it('holds the out dir whichever journal file each runner uses (--journal)', async () => {
    const first = journal({ path: join(dir, 'a.db') });
    let err: unknown;
    try {
      journal({ path: join(dir, 'b.db') });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(JournalLockedError);
    expect((err as JournalLockedError).holder).toBeNull();
    expect((err as Error).message).toBe(JOURNAL_TEXTS.lockedElsewhere(outDir, join(dir, 'b.db')));
    expect(() => journal()).toThrow(JournalLockedError); // the out dir's own journal
    // The same journal file names the holder.
    expect(() => journal({ path: join(dir, 'a.db') })).toThrow(`another genpipe (pid ${process.pid},`);
    await first.close();
    journal({ path: join(dir, 'b.db') }).close();
  });

  it('says so when the runner lock is not a lock file or cannot be made', async () => {
    const lock = join(outDir, '.genpipe', 'runner.lock');
    mkdirSync(join(outDir, '.genpipe'), { recursive: true });
    writeFileSync(lock, 'not a database, but long enough to hold a SQLite header and then some more bytes');
    let err: unknown;
    try {
      journal();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(JournalFileError);
    expect((err as Error).message).toBe(JOURNAL_TEXTS.notALockFile(lock, 'file is not a database'));
    expect((err as Error).message).toContain('remove it');

    // <out>/.genpipe is a file: the lock cannot be made (a read-only out dir fails the same way).
    const out2 = join(dir, 'out2');
    mkdirSync(out2);
    writeFileSync(join(out2, '.genpipe'), '');
    expect(() => journal({ outDir: out2, path: join(dir, 'j.db') })).toThrow(
      `cannot take the runner lock ${join(out2, '.genpipe', 'runner.lock')} (`,
    );
  });

  it('resolves a write only once the WAL was synced, one sync for the writes asked for together', async () => {
    const j = await session();
    const before = j.testOnlyWalSyncs() ?? 0;
    const writes = Array.from({ length: 50 }, (_, i) =>
      j.saveHash(
        join(dir, `f${i}`),
        { dev: '1', ino: String(i), size: i, mtimeNs: '1', ctimeNs: '1' },
        'a'.repeat(64),
      ),
    );
    let resolved = 0;
    for (const w of writes) void w.then(() => resolved++);
    await writes[0];
    // Each of the 50 waited for a sync started after its commit; the group shared one (two at most).
    const syncs = (j.testOnlyWalSyncs() ?? 0) - before;
    expect(syncs).toBeGreaterThanOrEqual(1);
    await Promise.all(writes);
    expect(resolved).toBe(50);
    expect((j.testOnlyWalSyncs() ?? 0) - before).toBeLessThanOrEqual(2);
    // The bench's baseline does not sync.
    const unsynced = join(dir, 'unsynced');
    mkdirSync(unsynced);
    expect(journal({ outDir: unsynced, synchronous: 'NORMAL' }).testOnlyWalSyncs()).toBeNull();
  });

  it('records batches with their options', async () => {
    const j = await session();
    await j.finishBatch('finished');
    const [b] = await j.batches();
    expect(b).toMatchObject({
      status: 'finished',
      service: 'http://svc.test',
      options: { concurrency: 2 },
      pid: process.pid,
    });
    expect(b?.finishedAt).not.toBeNull();
  });
});

describe('re-running', () => {
  it('skips a finished item whose outputs are complete', async () => {
    let j = await session();
    const a = planned('a.png');
    const key = await j.keyOf(a);
    expect(j.plan(a, key).action).toBe('fresh');
    const done = await finish(j, a);
    j = await reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('done');
    expect(d.item.state).toBe('reported');
    expect(stepOf(d.item).generationId).toBe(stepOf(done).generationId);
    expect(j.history('a.png')).toHaveLength(1);
  });

  it('downloads again when an output is missing or cut short, polling the same generation', async () => {
    let j = await session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    await finish(j, a, '0123456789');
    truncateSync(join(outDir, 'a.png', 'output-0.png'), 4);
    j = await reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('resume');
    expect(d.item.state).toBe('submitted');
    expect(stepOf(d.item).generationId).toBe('gen-a.png');
    expect(d.reason).toContain('a.png/output-0.png has 4 bytes, 10 expected');
    expect(j.get('a.png')?.phase).toBe('submitted');

    // The run downloads them again; then the whole folder goes.
    let it: Item = { ...d.item, state: 'completed' };
    await j.save(it);
    writeFileSync(join(outDir, 'a.png', 'output-0.png'), '0123456789');
    it = patchItem(it, { state: 'downloaded', outputs: ['a.png/output-0.png'] });
    await j.save(it);
    await j.save({ ...it, state: 'reported' });
    expect(j.get('a.png')?.outputs).toEqual([{ path: 'a.png/output-0.png', bytes: 10 }]);
    rmSync(join(outDir, 'a.png'), { recursive: true });
    j = await reopen(j);
    const again = await j.admit(planned('a.png'), { references: {} });
    expect(again.action).toBe('resume');
    expect(again.reason).toContain('a.png/output-0.png is missing');
  });

  it('redoes an item whose file changed, in a new row, keeping the old one as history', async () => {
    let j = await session();
    const a = planned('a.png', 'version one');
    j.plan(a, await j.keyOf(a));
    await finish(j, a);
    j = await reopen(j);
    const changed = planned('a.png', 'version two!');
    const d = await j.admit(changed, { references: {} });
    expect(d).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.contentChanged });
    const history = j.history('a.png');
    expect(history).toHaveLength(2);
    expect(history[0]?.supersededAt).not.toBeNull();
    expect(stepOf(history[0]!.item).generationId).toBe('gen-a.png');
    expect(history[1]?.supersededAt).toBeNull();
    expect(history[1]?.contentHash).toBe(createHash('sha256').update('version two!').digest('hex'));
    expect(j.get('a.png')?.phase).toBe('local');
  });

  it('redoes an item whose recipe changed (a reference’s bytes included)', async () => {
    const style = join(inDir, 'style.png');
    writeFileSync(style, 'style v1');
    const withRef = (name: string): Item => {
      const p = planned(name);
      return withStep(p, { request: { ...stepOf(p).request, image_ref: [{ file_id: '$ref:style' }] } });
    };
    const recipe = { references: { style: { absPath: style } } };
    let j = await session();
    const a = withRef('a.png');
    expect((await j.admit(a, recipe)).action).toBe('fresh');
    await finish(j, a);
    j = await reopen(j);
    expect((await j.admit(withRef('a.png'), recipe)).action).toBe('done');
    const prompt = withStep(withRef('a.png'), {
      request: { ...stepOf(withRef('a.png')).request, prompt: 'oil paint' },
    });
    j = await reopen(j);
    expect(await j.admit(prompt, recipe)).toMatchObject({
      action: 'fresh',
      reason: JOURNAL_TEXTS.recipeChanged,
    });
    await finish(j, prompt);
    j = await reopen(j);
    writeFileSync(style, 'style v2');
    expect(await j.admit(prompt, recipe)).toMatchObject({
      action: 'fresh',
      reason: JOURNAL_TEXTS.recipeChanged,
    });
  });

  it('redoes everything with --force', async () => {
    let j = await session();
    for (const name of ['a.png', 'b.png']) {
      const it = planned(name);
      j.plan(it, await j.keyOf(it));
      await finish(j, it);
    }
    j = await reopen(j);
    for (const name of ['a.png', 'b.png']) {
      const d = await j.admit(planned(name), { references: {} }, { force: true });
      expect(d).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.forced });
      expect(d.item.state).toBe('planned');
    }
    expect(j.rows().map((r) => r.phase)).toEqual(['local', 'local']);
  });

  it('resumes a submitted generation instead of submitting it again', async () => {
    let j = await session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    const up: Item = patchItem(a, {
      state: 'uploaded',
      upload: { mode: 'inline', fileId: 'f1', sha256: null },
    });
    await j.save(up);
    await j.save(patchItem(up, { requestId: 'req-1', attempts: 1 }));
    await j.save(
      patchItem(up, { requestId: 'req-1', attempts: 1, state: 'submitted', generationId: 'gen-1' }),
    );
    await j.save(
      patchItem(up, {
        requestId: 'req-1',
        attempts: 1,
        state: 'stopped',
        generationId: 'gen-1',
        reason: 'stopped',
      }),
    );
    j = await reopen(j);
    expect(j.inFlight().map((r) => stepOf(r.item).generationId)).toEqual(['gen-1']);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('resume');
    expect(flatView(d.item)).toMatchObject({
      state: 'submitted',
      generationId: 'gen-1',
      requestId: 'req-1',
      attempts: 1,
      reason: null,
    });
  });

  it('redoes local work (skipped, or failed by a local stage) every run', async () => {
    let j = await session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    await j.save({ ...a, state: 'failed', failedAt: 'check', reason: 'too big' });
    j = await reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d).toMatchObject({ action: 'fresh', reason: null });
    expect(j.history('a.png')).toHaveLength(1);
  });
});

describe('files a stopped run did not finish', () => {
  it('continues a file planned by a run that stopped or died before anything was sent for it', async () => {
    let j = await session();
    const a = planned('a.png');
    const first = j.plan(a, await j.keyOf(a));
    await j.save({ ...first.item, state: 'checked' }); // then killed
    const b = planned('b.png');
    await j.save({ ...j.plan(b, await j.keyOf(b)).item, state: 'stopped', reason: 'not processed' });
    j = await reopen(j);
    for (const name of ['a.png', 'b.png']) {
      const d = await j.admit(planned(name), { references: {} });
      expect(d, name).toMatchObject({
        action: 'resume',
        reason: JOURNAL_TEXTS.continued,
        item: { state: 'planned', place: name },
      });
      expect(j.history(name), name).toHaveLength(1);
    }
  });

  it('notes a file a stopped run never planned, and continues it on the next run', async () => {
    let j = await session();
    const seen = { ...newItem('c.png', join(inDir, 'c.png'), 5, 1), state: 'stopped' as const };
    writeFileSync(join(inDir, 'c.png'), 'hello');
    await j.save({ ...seen, place: 'c.png', reason: 'not processed: the batch stopped early (x)' });
    expect(j.rows().map((r) => [r.input, r.place, r.phase, r.contentHash])).toEqual([
      ['c.png', 'c.png', 'local', ''],
    ]);
    // A file the journal already has a row of is left as it is.
    await finish(j, j.plan(planned('d.png'), await j.keyOf(planned('d.png'))).item);
    j = await reopen(j);
    await j.save({
      ...newItem('d.png', join(inDir, 'd.png'), 5, 1),
      state: 'stopped',
      reason: 'not processed',
    });
    expect(j.get('d.png')?.phase).toBe('reported');

    const c = planned('c.png');
    const d = await j.admit(c, { references: {} });
    expect(d).toMatchObject({ action: 'resume', reason: JOURNAL_TEXTS.continued, item: { place: 'c.png' } });
    const key = await j.keyOf(c);
    expect(j.history('c.png').map((r) => [r.contentHash, r.recipeHash])).toEqual([
      [key.contentHash, key.recipeHash],
    ]);
    j = await reopen(j);
    expect(await j.admit(planned('d.png'), { references: {} })).toMatchObject({ action: 'done' });
  });
});

describe('finished files', () => {
  it('lists inputs reported or failed at the service, with the size and mtime their file had', async () => {
    const j = await session();
    const done = planned('done.png', 'done bytes');
    j.plan(done, await j.keyOf(done));
    await finish(j, done);
    const rejected = planned('rejected.png', 'hello');
    j.plan(rejected, await j.keyOf(rejected));
    await j.save({ ...rejected, state: 'failed', failedAt: 'submit', reason: 'rejected by the service' });
    const local = planned('local.png');
    j.plan(local, await j.keyOf(local));
    await j.save({ ...local, state: 'failed', failedAt: 'check', reason: 'too big' });
    const inFlight = planned('in-flight.png');
    j.plan(inFlight, await j.keyOf(inFlight));
    await j.save(
      patchItem(inFlight, { state: 'submitted', requestId: 'r1', generationId: 'g1', attempts: 1 }),
    );
    expect(await j.finishedFiles()).toEqual(
      new Map([
        ['done.png', { size: 10, mtimeMs: 1 }],
        ['rejected.png', { size: 5, mtimeMs: 1 }],
      ]),
    );
  });
});

describe('the crash policy through the journal', () => {
  async function leaveSubmitting(): Promise<Journal> {
    const j = await session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    const up: Item = patchItem(a, {
      state: 'uploaded',
      upload: { mode: 'inline', fileId: 'f1', sha256: null },
    });
    await j.save(up);
    await j.recordIntent(patchItem(up, { requestId: 'req-1', attempts: 1 }));
    return j;
  }

  it('by default fails the item for good, and records the verdict at once', async () => {
    let j = await leaveSubmitting();
    expect(j.get('a.png')).toMatchObject({ phase: 'submitting', outcomeUnknown: true });
    j = await reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('fail');
    expect(d.item).toMatchObject({
      state: 'failed',
      failedAt: 'submit',
      reason: JOURNAL_TEXTS.unknownOutcome('req-1'),
    });
    expect(j.get('a.png')?.item.state).toBe('failed');
    j = await reopen(j);
    expect((await j.admit(planned('a.png'), { references: {} })).action).toBe('fail');
  });

  it('with --resubmit-unknown submits again, even after an earlier run failed it', async () => {
    let j = await leaveSubmitting();
    j = await reopen(j);
    await j.admit(planned('a.png'), { references: {} }); // default: failed
    j = await reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} }, { resubmitUnknown: true });
    expect(d.action).toBe('resume');
    expect(flatView(d.item)).toMatchObject({ state: 'uploaded', requestId: null, upload: { fileId: 'f1' } });
    expect(stepOf(d.item).earlierAttempts?.[0]?.request_id).toBe('req-1');
    expect(j.get('a.png')?.phase).toBe('uploaded');
  });

  it('keeps the request id when a stop interrupts a create (the create may have been sent)', async () => {
    const j = await leaveSubmitting();
    const a = j.get('a.png')!.item;
    await j.save(patchItem(a, { state: 'stopped', requestId: null, reason: 'not processed: interrupted' }));
    expect(j.get('a.png')).toMatchObject({ phase: 'submitting', liveState: 'uploaded' });
    expect(stepOf(j.get('a.png')!.item).requestId).toBe('req-1');
  });

  it('keeps a stopped item whose create was answered at the service, its `submitted` write lost (a full disk)', async () => {
    let j = await leaveSubmitting();
    const a = j.get('a.png')!.item;
    // The answer's write never got through; the stop's write did, with the generation id in the item.
    const stopped = patchItem(a, { state: 'stopped', generationId: 'gen-1', reason: 'not processed: full' });
    await j.save(stopped);
    expect(j.get('a.png')).toMatchObject({
      phase: 'submitted',
      liveState: 'submitted',
      outcomeUnknown: false,
    });
    expect(statusKind(j.get('a.png')!)).toBe('at the service');
    j = await reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('resume');
    expect(d.nothingSent).toBeUndefined();
    expect(flatView(d.item)).toMatchObject({ state: 'submitted', generationId: 'gen-1', requestId: 'req-1' });
  });
});

describe('places: an out folder per distinct input', () => {
  const admit = (j: Journal, name: string, bytes: string) =>
    j.admit(planned(name, bytes), { references: {} });
  const output = (place: string) => readFileSync(join(outDir, place, 'output-0.png'), 'utf8');

  it('gives a changed file a folder of its own when the earlier one left outputs, and keeps them', async () => {
    let j = await session();
    const first = await admit(j, 'a.png', 'version one');
    expect(first.item.place).toBe('a.png');
    await finish(j, first.item, 'first output');
    j = await reopen(j);
    const second = await admit(j, 'a.png', 'version two');
    expect(second).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.contentChanged });
    expect(second.item.place).toBe('a-1.png');
    await finish(j, second.item, 'second output');
    expect(output('a.png')).toBe('first output');
    expect(output('a-1.png')).toBe('second output');
    expect(j.history('a.png').map((r) => [r.place, r.supersededAt === null])).toEqual([
      ['a.png', false],
      ['a-1.png', true],
    ]);
    // Unchanged on the next run: done, in its own folder.
    j = await reopen(j);
    expect(withFlatItem(await admit(j, 'a.png', 'version two'))).toMatchObject({
      action: 'done',
      item: { place: 'a-1.png', outputs: ['a-1.png/output-0.png'] },
    });
    // --force redoes it in a third folder; the first two stay.
    j = await reopen(j);
    expect(
      (await j.admit(planned('a.png', 'version two'), { references: {} }, { force: true })).item.place,
    ).toBe('a-2.png');
  });

  it('takes the first version back, in its folder, when its bytes come back: nothing is redone', async () => {
    let j = await session();
    const one = await admit(j, 'a.png', 'version one');
    await finish(j, one.item, 'first output');
    j = await reopen(j);
    await finish(j, (await admit(j, 'a.png', 'version two')).item, 'second output');
    j = await reopen(j);
    const back = await admit(j, 'a.png', 'version one');
    expect(withFlatItem(back)).toMatchObject({
      action: 'done',
      reason: JOURNAL_TEXTS.done,
      item: { place: 'a.png', generationId: 'gen-a.png', outputs: ['a.png/output-0.png'] },
    });
    expect(j.get('a.png')?.id).toBe(j.history('a.png')[0]?.id);
    expect(j.history('a.png').filter((r) => r.supersededAt === null)).toHaveLength(1);
    // And the second version again is the second row again.
    j = await reopen(j);
    expect(withFlatItem(await admit(j, 'a.png', 'version two'))).toMatchObject({
      action: 'done',
      item: { place: 'a-1.png' },
    });
    expect(j.history('a.png')).toHaveLength(2);
  });

  it('reuses the folder of an earlier version that the service made nothing for', async () => {
    let j = await session();
    const a = await admit(j, 'a.png', 'too big');
    await j.save({ ...a.item, state: 'failed', failedAt: 'check', reason: 'too big' });
    mkdirSync(join(outDir, 'a.png'), { recursive: true });
    writeFileSync(join(outDir, 'a.png', 'result.json'), '{}');
    j = await reopen(j);
    const fixed = await admit(j, 'a.png', 'fixed');
    expect(fixed).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.contentChanged });
    expect(fixed.item.place).toBe('a.png');
  });

  it('keeps the folder of a version whose generation failed at the service; one refused at upload gives it up', async () => {
    let j = await session();
    // A generation was made and failed (moderated): the service did work for it.
    const moderated = await admit(j, 'a.png', 'a cow');
    let it: Item = patchItem(moderated.item, {
      state: 'uploaded',
      upload: { mode: 'inline', fileId: 'file-1', sha256: null },
    });
    await j.save(it);
    it = patchItem(it, { requestId: 'req-1', attempts: 1 });
    await j.save(it);
    it = patchItem(it, { state: 'submitted', generationId: 'gen-1' });
    await j.save(it);
    await j.save(
      patchItem(it, {
        state: 'failed',
        failedAt: 'wait',
        reason: 'moderated',
        generation: { state: 'failed', failure_code: 'content_moderated', failure_reason: 'moderated' },
        failure: { kind: 'content_moderated', retryable: false },
      }),
    );
    mkdirSync(join(outDir, 'a.png'), { recursive: true });
    writeFileSync(join(outDir, 'a.png', 'result.json'), '{}');
    j = await reopen(j);
    const horse = await admit(j, 'a.png', 'a horse');
    expect(horse).toMatchObject({ action: 'fresh', item: { place: 'a-1.png' } });
    await finish(j, horse.item);
    // The moderated version again is that version: failed, its own, not sent again, in its folder.
    j = await reopen(j);
    expect(withFlatItem(await admit(j, 'a.png', 'a cow'))).toMatchObject({
      action: 'done',
      reason: JOURNAL_TEXTS.failedNotRetried('content_moderated'),
      item: { place: 'a.png', generationId: 'gen-1', state: 'failed' },
    });

    // An upload the service refused made nothing: the next version takes its folder.
    const b = await admit(j, 'b.png', 'refused');
    await j.save({
      ...b.item,
      state: 'failed',
      failedAt: 'upload',
      reason: 'refused',
      failure: { kind: 'file refused by the service', retryable: false },
    });
    mkdirSync(join(outDir, 'b.png'), { recursive: true });
    writeFileSync(join(outDir, 'b.png', 'result.json'), '{}');
    j = await reopen(j);
    expect((await admit(j, 'b.png', 'accepted')).item.place).toBe('b.png');
  });

  it("never takes another input's folder, nor a folder holding files it does not know", async () => {
    let j = await session();
    await finish(j, (await admit(j, 'a.png', 'one')).item);
    j = await reopen(j);
    await finish(j, (await admit(j, 'a.png', 'two')).item); // a-1.png
    j = await reopen(j);
    // A file really named a-1.png, seen for the first time.
    expect((await admit(j, 'a-1.png', 'three')).item.place).toBe('a-1-1.png');
    // A folder left by a journal kept elsewhere.
    mkdirSync(join(outDir, 'b.png'), { recursive: true });
    writeFileSync(join(outDir, 'b.png', 'output-0.png'), 'not ours');
    expect((await admit(j, 'b.png', 'four')).item.place).toBe('b-1.png');
    // A file the journal does not plan (skipped, failed before planning) writes beside, not into, them.
    expect(await j.placeFor('a.png')).toBe('a-2.png');
    expect(await j.placeFor('c.png')).toBe('c.png');
  });

  it('does not let a new look at a file overwrite the row an earlier look finished', async () => {
    const j = await session();
    const a = await admit(j, 'a.png', 'bytes');
    const done = await finish(j, a.item);
    // watch hands the same file over again: discovered, sniffed, then planned.
    await j.save({ ...planned('a.png', 'bytes'), state: 'discovered' });
    await j.save({ ...planned('a.png', 'bytes'), state: 'sniffed' });
    expect(withFlatItem(j.get('a.png')!)).toMatchObject({
      phase: 'reported',
      item: { generationId: stepOf(done).generationId },
    });
    expect(await admit(j, 'a.png', 'bytes')).toMatchObject({ action: 'done', reason: JOURNAL_TEXTS.done });
  });

  /** Turns the journal file back into what genpipe wrote before places existed (schema 1). */
  const downgrade = () => {
    const old = new Database(defaultJournalPath(outDir));
    old.exec(
      "DROP TABLE job_durations; DROP TABLE quota_states; DROP INDEX items_place; ALTER TABLE items DROP COLUMN place; UPDATE items SET item = json_remove(item, '$.place')",
    );
    old.pragma('user_version = 1');
    old.close();
  };

  it('does not take back an old version whose folder a later one overwrote before places existed', async () => {
    let j = await session();
    await finish(j, (await admit(j, 'a.png', 'version one')).item);
    j = await reopen(j);
    await finish(j, (await admit(j, 'a.png', 'version two')).item);
    await j.close();
    downgrade(); // both rows now name a.png, as they did then
    j = await session();
    const back = await admit(j, 'a.png', 'version one');
    expect(back).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.contentChanged });
    expect(back.item.place).not.toBe('a.png');
  });

  it('opens a journal of schema 1, giving its rows their input path as place', async () => {
    let j = await session();
    const a = await admit(j, 'a.png', 'version one');
    await finish(j, a.item, 'old output');
    await j.close();
    downgrade();

    j = await session();
    expect(j.testOnlyDatabase().pragma('user_version', { simple: true })).toBe(4);
    expect(j.get('a.png')).toMatchObject({ place: 'a.png', phase: 'reported' });
    expect(await admit(j, 'a.png', 'version one')).toMatchObject({
      action: 'done',
      item: { place: 'a.png' },
    });
    j = await reopen(j);
    expect((await admit(j, 'a.png', 'version two')).item.place).toBe('a-1.png');
    expect(output('a.png')).toBe('old output');
  });
});

describe('saving', () => {
  it('ignores an unplanned item with nothing at the service, and refuses one holding service work', async () => {
    const j = await session();
    const a = planned('a.png');
    await expect(j.save({ ...a, state: 'discovered' })).resolves.toBeUndefined();
    expect(j.rows()).toHaveLength(0);
    await expect(j.save(patchItem(a, { state: 'submitted', generationId: 'g' }))).rejects.toThrow(
      /before the journal planned it/,
    );
  });

  it('writes nothing when only the journal note changed (a restart over finished files)', async () => {
    let clock = 1_000;
    let j = await session({ now: () => clock });
    const a = planned('a.png');
    const first = j.plan(a, await j.keyOf(a));
    await finish(j, { ...first.item, journal: { action: 'fresh', reason: null } });
    const before = j.get('a.png')!;
    await j.close();
    j = await session({ now: () => clock });
    clock += 5_000;
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('done');
    await j.save({ ...d.item, journal: { action: 'done', reason: d.reason } });
    expect(j.get('a.png')).toEqual(before);
    // Anything else is written as before.
    await j.save({ ...d.item, reason: 'looked at again' });
    expect(j.get('a.png')).toMatchObject({ updatedAt: 6_000, item: { reason: 'looked at again' } });
  });

  it('keeps no binding for a finished item (memory flat with the batch), one whose work is still to collect kept', async () => {
    const j = await session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    const done = await finish(j, a);
    const b = planned('b.png');
    j.plan(b, await j.keyOf(b));
    const failedDownload = patchItem(b, {
      state: 'failed',
      failedAt: 'download',
      reason: 'disk full',
      upload: { mode: 'inline', fileId: 'f-b', sha256: null },
      requestId: 'r-b',
      generationId: 'gen-b',
    });
    await j.save(failedDownload);
    expect(j.testOnlyBoundInputs()).toEqual(['b.png']);
    // Saved again all the same, a finished item still lands in its row; other work is still refused.
    await j.save({ ...done, reason: 'looked at again' });
    expect(j.get('a.png')?.item.reason).toBe('looked at again');
    await expect(j.save(patchItem(done, { generationId: 'gen-other' }))).rejects.toThrow(
      /before the journal planned it/,
    );
    expect(await j.vanishedInFlight()).toEqual([]);
  });

  it('records output sizes when the item is downloaded', async () => {
    const j = await session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    await finish(j, a, 'twelve bytes');
    expect(j.get('a.png')?.outputs).toEqual([{ path: 'a.png/output-0.png', bytes: 12 }]);
  });

  it('collects generations in flight whose input has gone', async () => {
    let j = await session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    const up: Item = patchItem(a, {
      state: 'uploaded',
      upload: { mode: 'inline', fileId: 'f1', sha256: null },
    });
    await j.save(patchItem(up, { state: 'submitted', requestId: 'r', generationId: 'gen-gone' }));
    const b = planned('b.png');
    j.plan(b, await j.keyOf(b));
    await j.save(
      patchItem(b, { state: 'submitted', upload: stepOf(up).upload, requestId: 'r2', generationId: 'gen-b' }),
    );
    rmSync(a.absPath);
    j = await reopen(j);
    await j.admit(planned('b.png'), { references: {} });
    const vanished = await j.vanishedInFlight();
    expect(vanished.map((d) => stepOf(d.item).generationId)).toEqual(['gen-gone']);
    expect(vanished[0]?.item.state).toBe('submitted');
    await expect(j.save({ ...vanished[0]!.item, state: 'completed' })).resolves.toBeUndefined();
  });
});

describe('content hashes and references', () => {
  it('streams the sha256 of a file and rehashes it once it changes', async () => {
    const j = journal();
    const path = join(inDir, 'big.bin');
    const bytes = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    writeFileSync(path, bytes);
    const expected = createHash('sha256').update(bytes).digest('hex');
    expect(await j.hashFile(path)).toBe(expected);
    // The cache's write is not waited for by the hash; a read of the journal commits it first.
    j.rows();
    const cached = j
      .testOnlyDatabase()
      .prepare('SELECT hash FROM content_hashes WHERE path = ?')
      .get(path) as {
      hash: string;
    };
    expect(cached.hash).toBe(expected);
    expect(await j.hashFile(path)).toBe(expected);
    writeFileSync(path, 'other');
    expect(await j.hashFile(path)).toBe(createHash('sha256').update('other').digest('hex'));
  });

  it('keeps shared reference uploads per service, for a resumed batch to reuse', async () => {
    let j = await session();
    await j.saveReference('style', 'h1', 'file-style');
    expect(await j.reference('style', 'h1')).toBe('file-style');
    expect(await j.reference('style', 'h2')).toBeNull();
    j = await reopen(j);
    expect(await j.reference('style', 'h1')).toBe('file-style');
    await j.startBatch({ inputDir: inDir, service: 'http://other.test' });
    expect(await j.reference('style', 'h1')).toBeNull();
  });
});

describe('run hooks', () => {
  it('give a runner persist, admit, vanished and the shared-reference memory', async () => {
    const style = join(inDir, 'style.png');
    writeFileSync(style, 'style bytes');
    const recipe = { references: { style: { absPath: style } } };
    let j = await session();
    let hooks = journalRunHooks(j, recipe);
    const a = planned('a.png');
    const d = await hooks.admit(a);
    expect(d.action).toBe('fresh');
    await hooks.persist(
      patchItem(a, { state: 'uploaded', upload: { mode: 'inline', fileId: 'f1', sha256: null } }),
    );
    expect(await hooks.referenceFileId('style')).toBeNull();
    await hooks.referenceUploaded('style', 'file-style');
    expect(await hooks.referenceFileId('style')).toBe('file-style');
    j = await reopen(j);
    hooks = journalRunHooks(j, recipe, { force: true });
    expect(await hooks.referenceFileId('style')).toBe('file-style');
    expect((await hooks.admit(planned('a.png'))).reason).toBe(JOURNAL_TEXTS.forced);
    expect(await hooks.vanished()).toEqual([]);
    writeFileSync(style, 'new style bytes');
    expect(await hooks.referenceFileId('style')).toBeNull();
  });
});

describe('saves asked for together', () => {
  /** Frames in the WAL (each commit appends the pages it changed and a commit frame). */
  function walFrames(j: Journal): number {
    const [row] = j.testOnlyDatabase().pragma('wal_checkpoint(PASSIVE)') as { log: number }[];
    return row?.log ?? -1;
  }

  it('commits the saves of one turn in one transaction, each durable once its promise resolves', async () => {
    const j = await session();
    const items: Item[] = [];
    for (let i = 0; i < 40; i++) {
      const it = planned(`g${i}.png`);
      j.plan(it, await j.keyOf(it));
      items.push(it);
    }
    j.testOnlyDatabase().pragma('wal_checkpoint(TRUNCATE)');
    await Promise.all(
      items.map((it) =>
        j.save(
          patchItem(it, {
            state: 'uploaded',
            upload: { mode: 'inline', fileId: `f-${it.input}`, sha256: null },
          }),
        ),
      ),
    );
    // One commit of 40 rows touches a few pages; 40 commits would append ~2 frames each.
    expect(walFrames(j)).toBeGreaterThan(0);
    expect(walFrames(j)).toBeLessThan(20);
    for (const it of items) expect(j.get(it.input)?.phase).toBe('uploaded');
  });
});

describe('reading a journal only (readOnly: status, a dry run)', () => {
  it("reads a runner's latest commits from its -wal while it runs, and adds no file beside it", async () => {
    const runner = await session();
    const folder = join(outDir, '.genpipe');
    const names = readdirSync(folder).sort();
    expect(names).toContain('journal.db-wal');
    const reader = journal({ readOnly: true });
    expect(reader.readNote).toBeNull();
    expect((await reader.batches()).map((b) => b.status)).toEqual(['running']);
    await reader.close();
    expect(readdirSync(folder).sort()).toEqual(names);
    await runner.finishBatch('finished');
    const again = journal({ readOnly: true });
    expect((await again.batches()).map((b) => b.status)).toEqual(['finished']);
  });

  it('reads a closed journal from its file alone, making no -wal or -shm', async () => {
    const j = await session();
    await j.finishBatch('finished');
    await j.close();
    const folder = join(outDir, '.genpipe');
    const names = readdirSync(folder).sort();
    expect(names).not.toContain('journal.db-wal');
    const reader = journal({ readOnly: true });
    expect((await reader.batches()).map((b) => b.status)).toEqual(['finished']);
    await reader.close();
    expect(readdirSync(folder).sort()).toEqual(names);
  });
});

describe('a base URL with a password', () => {
  it('keys the journal without it; a row keyed with it before (the URL as given) is the same work', async () => {
    const given = 'http://alice:s3cretPASS@svc.test:4010';
    // A journal written when the identity was the URL as given, password included.
    let j = journal();
    await j.startBatch({ inputDir: inDir, service: given });
    let hooks = journalRunHooks(j, { references: {} });
    const a = planned('a.png');
    expect((await hooks.admit(a)).action).toBe('fresh');
    await hooks.persist(patchItem(a, { state: 'submitted', generationId: 'gen-1', requestId: 'req-1' }));
    await j.saveReference('style', 'h1', 'file-style');
    await j.close();
    // (an earlier genpipe wrote the URL as given: put it back as it was)
    const db = new Database(join(outDir, '.genpipe', 'journal.db'));
    db.prepare('UPDATE batches SET service = ?').run(given);
    db.prepare('UPDATE shared_references SET service = ?').run(given);
    db.close();
    // Now: keyed by the identity without credentials, the former one known in memory only.
    j = journal();
    await j.startBatch({
      inputDir: inDir,
      service: serviceIdentity(given),
      formerServices: formerServiceIdentities(given),
    });
    hooks = journalRunHooks(j, { references: {} });
    const d = await hooks.admit(planned('a.png'));
    expect(d.action).toBe('resume');
    expect(d.reason).not.toBe(JOURNAL_TEXTS.recipeChanged);
    await j.close();
    // Re-keyed: a later run without the password at all finds it too, and no batch of it stores one.
    j = journal();
    await j.startBatch({ inputDir: inDir, service: serviceIdentity('http://svc.test:4010/') });
    hooks = journalRunHooks(j, { references: {} });
    expect((await hooks.admit(planned('a.png'))).action).toBe('resume');
    const services = (await j.batches()).map((b) => b.service);
    expect(services).toEqual(['http://svc.test:4010', 'http://svc.test:4010', 'http://svc.test:4010']);
    expect(await j.reference('style', 'h1')).toBe('file-style');
    await j.close();
    expect(readFileSync(join(outDir, '.genpipe', 'journal.db')).includes('s3cretPASS')).toBe(false);
  });
  it("a batch's options an earlier genpipe recorded with a URL's password lose it at the next run", async () => {
    let j = journal();
    await j.startBatch({ inputDir: inDir, service: 'http://svc.test:4010', options: { command: 'run' } });
    await j.close();
    // (an earlier genpipe recorded --base-url as given: put it back as it was)
    const db = new Database(join(outDir, '.genpipe', 'journal.db'));
    db.prepare('UPDATE batches SET options = ?').run(
      JSON.stringify({ command: 'run', baseUrl: 'http://alice:optPASS-77@svc.test:4010', concurrency: 4 }),
    );
    db.close();
    j = journal();
    await j.startBatch({
      inputDir: inDir,
      service: 'http://svc.test:4010',
      options: {
        command: 'run',
        apiKey: 'svc-api-never-stored-1',
        baseUrl: 'http://alice:optPASS-77@svc.test:4010',
      },
    });
    const options = (await j.batches()).map((b) => b.options);
    expect(options).toEqual([
      { command: 'run', baseUrl: 'http://alice@svc.test:4010', concurrency: 4 },
      { command: 'run', baseUrl: 'http://alice@svc.test:4010' },
    ]);
    await j.close();
    const file = readFileSync(join(outDir, '.genpipe', 'journal.db'));
    expect(file.includes('optPASS-77')).toBe(false);
    expect(file.includes('svc-api-never-stored-1')).toBe(false);
  });
});
