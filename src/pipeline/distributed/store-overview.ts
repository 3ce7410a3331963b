/**
 * A whole store at a glance (`genpipe dashboard --store <url>` without an out dir): the active row of
 * every file of every out dir on it, each with the process that last wrote it (the host and pid of its
 * batch: a worker's session, or a run), and each out dir's batches in brief. Read on the shared
 * tables' connections; nothing is written.
 */

import { type ItemRowSql, rowOfSql } from '../store/item-columns.ts';
import type { JournalRow } from '../store/journal-row.ts';
import type { Queryable } from '../store/postgres/connection.ts';
import { ITEM_COLUMNS } from '../store/statements.ts';

/** An active row, and who last wrote it. */
export interface OverviewRow {
  row: JournalRow;
  /** The host and pid of the batch that last wrote the row (null: none recorded). */
  by: { host: string; pid: number } | null;
}

/** An out dir on the store: its first batch's start, its last batch's end (null: one runs or ran away). */
export interface OverviewOutDir {
  outDir: string;
  inputDir: string;
  startedAt: number;
  finishedAt: number | null;
}

/** Everything of the store the dashboard shows besides its workers. */
export interface StoreOverview {
  outDirs: OverviewOutDir[];
  rows: OverviewRow[];
}

const ROWS_SQL = `SELECT ${ITEM_COLUMNS.split(', ')
  .map((c) => `i.${c}`)
  .join(', ')}, b.host AS by_host, b.pid AS by_pid
  FROM items i LEFT JOIN batches b ON b.id = i.batch_id
  WHERE i.superseded_at IS NULL ORDER BY i.out_dir, i.input`;

// Enqueuing runs and workers' sessions alike: an out dir is the store's once anything ran for it.
const OUT_DIRS_SQL = `SELECT out_dir, min(started_at) AS started_at,
  (array_agg(input_dir ORDER BY id DESC))[1] AS input_dir,
  CASE WHEN bool_or(finished_at IS NULL) THEN NULL ELSE max(finished_at) END AS finished_at
  FROM batches GROUP BY out_dir ORDER BY out_dir`;

/** Reads the store's overview (see the module comment). */
export async function readStoreOverview(q: Queryable): Promise<StoreOverview> {
  const dirs = await q.query<{
    out_dir: string;
    input_dir: string;
    started_at: number;
    finished_at: number | null;
  }>(OUT_DIRS_SQL);
  const rows = await q.query<ItemRowSql & { by_host: string | null; by_pid: number | null }>(ROWS_SQL);
  return {
    outDirs: dirs.rows.map((d) => ({
      outDir: d.out_dir,
      inputDir: d.input_dir,
      startedAt: Number(d.started_at),
      finishedAt: d.finished_at === null ? null : Number(d.finished_at),
    })),
    rows: rows.rows.map((r) => ({
      row: rowOfSql({ ...r, outcome_unknown: Number(r.outcome_unknown) }),
      by: r.by_host === null || r.by_pid === null ? null : { host: r.by_host, pid: r.by_pid },
    })),
  };
}
