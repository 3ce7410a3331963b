/**
 * The journal in one process: where it lives and how it is set up, what a re-run does with each file
 * (skip, resume, redo, --force, the crash policy both ways), outputs checked on disk, content hashes,
 * shared references, and the refusal of a network filesystem.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Item, newItem } from '../../src/pipeline/item.ts';
import {
  JOURNAL_TEXTS,
  type Journal,
  JournalLockedError,
  journalRunHooks,
  NetworkFilesystemError,
  openJournal,
} from '../../src/pipeline/journal/index.ts';

let dir: string;
let inDir: string;
let outDir: string;
const open: Journal[] = [];

function journal(opts: Partial<Parameters<typeof openJournal>[0]> = {}): Journal {
  const j = openJournal({ outDir, mountInfo: null, ...opts });
  open.push(j);
  return j;
}

function session(opts: Partial<Parameters<typeof openJournal>[0]> = {}): Journal {
  const j = journal(opts);
  j.startBatch({ inputDir: inDir, service: 'http://svc.test', options: { concurrency: 2 } });
  return j;
}

function reopen(j: Journal): Journal {
  j.close();
  return session();
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-journal-'));
  inDir = join(dir, 'in');
  outDir = join(dir, 'out');
  mkdirSync(inDir);
});

afterEach(() => {
  for (const j of open.splice(0)) j.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A planned item for `name` in the input dir (the file is written with `bytes`). */
function planned(name: string, bytes = 'hello'): Item {
  const abs = join(inDir, name);
  writeFileSync(abs, bytes);
  return {
    ...newItem(name, abs, Buffer.byteLength(bytes), 1),
    state: 'planned',
    rule: { index: 0, match: '*' },
    inputAs: 'source',
    request: { type: 'image_edit', prompt: 'watercolor', source: { file_id: '$input' } },
  };
}

/** Runs an item to `reported` through the journal, writing one output file; returns the final item. */
function finish(j: Journal, start: Item, outputBytes = 'PNGDATA'): Item {
  let it: Item = { ...start, state: 'checked' };
  j.save(it);
  it = { ...it, state: 'uploaded', upload: { mode: 'inline', fileId: `file-${it.input}`, sha256: null } };
  j.save(it);
  it = { ...it, requestId: `req-${it.input}`, attempts: 1 };
  j.save(it);
  it = { ...it, state: 'submitted', generationId: `gen-${it.input}` };
  j.save(it);
  it = {
    ...it,
    state: 'completed',
    generation: { state: 'completed', failure_code: null, failure_reason: null },
  };
  j.save(it);
  const out = `${it.input}/output-0.png`;
  mkdirSync(join(outDir, it.input), { recursive: true });
  writeFileSync(join(outDir, out), outputBytes);
  it = { ...it, state: 'downloaded', outputs: [out] };
  j.save(it);
  writeFileSync(join(outDir, it.input, 'result.json'), '{}');
  it = { ...it, state: 'reported' };
  j.save(it);
  return it;
}

