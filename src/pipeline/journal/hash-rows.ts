/**
 * The journal's content_hashes table: the content-hash cache, keyed by path and checked against the
 * file's identity (content-hash.ts), so an unchanged 5 GB video is not read again on every run.
 */
import type Database from 'better-sqlite3';
import type { FileIdentity } from '../store/store.ts';
import { sameIdentity } from './content-hash.ts';
import { HASH_SQL } from './sqlite-plans.ts';

interface HashRowSql {
  dev: string;
  ino: string;
  size: number;
  mtime_ns: string;
  ctime_ns: string;
  hash: string;
}

/** The cached content hashes. */
export class HashRows {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      get: db.prepare<[string], HashRowSql>(HASH_SQL.get),
      put: db.prepare(HASH_SQL.put),
    };
  }

  /** The hash recorded for `path` when it was taken at `identity`; else null. */
  get(path: string, identity: FileIdentity): string | null {
    const row = this.sql.get.get(path);
    if (!row) return null;
    const at: FileIdentity = {
      dev: row.dev,
      ino: row.ino,
      size: row.size,
      mtimeNs: row.mtime_ns,
      ctimeNs: row.ctime_ns,
    };
    return sameIdentity(identity, at) ? row.hash : null;
  }

  put(path: string, identity: FileIdentity, hash: string, now: number): void {
    this.sql.put.run({ path, ...identity, hash, now });
  }
}
