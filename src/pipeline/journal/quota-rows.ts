/**
 * The journal's quota_states table: what the clients of one API key learned of its quota at a service
 * (store/store.ts's QuotaState), keyed by service and key fingerprint — never the key.
 */
import type Database from 'better-sqlite3';
import type { QuotaState, QuotaStateInput } from '../store/store.ts';
import { QUOTA_SQL } from './sqlite-plans.ts';

interface QuotaRowSql {
  job_ceiling: number | null;
  request_limit: number | null;
  window_ms: number | null;
  blocked_until: number | null;
  recent_requests: string;
  updated_at: number;
}

/** The recorded quota states. */
export class QuotaRows {
  private readonly sql;

  constructor(db: Database.Database) {
    this.sql = {
      get: db.prepare<[string, string], QuotaRowSql>(QUOTA_SQL.get),
      save: db.prepare(QUOTA_SQL.save),
    };
  }

  get(service: string, keyFingerprint: string): QuotaState | null {
    const row = this.sql.get.get(service, keyFingerprint);
    if (!row) return null;
    return {
      jobCeiling: row.job_ceiling,
      requestLimit: row.request_limit,
      windowMs: row.window_ms,
      blockedUntil: row.blocked_until,
      recentRequests: JSON.parse(row.recent_requests) as number[],
      updatedAt: row.updated_at,
    };
  }

  save(service: string, keyFingerprint: string, state: QuotaStateInput, now: number): void {
    this.sql.save.run({
      service,
      key_fingerprint: keyFingerprint,
      job_ceiling: state.jobCeiling,
      request_limit: state.requestLimit,
      window_ms: state.windowMs,
      blocked_until: state.blockedUntil,
      recent_requests: JSON.stringify(state.recentRequests),
      updated_at: now,
    });
  }
}