describe('opening', () => {
  it('lives in <out>/.genpipe/journal.db in WAL mode with synchronous=FULL', () => {
    const j = journal();
    expect(j.path).toBe(join(outDir, '.genpipe', 'journal.db'));
    expect(existsSync(j.path)).toBe(true);
    expect(j.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(j.db.pragma('synchronous', { simple: true })).toBe(2); // 2 = FULL
    expect(j.db.pragma('user_version', { simple: true })).toBe(1);
    const tables = j.db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all()
      .map((r) => (r as { name: string }).name);
    expect(tables).toEqual(['batches', 'content_hashes', 'items', 'runner_locks', 'shared_references']);
  });

  it('takes another place with path (--journal)', () => {
    const path = join(dir, 'elsewhere', 'j.db');
    const j = journal({ path });
    expect(j.path).toBe(path);
    expect(existsSync(path)).toBe(true);
    expect(existsSync(join(outDir, '.genpipe', 'journal.db'))).toBe(false);
  });

  it('refuses a network filesystem with a message that says why and where else', () => {
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
    expect(local.db.pragma('journal_mode', { simple: true })).toBe('wal');
    local.close();
    rmSync(local.path, { force: true });
    rmSync(`${local.path}-wal`, { force: true });
    rmSync(`${local.path}-shm`, { force: true });
  });

  it('refuses a second runner on the same out dir, and lets it in once the first closed', () => {
    const first = journal();
    expect(() => journal()).toThrow(JournalLockedError);
    expect(() => journal()).toThrow(`already working on the out dir ${outDir}`);
    first.close();
    const second = journal();
    expect(second.db.open).toBe(true);
  });

  it('records batches with their options', () => {
    const j = session();
    j.finishBatch('finished');
    const [b] = j.batches();
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
    let j = session();
    const a = planned('a.png');
    const key = await j.keyOf(a);
    expect(j.plan(a, key).action).toBe('fresh');
    const done = finish(j, a);
    j = reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('done');
    expect(d.item.state).toBe('reported');
    expect(d.item.generationId).toBe(done.generationId);
    expect(j.history('a.png')).toHaveLength(1);
  });

  it('downloads again when an output is missing or cut short, polling the same generation', async () => {
    let j = session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    finish(j, a, '0123456789');
    truncateSync(join(outDir, 'a.png', 'output-0.png'), 4);
    j = reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('resume');
    expect(d.item.state).toBe('submitted');
    expect(d.item.generationId).toBe('gen-a.png');
    expect(d.reason).toContain('a.png/output-0.png has 4 bytes, 10 expected');
    expect(j.get('a.png')?.phase).toBe('submitted');

    // The run downloads them again; then the whole folder goes.
    let it: Item = { ...d.item, state: 'completed' };
    j.save(it);
    writeFileSync(join(outDir, 'a.png', 'output-0.png'), '0123456789');
    it = { ...it, state: 'downloaded', outputs: ['a.png/output-0.png'] };
    j.save(it);
    j.save({ ...it, state: 'reported' });
    expect(j.get('a.png')?.outputs).toEqual([{ path: 'a.png/output-0.png', bytes: 10 }]);
    rmSync(join(outDir, 'a.png'), { recursive: true });
    j = reopen(j);
    const again = await j.admit(planned('a.png'), { references: {} });
    expect(again.action).toBe('resume');
    expect(again.reason).toContain('a.png/output-0.png is missing');
  });

  it('redoes an item whose file changed, in a new row, keeping the old one as history', async () => {
    let j = session();
    const a = planned('a.png', 'version one');
    j.plan(a, await j.keyOf(a));
    finish(j, a);
    j = reopen(j);
    const changed = planned('a.png', 'version two!');
    const d = await j.admit(changed, { references: {} });
    expect(d).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.contentChanged });
    const history = j.history('a.png');
    expect(history).toHaveLength(2);
    expect(history[0]?.supersededAt).not.toBeNull();
    expect(history[0]?.item.generationId).toBe('gen-a.png');
    expect(history[1]?.supersededAt).toBeNull();
    expect(history[1]?.contentHash).toBe(createHash('sha256').update('version two!').digest('hex'));
    expect(j.get('a.png')?.phase).toBe('local');
  });

  it('redoes an item whose recipe changed (a reference’s bytes included)', async () => {
    const style = join(inDir, 'style.png');
    writeFileSync(style, 'style v1');
    const withRef = (name: string): Item => {
      const p = planned(name);
      return { ...p, request: { ...p.request, image_ref: [{ file_id: '$ref:style' }] } };
    };
    const recipe = { references: { style: { absPath: style } } };
    let j = session();
    const a = withRef('a.png');
    expect((await j.admit(a, recipe)).action).toBe('fresh');
    finish(j, a);
    j = reopen(j);
    expect((await j.admit(withRef('a.png'), recipe)).action).toBe('done');
    const prompt = { ...withRef('a.png'), request: { ...withRef('a.png').request, prompt: 'oil paint' } };
    j = reopen(j);
    expect(await j.admit(prompt, recipe)).toMatchObject({
      action: 'fresh',
      reason: JOURNAL_TEXTS.recipeChanged,
    });
    finish(j, prompt);
    j = reopen(j);
    writeFileSync(style, 'style v2');
    expect(await j.admit(prompt, recipe)).toMatchObject({
      action: 'fresh',
      reason: JOURNAL_TEXTS.recipeChanged,
    });
  });

  it('redoes everything with --force', async () => {
    let j = session();
    for (const name of ['a.png', 'b.png']) {
      const it = planned(name);
      j.plan(it, await j.keyOf(it));
      finish(j, it);
    }
    j = reopen(j);
    for (const name of ['a.png', 'b.png']) {
      const d = await j.admit(planned(name), { references: {} }, { force: true });
      expect(d).toMatchObject({ action: 'fresh', reason: JOURNAL_TEXTS.forced });
      expect(d.item.state).toBe('planned');
    }
    expect(j.rows().map((r) => r.phase)).toEqual(['local', 'local']);
  });

  it('resumes a submitted generation instead of submitting it again', async () => {
    let j = session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    const up: Item = { ...a, state: 'uploaded', upload: { mode: 'inline', fileId: 'f1', sha256: null } };
    j.save(up);
    j.save({ ...up, requestId: 'req-1', attempts: 1 });
    j.save({ ...up, requestId: 'req-1', attempts: 1, state: 'submitted', generationId: 'gen-1' });
    j.save({
      ...up,
      requestId: 'req-1',
      attempts: 1,
      state: 'stopped',
      generationId: 'gen-1',
      reason: 'stopped',
    });
    j = reopen(j);
    expect(j.inFlight().map((r) => r.item.generationId)).toEqual(['gen-1']);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('resume');
    expect(d.item).toMatchObject({
      state: 'submitted',
      generationId: 'gen-1',
      requestId: 'req-1',
      attempts: 1,
      reason: null,
    });
  });

  it('redoes local work (skipped, or failed by a local stage) every run', async () => {
    let j = session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    j.save({ ...a, state: 'failed', failedAt: 'check', reason: 'too big' });
    j = reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d).toMatchObject({ action: 'fresh', reason: null });
    expect(j.history('a.png')).toHaveLength(1);
  });
});

