/**
 * The journal's job_durations table: what the latest ended jobs of each kind at a service showed of
 * their length (store/store.ts's JobDurationSample), the latest JOB_DURATIONS_KEPT per kind.
 */
import type Database from 'better-sqlite3';
import { JOB_DURATIONS_KEPT, type JobDurationSample } from '../../client/index.ts';
import { DURATION_SQL } from './sqlite-plans.ts';

interface DurationRowSql {
  kind: string;
  running_at_ms: number;
  done_by_ms: number;
}

/** The recorded job durations. */
export class DurationRows {
  private readonly sql;
  private readonly addPruned;

  constructor(db: Database.Database) {
    this.sql = {
      ofService: db.prepare<[string], DurationRowSql>(DURATION_SQL.ofService),
      add: db.prepare(DURATION_SQL.add),
      prune: db.prepare(DURATION_SQL.prune),
    };
    this.addPruned = db.transaction((row: Record<string, string | number>) => {
      this.sql.add.run(row);
      this.sql.prune.run({ service: row.service, kind: row.kind, keep: JOB_DURATIONS_KEPT });
    });
  }

  /** The samples of `service` per kind, oldest first. */
  ofService(service: string): Map<string, JobDurationSample[]> {
    const out = new Map<string, JobDurationSample[]>();
    for (const row of this.sql.ofService.all(service)) {
      const list = out.get(row.kind) ?? [];
      list.push({ runningAtMs: row.running_at_ms, doneByMs: row.done_by_ms });
      out.set(row.kind, list);
    }
    return out;
  }

  /** Adds one sample, dropping the kind's oldest beyond JOB_DURATIONS_KEPT. */
  add(service: string, kind: string, sample: JobDurationSample, now: number): void {
    this.addPruned({
      service,
      kind,
      running_at_ms: Math.round(sample.runningAtMs),
      done_by_ms: Math.round(sample.doneByMs),
      recorded_at: now,
    });
  }
}
