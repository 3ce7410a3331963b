/**
 * The journal's group commit (write-group.ts) on a real SQLite file: writes asked for in one turn are
 * committed together, in order, at the end of the turn when the journal was idle, and a write that
 * throws is rolled back alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WriteGroup } from '../../src/pipeline/store/sqlite/write-group.ts';

let dir: string;
let db: Database.Database;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'genpipe-write-group-'));
  db = new Database(join(dir, 'j.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL CHECK (v >= 0))');
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const put = (k: string, v: number) => () => {
  db.prepare('INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v').run(k, v);
};
const rows = () => db.prepare('SELECT k, v FROM t ORDER BY k').all();

describe('WriteGroup', () => {
  it('rejects only the write that threw; the others of its turn are committed, in order', async () => {
    const group = new WriteGroup(db);
    const results = await Promise.allSettled([
      group.add(put('a', 1)),
      group.add(put('b', -1)), // breaks the CHECK
      group.add(put('a', 2)),
      group.add(put('c', 3)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(rows()).toEqual([
      { k: 'a', v: 2 },
      { k: 'c', v: 3 },
    ]);
  });

  it('commits nothing before the turn ends unless flushed, and flush commits the queue at once', async () => {
    const group = new WriteGroup(db);
    const done = group.add(put('x', 7));
    expect(rows()).toEqual([]);
    group.flush();
    expect(rows()).toEqual([{ k: 'x', v: 7 }]);
    await done;
  });

  it('commits a write asked for while the journal was idle at the end of its turn, with the others of that turn', async () => {
    let commits = 0;
    const group = new WriteGroup(db, undefined, async () => {
      commits++;
    });
    const done = Promise.all([group.add(put('a', 1)), group.add(put('b', 2))]);
    await new Promise((turn) => setImmediate(turn));
    expect(rows()).toEqual([
      { k: 'a', v: 1 },
      { k: 'b', v: 2 },
    ]);
    await done;
    expect(commits).toBe(1);
  });

  it('commitWith runs a transaction after the queued writes, seeing them; its failure undoes only its own', async () => {
    const group = new WriteGroup(db);
    const queued = group.add(put('q', 1));
    const seen = group.commitWith(() => {
      put('own', 2)();
      return rows();
    });
    expect(seen).toEqual(
      [
        { k: 'q', v: 1 },
        { k: 'own', v: 2 },
      ].sort((a, b) => a.k.localeCompare(b.k)),
    );
    await queued;
    const later = group.add(put('r', 3));
    expect(() =>
      group.commitWith(() => {
        put('gone', 4)();
        put('bad', -1)(); // breaks the CHECK
      }),
    ).toThrow(/CHECK/);
    await later;
    expect(rows()).toEqual([
      { k: 'own', v: 2 },
      { k: 'q', v: 1 },
      { k: 'r', v: 3 },
    ]);
  });
});