describe('finished files', () => {
  it('lists inputs reported or failed at the service, with the size and mtime their file had', async () => {
    const j = session();
    const done = planned('done.png', 'done bytes');
    j.plan(done, await j.keyOf(done));
    finish(j, done);
    const rejected = planned('rejected.png');
    j.plan(rejected, await j.keyOf(rejected));
    j.save({ ...rejected, state: 'failed', failedAt: 'submit', reason: 'rejected by the service' });
    const local = planned('local.png');
    j.plan(local, await j.keyOf(local));
    j.save({ ...local, state: 'failed', failedAt: 'check', reason: 'too big' });
    const inFlight = planned('in-flight.png');
    j.plan(inFlight, await j.keyOf(inFlight));
    j.save({ ...inFlight, state: 'submitted', requestId: 'r1', generationId: 'g1', attempts: 1 });
    expect(j.finishedFiles()).toEqual(
      new Map([
        ['done.png', { size: 10, mtimeMs: 1 }],
        ['rejected.png', { size: 5, mtimeMs: 1 }],
      ]),
    );
  });
});

describe('the crash policy through the journal', () => {
  async function leaveSubmitting(): Promise<Journal> {
    const j = session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    const up: Item = { ...a, state: 'uploaded', upload: { mode: 'inline', fileId: 'f1', sha256: null } };
    j.save(up);
    j.recordSubmitting({ ...up, requestId: 'req-1', attempts: 1 });
    return j;
  }

  it('by default fails the item for good, and records the verdict at once', async () => {
    let j = await leaveSubmitting();
    expect(j.get('a.png')).toMatchObject({ phase: 'submitting', outcomeUnknown: true });
    j = reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('done');
    expect(d.item).toMatchObject({
      state: 'failed',
      failedAt: 'submit',
      reason: JOURNAL_TEXTS.unknownOutcome('req-1'),
    });
    expect(j.get('a.png')?.item.state).toBe('failed');
    j = reopen(j);
    expect((await j.admit(planned('a.png'), { references: {} })).action).toBe('done');
  });

  it('with --resubmit-unknown submits again, even after an earlier run failed it', async () => {
    let j = await leaveSubmitting();
    j = reopen(j);
    await j.admit(planned('a.png'), { references: {} }); // default: failed
    j = reopen(j);
    const d = await j.admit(planned('a.png'), { references: {} }, { resubmitUnknown: true });
    expect(d.action).toBe('resume');
    expect(d.item).toMatchObject({ state: 'uploaded', requestId: null, upload: { fileId: 'f1' } });
    expect(d.item.earlierAttempts?.[0]?.request_id).toBe('req-1');
    expect(j.get('a.png')?.phase).toBe('uploaded');
  });

  it('keeps the request id when a stop interrupts a create (the create may have been sent)', async () => {
    const j = await leaveSubmitting();
    const a = j.get('a.png')!.item;
    j.save({ ...a, state: 'stopped', requestId: null, reason: 'not processed: interrupted' });
    expect(j.get('a.png')).toMatchObject({ phase: 'submitting', liveState: 'uploaded' });
    expect(j.get('a.png')?.item.requestId).toBe('req-1');
  });
});

