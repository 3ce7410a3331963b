/** The journal's batches table: one row per run or watch session. */
import type Database from 'better-sqlite3';
import { recordedOptions } from '../store/recorded-options.ts';
import type { BatchInfo, BatchRow } from '../store/store.ts';
import { BATCH_SQL } from './sqlite-plans.ts';

interface BatchRowSql {
  id: number;
  started_at: number;
  finished_at: number | null;
  status: string;
  input_dir: string;
  out_dir: string;
  service: string | null;
  options: string;
  pid: number;
}

/** The batches of one out dir. */
export class BatchRows {
  private readonly sql;

  constructor(
    db: Database.Database,
    private readonly outDir: string,
  ) {
    this.sql = {
      insert: db.prepare(BATCH_SQL.insert),
      finish: db.prepare(BATCH_SQL.finish),
      list: db.prepare<[string], BatchRowSql>(BATCH_SQL.list),
    };
  }

  /** Records a batch started at `now` by this process (`inputDir` already resolved); its id. */
  insert(info: BatchInfo & { inputDir: string }, now: number): number {
    const result = this.sql.insert.run(
      now,
      info.inputDir,
      this.outDir,
      info.service ?? null,
      JSON.stringify(recordedOptions(info.options ?? {})),
      process.pid,
    );
    return Number(result.lastInsertRowid);
  }

  finish(id: number, status: 'finished' | 'stopped', now: number): void {
    this.sql.finish.run(now, status, id);
  }

  /** Oldest first (a `running` one whose pid is gone was interrupted). */
  list(): BatchRow[] {
    return this.sql.list.all(this.outDir).map((b) => ({
      id: b.id,
      startedAt: b.started_at,
      finishedAt: b.finished_at,
      status: b.status as BatchRow['status'],
      inputDir: b.input_dir,
      outDir: b.out_dir,
      service: b.service,
      options: recordedOptions(JSON.parse(b.options) as Record<string, unknown>),
      pid: b.pid,
    }));
  }
}
