/**
 * The journal's shared_references table: uploads of a recipe's shared references (service, name,
 * content hash → file_id), so a resumed batch reuses them while they are recent enough.
 */
import type Database from 'better-sqlite3';
import { REFERENCE_SQL } from './sqlite-plans.ts';

/** The recorded uploads of shared references. */
export class ReferenceRows {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      get: db.prepare<[string, string, string], { file_id: string; uploaded_at: number }>(REFERENCE_SQL.get),
      save: db.prepare(REFERENCE_SQL.save),
      forget: db.prepare(REFERENCE_SQL.forget),
    };
  }

  /** The file_id of the recorded upload, when made at or after `notBefore` (ms since the epoch). */
  get(service: string, name: string, contentHash: string, notBefore: number): string | null {
    const row = this.sql.get.get(service, name, contentHash);
    if (!row || row.uploaded_at < notBefore) return null;
    return row.file_id;
  }

  save(
    service: string,
    name: string,
    contentHash: string,
    fileId: string,
    now: number,
    batchId: number | null,
  ): void {
    this.sql.save.run(service, name, contentHash, fileId, now, batchId);
  }

  forget(service: string, name: string, contentHash: string): void {
    this.sql.forget.run(service, name, contentHash);
  }
}
