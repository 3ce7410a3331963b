/**
 * Opening a journal to read it only (`genpipe status`, a dry run): nothing is written to the file or its
 * folder, and it works for a user who may read the journal but not write it.
 *
 * - Its `-wal` holds commits (a runner is working on it, or was killed): it is read through SQLite with a
 *   read-only connection, which uses the runner's `-shm` and `-wal` as they are and creates nothing
 *   beside them. When that fails (no `-shm`, and its folder cannot be written) the main file's bytes are
 *   read instead, and `note` says the last commits may be missing.
 * - Otherwise (every commit is in the main file, as a finished run leaves it) the main file's bytes are
 *   read into memory and opened there: a read-only SQLite connection would otherwise create a `-wal` and
 *   a `-shm` beside the journal and leave them there.
 *
 * A journal of an older schema is brought up to date in memory only (the file keeps its version: the
 * next run upgrades it).
 */
import { readFileSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { JOURNAL_TEXTS } from '../texts.ts';
import { JOURNAL_FILE } from './journal-file.ts';
import { migrate } from './schema.ts';
import { PRAGMAS } from './sqlite-plans.ts';

/** A journal opened to be read, and what its reader should be told about it. */
export interface ReadOnlyJournal {
  db: Database.Database;
  /** Said to the user: the journal may miss its last commits. Null when it is read whole. */
  note: string | null;
}

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch {
    return 0;
  }
}

/** An in-memory database holding `bytes` (a journal file), marked as a rollback-journal file. */
function inMemory(bytes: Buffer): Database.Database {
  // Bytes 18 and 19 of a WAL-mode file are 2 ("use the -wal"); an in-memory copy has none.
  if (bytes.length >= 20) {
    bytes[18] = 1;
    bytes[19] = 1;
  }
  return new Database(bytes);
}

/** Reads the live journal through a read-only connection; an older schema is copied into memory first. */
function throughSqlite(path: string): Database.Database {
  const live = new Database(path, { readonly: true, fileMustExist: true });
  try {
    live.pragma(PRAGMAS.busyTimeout(JOURNAL_FILE.busyTimeoutMs));
    if (Number(live.pragma(PRAGMAS.userVersion, { simple: true })) === JOURNAL_FILE.schemaVersion)
      return live;
    const copy = inMemory(live.serialize());
    live.close();
    return copy;
  } catch (err) {
    if (live.open) live.close();
    throw err;
  }
}

/**
 * Opens `path` to be read (see the module comment), its schema up to date (in memory when it was older).
 *
 * @throws the file system's or SQLite's error when it cannot be read (journal.ts words it)
 */
export function openReadOnly(path: string): ReadOnlyJournal {
  let note: string | null = null;
  let db: Database.Database;
  if (walBytes(path) > 0) {
    try {
      db = throughSqlite(path);
    } catch {
      db = inMemory(readFileSync(path));
      note = JOURNAL_TEXTS.readWithoutWal(path);
    }
  } else {
    const bytes = readFileSync(path);
    // A runner began writing while the bytes were read: read its commits too.
    db = walBytes(path) > 0 ? throughSqlite(path) : inMemory(bytes);
  }
  try {
    migrate(db, path);
    return { db, note };
  } catch (err) {
    db.close();
    throw err;
  }
}