describe('saving', () => {
  it('ignores an unplanned item with nothing at the service, and refuses one holding service work', () => {
    const j = session();
    const a = planned('a.png');
    expect(() => j.save({ ...a, state: 'discovered' })).not.toThrow();
    expect(j.rows()).toHaveLength(0);
    expect(() => j.save({ ...a, state: 'submitted', generationId: 'g' })).toThrow(
      /before the journal planned it/,
    );
  });

  it('writes nothing when only the journal note changed (a restart over finished files)', async () => {
    let clock = 1_000;
    let j = session({ now: () => clock });
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    finish(j, { ...a, journal: { action: 'fresh', reason: null } });
    const before = j.get('a.png')!;
    j.close();
    j = session({ now: () => clock });
    clock += 5_000;
    const d = await j.admit(planned('a.png'), { references: {} });
    expect(d.action).toBe('done');
    j.save({ ...d.item, journal: { action: 'done', reason: d.reason } });
    expect(j.get('a.png')).toEqual(before);
    // Anything else is written as before.
    j.save({ ...d.item, reason: 'looked at again' });
    expect(j.get('a.png')).toMatchObject({ updatedAt: 6_000, item: { reason: 'looked at again' } });
  });

  it('records output sizes when the item is downloaded', async () => {
    const j = session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    finish(j, a, 'twelve bytes');
    expect(j.get('a.png')?.outputs).toEqual([{ path: 'a.png/output-0.png', bytes: 12 }]);
  });

  it('collects generations in flight whose input has gone', async () => {
    let j = session();
    const a = planned('a.png');
    j.plan(a, await j.keyOf(a));
    const up: Item = { ...a, state: 'uploaded', upload: { mode: 'inline', fileId: 'f1', sha256: null } };
    j.save({ ...up, state: 'submitted', requestId: 'r', generationId: 'gen-gone' });
    const b = planned('b.png');
    j.plan(b, await j.keyOf(b));
    j.save({ ...b, state: 'submitted', upload: up.upload, requestId: 'r2', generationId: 'gen-b' });
    rmSync(a.absPath);
    j = reopen(j);
    await j.admit(planned('b.png'), { references: {} });
    const vanished = j.vanishedInFlight();
    expect(vanished.map((d) => d.item.generationId)).toEqual(['gen-gone']);
    expect(vanished[0]?.item.state).toBe('submitted');
    expect(() => j.save({ ...vanished[0]!.item, state: 'completed' })).not.toThrow();
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
    const cached = j.db.prepare('SELECT hash FROM content_hashes WHERE path = ?').get(path) as {
      hash: string;
    };
    expect(cached.hash).toBe(expected);
    expect(await j.hashFile(path)).toBe(expected);
    writeFileSync(path, 'other');
    expect(await j.hashFile(path)).toBe(createHash('sha256').update('other').digest('hex'));
  });

  it('keeps shared reference uploads per service, for a resumed batch to reuse', () => {
    let j = session();
    j.saveReference('style', 'h1', 'file-style');
    expect(j.reference('style', 'h1')).toBe('file-style');
    expect(j.reference('style', 'h2')).toBeNull();
    j = reopen(j);
    expect(j.reference('style', 'h1')).toBe('file-style');
    j.startBatch({ inputDir: inDir, service: 'http://other.test' });
    expect(j.reference('style', 'h1')).toBeNull();
  });
});

describe('run hooks', () => {
  it('give a runner persist, admit, vanished and the shared-reference memory', async () => {
    const style = join(inDir, 'style.png');
    writeFileSync(style, 'style bytes');
    const recipe = { references: { style: { absPath: style } } };
    let j = session();
    let hooks = journalRunHooks(j, recipe);
    const a = planned('a.png');
    const d = await hooks.admit(a);
    expect(d.action).toBe('fresh');
    hooks.persist({ ...a, state: 'uploaded', upload: { mode: 'inline', fileId: 'f1', sha256: null } });
    expect(await hooks.referenceFileId('style')).toBeNull();
    await hooks.referenceUploaded('style', 'file-style');
    expect(await hooks.referenceFileId('style')).toBe('file-style');
    j = reopen(j);
    hooks = journalRunHooks(j, recipe, { force: true });
    expect(await hooks.referenceFileId('style')).toBe('file-style');
    expect((await hooks.admit(planned('a.png'))).reason).toBe(JOURNAL_TEXTS.forced);
    expect(hooks.vanished()).toEqual([]);
    writeFileSync(style, 'new style bytes');
    expect(await hooks.referenceFileId('style')).toBeNull();
  });
});
